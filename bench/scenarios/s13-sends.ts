import { Client as PgClient } from 'pg';
import { Pool } from 'undici';
import { ServiceApi, uniquePhone } from '../lib/api';
import { RunContext, Scenario13Result, SendsPass, startScenarioService, windows } from '../lib/context';
import { CpuReport, Monitor } from '../lib/monitor';
import { drive, rawToolCall } from '../lib/tool-load';
import { fmtNum, log, median } from '../lib/util';
import { s3LimitsEnv } from './s3-tools';

const CONCURRENCY = 16;
const RECIPIENTS = 200;
const ROUNDS = 3;
/** How long a round waits for the worker to hand off what its sends queued before it gives up. */
const DRAIN_LIMIT_MS = 120_000;

/**
 * A round's monitor whose window ends when the worker has handed off every message of the side's
 * org (none QUEUED), not when the sends stop: a build whose worker falls behind the api leaves it
 * more of the two cores during the sends, which flattered its sends per second. The window's
 * sends per second are then the sends made in it over the time until they were handed off.
 */
class DrainingMonitor extends Monitor {
  drainMs = 0;

  constructor(
    database: string,
    procs: Record<string, number>,
    private readonly db: PgClient,
    private readonly orgId: string,
    private readonly since: Date,
  ) {
    super(database, procs);
  }

  override async stop(): Promise<CpuReport> {
    const started = performance.now();
    while (performance.now() - started < DRAIN_LIMIT_MS) {
      // The round's messages only (messages_org_recent_idx): every earlier round was drained before it ended.
      const { rows } = await this.db.query<{ queued: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM messages WHERE org_id = $1 AND created_at >= $2 AND direction = 'OUTBOUND' AND status = 'QUEUED') AS queued`,
        [this.orgId, this.since],
      );
      if (!rows[0].queued) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    this.drainMs = performance.now() - started;
    return super.stop();
  }
}

/** A policy that binds every send but refuses none: each rule is checked, none is met. */
export function permissivePolicy(now: Date): Record<string, unknown> {
  const hour = (now.getUTCHours() + 6) % 24;
  const hh = (h: number) => `${String(h).padStart(2, '0')}:00`;
  return {
    maxPerHour: 1_000_000,
    maxPerDay: 1_000_000,
    maxPerRecipientPerDay: 1_000_000,
    quietStart: hh(hour),
    quietEnd: hh((hour + 1) % 24),
    timeZone: 'UTC',
    denyList: ['+1999', 'blocked.example'],
    allowList: [],
    repliesOnly: false,
  };
}

/**
 * Scenario 13, sends under a person's rules (issue 45): send_sms to a number (raw HTTP tools/call,
 * c=16, RECIPIENTS numbers in turn) by an org without a send policy and by an org whose policy
 * binds every send (limits per credential and recipient, quiet hours outside now, a deny list:
 * each rule checked, none refusing), alternating ROUNDS times. Every send also writes its audit
 * row. Sends per second of each side (the sends of a round's window over the time until the worker
 * has handed them all off: DrainingMonitor), and the policy side's cost.
 */
export async function scenario13(ctx: RunContext): Promise<Scenario13Result> {
  const w = windows(ctx.options);
  log(`\nScenario 13: sends per second, without and with a send policy (c=${CONCURRENCY}, ${ROUNDS} rounds of ${w.toolLevel / 1000}s each)`);
  const svc = await startScenarioService(ctx, 's13', s3LimitsEnv([CONCURRENCY]));
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const pool = new Pool(svc.baseUrl, { connections: CONCURRENCY, keepAliveTimeout: 30_000 });
  const db = new PgClient({ connectionString: ctx.databaseUrl });
  await db.connect();
  try {
    const side = async (label: string, policy: boolean) => {
      const org = await api.createOrg(`bench s13 ${label}`);
      const line = await api.createPhoneLine(org.id);
      const user = await api.createUser(org.id, `s13-${label}`);
      await api.addMember(line.id, user.id);
      const apiKey = await api.createApiKey(user.id);
      let policyApplied = false;
      if (policy) policyApplied = await api.setSendPolicy(org.id, permissivePolicy(new Date()));
      const recipients = Array.from({ length: RECIPIENTS }, () => uniquePhone('partner'));
      let id = 0;
      const call = async (i: number) => rawToolCall(pool, apiKey, ++id, 'send_sms', { to: recipients[i % RECIPIENTS], body: `bench send ${i}` });
      return { label, orgId: org.id, call, policyApplied };
    };
    const sides = [await side('none', false), await side('policy', true)];
    if (!sides[1].policyApplied) log('  S13: this build has no send policies (the admin route answered 404): both sides run without one');
    const procs = { api: svc.api.pid, worker: svc.worker.pid };
    const passes: SendsPass[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
        const monitor = new DrainingMonitor(ctx.database, procs, db, s.orgId, new Date(Date.now() - 1000));
        const r = await drive(`S13 ${s.label.padEnd(7)} round ${round + 1}`, CONCURRENCY, Array(CONCURRENCY).fill(s.call), w.toolWarmup, w.toolLevel, monitor);
        // drive's rate is the window's sends over the window; the round's is over the window and the drain after it.
        const sends = (r.reqPerSec * w.toolLevel) / 1000;
        const sendsPerSec = sends / r.cpu.seconds;
        const cpuMsPerSend = Object.fromEntries(['api', 'worker', 'postgres'].map((name) => [name, (r.cpu.cores[name] * r.cpu.seconds * 1000) / sends]));
        const statementsPerSend = r.cpu.statements / sends;
        passes.push({
          side: s.label as SendsPass['side'],
          round: round + 1,
          sendsPerSec,
          intakePerSec: r.reqPerSec,
          drainMs: monitor.drainMs,
          latency: r.latency,
          errors: r.errors,
          lastError: r.lastError,
          cpuMsPerSend,
          statementsPerSend,
        });
        const cpuText = Object.entries(cpuMsPerSend)
          .map(([name, ms]) => `${name} ${ms.toFixed(2)}`)
          .join(' · ');
        log(
          `  S13: ${s.label} round ${round + 1}: ${fmtNum(sendsPerSec)} sends/s handed off (${fmtNum(r.reqPerSec)}/s taken, then ${(monitor.drainMs / 1000).toFixed(1)} s to hand off the rest), p99 ${r.latency.p99.toFixed(1)} ms, errors ${r.errors}; CPU ms per send ${cpuText}; ${statementsPerSend.toFixed(1)} statements per send`,
        );
      }
    }
    const of = (side: string) => median(passes.filter((p) => p.side === side).map((p) => p.sendsPerSec));
    const none = of('none');
    const withPolicy = of('policy');
    log(`  S13: median sends/s without a policy ${fmtNum(none)}, with ${fmtNum(withPolicy)} (${((withPolicy / none) * 100).toFixed(1)} %)`);
    for (const side of ['none', 'policy']) {
      const of = (pick: (p: SendsPass) => number) => median(passes.filter((p) => p.side === side).map(pick)).toFixed(2);
      log(
        `  S13: ${side}: median CPU ms per send api ${of((p) => p.cpuMsPerSend.api)} · worker ${of((p) => p.cpuMsPerSend.worker)} · postgres ${of((p) => p.cpuMsPerSend.postgres)}; statements per send ${of((p) => p.statementsPerSend)}`,
      );
    }
    return { concurrency: CONCURRENCY, recipients: RECIPIENTS, policyApplied: sides[1].policyApplied, passes, medianNone: none, medianPolicy: withPolicy };
  } finally {
    await pool.close().catch(() => undefined);
    await db.end().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
