import { Client } from 'pg';
import { SeededEndpoint, ServiceApi } from '../lib/api';
import { queuePrefix, RunContext, Scenario4Result, startScenarioService, windows } from '../lib/context';
import { processMemory, redisMemory } from '../lib/infra';
import { Ingestor, makeTargets } from '../lib/load';
import { fmtMb, fmtNum, log, progress, resetProgress, sleep } from '../lib/util';

/** The service disables an endpoint at 100 consecutive failures (docs/webhooks.md, "Auto-disable"): stay below it per endpoint. */
const MAX_EVENTS_PER_LINE = 90;

/**
 * Scenario 4, backlog memory: N deliveries waiting in retry (every endpoint answers 500, retry
 * schedule 1h), then the worker's and the API's RSS (VmRSS) and peak (VmHWM), and Redis memory.
 * Each user has their own line and 10 endpoints; each line gets at most 90 events, so no
 * endpoint reaches the auto-disable threshold and every delivery stays waiting.
 */
export async function scenario4(ctx: RunContext): Promise<Scenario4Result> {
  const { options } = ctx;
  const w = windows(options);
  const perUser = 10;
  const events = Math.ceil(options.backlog / perUser);
  const users = Math.ceil(events / MAX_EVENTS_PER_LINE);
  const target = events * perUser;
  log(`\nScenario 4: backlog memory (${fmtNum(target)} deliveries = ${fmtNum(events)} events × ${perUser} endpoints; ${users} users with a line each)`);
  const svc = await startScenarioService(ctx, 's4', { DELIVERY_RETRY_SCHEDULE: '1h' });
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const ingest = new Ingestor(svc.baseUrl, ctx.secrets.ingestToken, options.ingestConcurrency, options.smsBytes);
  const db = new Client({ connectionString: ctx.databaseUrl });
  await db.connect();
  try {
    await ctx.receiver.config({ failOkEvery: 0 });
    await ctx.receiver.reset();
    resetProgress();
    const org = await api.createOrg('bench s4');
    const lines: string[] = [];
    const endpoints: SeededEndpoint[] = [];
    let nextUser = 0;
    const seedOne = async () => {
      while (nextUser < users) {
        const u = nextUser++;
        const user = await api.createUser(org.id, `s4-u${u}`);
        const line = await api.createPhoneLine(org.id);
        await api.addMember(line.id, user.id);
        const key = await api.createApiKey(user.id);
        for (let e = 0; e < perUser; e += 1) {
          endpoints.push(await api.registerWebhook(key, ctx.receiver.url(u * perUser + e, `/fail/s4-u${u}-e${e}`), options.mode));
        }
        lines.push(line.address);
        progress(`S4 seeding: ${lines.length}/${users} users, ${endpoints.length} endpoints`);
      }
    };
    await Promise.all(Array.from({ length: 8 }, seedOne));
    await ctx.receiver.setSecrets(endpoints.map((e) => [e.path, [e.secret]]));
    const endpointIds = endpoints.map((e) => e.id);

    const redisBefore = await redisMemory(queuePrefix(ctx, 's4'), 'webhook-delivery');
    const workerBefore = processMemory(svc.worker.pid);
    const apiBefore = processMemory(svc.api.pid);

    // Exactly `events` inbound SMS, spread evenly over the lines.
    const targets = makeTargets(lines, 5);
    const started = Date.now();
    let issued = 0;
    let failures = 0;
    const sender = async () => {
      while (issued < events) {
        const i = issued++;
        if (!(await ingest.sendOne(targets[i % targets.length]))) {
          issued -= 1;
          failures += 1;
          if (failures > 50) throw new Error(`ingest keeps failing: ${ingest.lastError}`);
        }
      }
    };
    let done = false;
    const ticker = (async () => {
      let last = { t: Date.now(), n: 0 };
      while (!done) {
        await sleep(1000);
        const p = await ctx.receiver.progress();
        const now = Date.now();
        progress(
          `S4 building backlog ${((now - started) / 1000).toFixed(0)}s  events ${fmtNum(ingest.accepted)}/${fmtNum(events)}` +
            `  first attempts ${fmtNum(p.unique)}/${fmtNum(target)} (${fmtNum(((p.unique - last.n) * 1000) / (now - last.t))}/s)` +
            `  worker RSS ${fmtMb(processMemory(svc.worker.pid).rss)}`,
        );
        last = { t: now, n: p.unique };
        svc.assertAlive();
      }
    })();
    let complete = false;
    try {
      await Promise.all(Array.from({ length: options.ingestConcurrency }, sender));
      const deadline = Date.now() + w.backlogWait;
      while (Date.now() < deadline) {
        const { rows } = await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ANY($1::uuid[]) AND status = 'retrying'`,
          [endpointIds],
        );
        if (Number(rows[0].n) >= target) {
          complete = true;
          break;
        }
        await sleep(2000);
      }
    } finally {
      done = true;
      await ticker.catch(() => undefined);
    }
    const buildSeconds = (Date.now() - started) / 1000;
    const workerAtOnce = processMemory(svc.worker.pid);
    // Then idle a while with the backlog in place: V8 gives back what the burst of attempts left
    // behind (no forced GC), so what remains is what holding the backlog costs.
    const settleMs = options.quick ? 3_000 : 15_000;
    progress(`S4 backlog in place; idling ${settleMs / 1000} s before reading memory`);
    await sleep(settleMs);
    const worker = processMemory(svc.worker.pid);
    const apiMem = processMemory(svc.api.pid);
    const redisAfter = await redisMemory(queuePrefix(ctx, 's4'), 'webhook-delivery');
    const { rows: statusRows } = await db.query<{ status: string; n: string }>(
      `SELECT status, count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ANY($1::uuid[]) GROUP BY status`,
      [endpointIds],
    );
    const statusCounts = Object.fromEntries(statusRows.map((r) => [r.status, Number(r.n)]));
    const { rows: disabledRows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM webhook_endpoints WHERE id = ANY($1::uuid[]) AND status <> 'active'`,
      [endpointIds],
    );
    const result: Scenario4Result = {
      target,
      events,
      endpoints: endpoints.length,
      users,
      waiting: statusCounts.retrying ?? 0,
      statusCounts,
      autoDisabled: Number(disabledRows[0].n),
      buildSeconds,
      firstAttemptsPerSec: (await ctx.receiver.progress()).unique / buildSeconds,
      worker: { rssBefore: workerBefore.rss, rssAtOnce: workerAtOnce.rss, rss: worker.rss, hwm: worker.hwm },
      settleSeconds: settleMs / 1000,
      api: { rssBefore: apiBefore.rss, rss: apiMem.rss, hwm: apiMem.hwm },
      redis: {
        usedBefore: redisBefore.usedMemory,
        usedAfter: redisAfter.usedMemory,
        prefixBytes: redisAfter.prefixBytes,
        prefixKeys: redisAfter.prefixKeys,
        delayed: redisAfter.delayed,
      },
      complete,
    };
    log(
      `  S4: ${fmtNum(result.waiting)} deliveries waiting in retry (${fmtNum(result.redis.delayed)} delayed jobs) after ${buildSeconds.toFixed(0)} s; ` +
        `worker RSS ${fmtMb(worker.rss)} (peak ${fmtMb(worker.hwm)}), API RSS ${fmtMb(apiMem.rss)} (peak ${fmtMb(apiMem.hwm)}); ` +
        `Redis: our keys ${fmtMb(result.redis.prefixBytes)}, used_memory ${fmtMb(result.redis.usedAfter)}` +
        `${complete ? '' : ' — INCOMPLETE: the backlog did not reach its size in time'}`,
    );
    return result;
  } finally {
    await db.end().catch(() => undefined);
    await ingest.close().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
    await ctx.receiver.config({ failOkEvery: options.failOkEvery });
  }
}
