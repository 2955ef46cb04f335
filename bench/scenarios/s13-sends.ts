import { Pool } from 'undici';
import { ServiceApi, uniquePhone } from '../lib/api';
import { RunContext, Scenario13Result, SendsPass, startScenarioService, windows } from '../lib/context';
import { Monitor } from '../lib/monitor';
import { drive, rawToolCall } from '../lib/tool-load';
import { fmtNum, log, median } from '../lib/util';
import { s3LimitsEnv } from './s3-tools';

const CONCURRENCY = 16;
const RECIPIENTS = 200;
const ROUNDS = 3;

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
 * row. Sends per second of each side, and the policy side's cost.
 */
export async function scenario13(ctx: RunContext): Promise<Scenario13Result> {
  const w = windows(ctx.options);
  log(`\nScenario 13: sends per second, without and with a send policy (c=${CONCURRENCY}, ${ROUNDS} rounds of ${w.toolLevel / 1000}s each)`);
  const svc = await startScenarioService(ctx, 's13', s3LimitsEnv([CONCURRENCY]));
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const pool = new Pool(svc.baseUrl, { connections: CONCURRENCY, keepAliveTimeout: 30_000 });
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
      return { label, call, policyApplied };
    };
    const sides = [await side('none', false), await side('policy', true)];
    if (!sides[1].policyApplied) log('  S13: this build has no send policies (the admin route answered 404): both sides run without one');
    const procs = { api: svc.api.pid, worker: svc.worker.pid };
    const passes: SendsPass[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
        const r = await drive(
          `S13 ${s.label.padEnd(7)} round ${round + 1}`,
          CONCURRENCY,
          Array(CONCURRENCY).fill(s.call),
          w.toolWarmup,
          w.toolLevel,
          new Monitor(ctx.database, procs),
        );
        const sends = r.reqPerSec * r.cpu.seconds;
        const cpuMsPerSend = Object.fromEntries(['api', 'worker', 'postgres'].map((name) => [name, (r.cpu.cores[name] * r.cpu.seconds * 1000) / sends]));
        const statementsPerSend = r.cpu.statements / sends;
        passes.push({
          side: s.label as SendsPass['side'],
          round: round + 1,
          sendsPerSec: r.reqPerSec,
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
          `  S13: ${s.label} round ${round + 1}: ${fmtNum(r.reqPerSec)} sends/s, p99 ${r.latency.p99.toFixed(1)} ms, errors ${r.errors}; CPU ms per send ${cpuText}; ${statementsPerSend.toFixed(1)} statements per send`,
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
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
