import { Client } from 'pg';
import { Pool } from 'undici';
import { RunContext, BareClientResult, DeliverySplit, FixedRateResult, SaturationResult } from '../lib/context';
import { IngestTarget, Ingestor } from '../lib/load';
import { Monitor } from '../lib/monitor';
import { Sample } from '../lib/receiver-client';
import { Service } from '../lib/service';
import { fmtMs, fmtNum, log, percentilesOf, progress, resetProgress, sleep, waitUntil } from '../lib/util';

/** Sends one event and waits for its `fanout` deliveries: the whole pipeline (API, relay, worker) works. */
export async function warmPipeline(ctx: RunContext, svc: Service, ingest: Ingestor, targets: IngestTarget[], fanout: number): Promise<void> {
  await ctx.receiver.reset();
  for (const target of targets) {
    if (!(await ingest.sendOne(target))) throw new Error(`warm-up ingest failed: ${ingest.lastError}`);
  }
  const expected = targets.length * fanout;
  await waitUntil(
    `${expected} warm-up deliveries (is the worker processing?)`,
    async () => {
      svc.assertAlive();
      return (await ctx.receiver.progress()).unique >= expected;
    },
    60_000,
    100,
  );
}

export function procsOf(ctx: RunContext, svc: Service, extra: Record<string, number> = {}): Record<string, number> {
  const service = Object.fromEntries(Object.entries(svc.processes).map(([name, child]) => [name, child.pid]));
  return { ...service, receiver: ctx.receiver.pid, ...(ctx.redisPid ? { redis: ctx.redisPid } : {}), ...extra };
}

/**
 * Saturation: inbound SMS as fast as `concurrency` connections allow, with flow control: the
 * generator pauses while more than `backlogCap` deliveries are owed but not yet arrived (so the
 * queue stays bounded and latency means something). Deliveries/s counted at the receiver over
 * the steady window that follows the warm-up.
 */
export async function saturationPass(
  ctx: RunContext,
  svc: Service,
  ingest: Ingestor,
  targets: IngestTarget[],
  options: {
    label: string;
    fanout: number;
    warmupMs: number;
    measureMs: number;
    drainMs: number;
    healthyKind?: 'ok';
    /** Healthy endpoints per event; flow control counts only theirs (a failing half may fall behind). */
    healthyFanout?: number;
    /** No flow control: ingest as fast as it goes, whatever is owed (does delivery keep pace?). */
    unthrottled?: boolean;
  },
): Promise<SaturationResult> {
  await ctx.receiver.reset();
  resetProgress();
  const acceptedBase = ingest.accepted;
  const failedBase = ingest.failed;
  let arrivedUnique = 0;
  let healthyUnique = 0;
  let okArrived = 0;
  let openHangsSum = 0;
  let openHangsSamples = 0;
  let stopping = false;
  const start = Date.now();
  const steadyFrom = start + options.warmupMs;
  const end = steadyFrom + options.measureMs;
  const owed = () => (ingest.accepted - acceptedBase) * options.fanout - arrivedUnique;
  // The generator waits for the healthy endpoints only: what a failing half owes may pile up (that
  // is the service's problem to isolate, and part of what is measured).
  const healthyFanout = options.healthyFanout ?? options.fanout;
  const owedHealthy = () => (ingest.accepted - acceptedBase) * healthyFanout - healthyUnique;
  // Enough owed to keep every worker slot and a relay batch busy, but not much more than ~1.5 s of
  // arrivals at the current rate (at most --backlog-cap), so the queue time stays short.
  let recentRate = 0;
  const cap = () => Math.min(ctx.options.backlogCap, Math.max(4 * ctx.options.deliveryConcurrency, 1.5 * recentRate));

  const monitor = new Monitor(ctx.database, procsOf(ctx, svc));
  let monitorStarted = false;
  let lastTick = { t: start, ok: 0, accepted: 0, unique: 0 };
  const poller = (async () => {
    while (!stopping) {
      const p = await ctx.receiver.progress();
      arrivedUnique = p.unique;
      healthyUnique = p.uniqueByKind[0];
      okArrived = p.byKind[0] + 0;
      const now = Date.now();
      if (now >= steadyFrom && now < end) {
        openHangsSum += p.openHangs;
        openHangsSamples += 1;
      }
      if (now - lastTick.t >= 1000) {
        const dt = (now - lastTick.t) / 1000;
        recentRate = (p.uniqueByKind[0] - lastTick.unique) / dt;
        const phase = now < steadyFrom ? 'warm-up' : now < end ? 'measuring' : 'draining';
        progress(
          `${options.label} [${phase}] ${((now - start) / 1000).toFixed(0)}s  ingest ${fmtNum((ingest.accepted - lastTick.accepted) / dt)}/s` +
            `  arrivals ${fmtNum((okArrived - lastTick.ok) / dt)}/s  owed ${fmtNum(owedHealthy())}` +
            `${healthyFanout !== options.fanout ? ` (+${fmtNum(owed() - owedHealthy())} to the failing half)` : ''}${p.openHangs ? `  hanging ${p.openHangs}` : ''}`,
        );
        lastTick = { t: now, ok: okArrived, accepted: ingest.accepted, unique: p.uniqueByKind[0] };
      }
      if (!monitorStarted && now >= steadyFrom) {
        monitorStarted = true;
        await monitor.start();
      }
      svc.assertAlive();
      await sleep(100);
    }
  })();

  try {
    await ingest.closedLoop(
      targets,
      () => Date.now() >= end,
      () => options.unthrottled === true || owedHealthy() < cap(),
    );
  } catch (error) {
    stopping = true;
    await poller.catch(() => undefined);
    throw error;
  }
  const cpu = monitorStarted
    ? await monitor.stop()
    : await (async () => {
        await monitor.start();
        return monitor.stop();
      })();

  const drained = await waitUntil('drain', async () => owedHealthy() <= 0, options.drainMs, 100).then(
    () => true,
    () => false,
  );
  const owedToFailing = owed() - owedHealthy();
  stopping = true;
  await poller;

  const seconds = options.measureMs / 1000;
  const stats = await ctx.receiver.window({ recvFrom: steadyFrom, recvTo: end, kind: options.healthyKind ?? 'ok', latencies: true });
  const all = await ctx.receiver.window({ recvFrom: steadyFrom, recvTo: end });
  const result: SaturationResult = {
    label: options.label,
    seconds,
    deliveriesPerSec: stats.ok2xx / seconds,
    attemptsPerSec: all.requests / seconds,
    ingestPerSec: ingest.acceptedBetween(steadyFrom, end) / seconds,
    latency: percentilesOf(stats.latencies ?? []),
    dups: all.dups,
    cpu,
    drained,
    ingestFailed: ingest.failed - failedBase,
    lastIngestError: ingest.lastError,
    openHangsAvg: openHangsSamples ? openHangsSum / openHangsSamples : undefined,
    owedToFailing: healthyFanout !== options.fanout ? owedToFailing : undefined,
    split: options.unthrottled && drained ? await deliverySplit(ctx.databaseUrl, steadyFrom, end) : undefined,
  };
  log(
    `  ${options.label}: ${fmtNum(result.deliveriesPerSec)} deliveries/s (ingest ${fmtNum(result.ingestPerSec)} events/s), ` +
      `latency p50 ${fmtMs(result.latency.p50)} p95 ${fmtMs(result.latency.p95)} p99 ${fmtMs(result.latency.p99)}` +
      `${result.ingestFailed ? `, ${result.ingestFailed} ingest failures (${result.lastIngestError})` : ''}${drained ? '' : ', backlog not drained'}`,
  );
  if (result.split) logSplit(result.split);
  return result;
}

/** See DeliverySplit: the first attempts, succeeded, of the events committed between `from` and `to` (epoch ms). */
async function deliverySplit(databaseUrl: string, from: number, to: number): Promise<DeliverySplit> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const ms = (a: string, b: string) => `extract(epoch FROM ${b} - ${a}) * 1000`;
    const { rows } = await db.query<{ second: number; outbox: number; to_attempt: number; http: number; claim_to_record: number; total: number }>(
      `SELECT floor(extract(epoch FROM d.event_created_at) - $1 / 1000.0)::int AS second,
              ${ms('d.event_created_at', 'd.created_at')} AS outbox,
              ${ms('d.created_at', 'd.last_attempt_at')} AS to_attempt,
              coalesce(d.success_duration_ms, a.duration_ms) AS http,
              ${ms('d.last_attempt_at', 'd.updated_at')} AS claim_to_record,
              ${ms('d.event_created_at', 'd.updated_at')} AS total
         FROM webhook_deliveries d LEFT JOIN webhook_delivery_attempts a ON a.delivery_id = d.id AND a.attempt_number = 1 -- the success is on d's row since migration SuccessOnDelivery
        WHERE d.status = 'succeeded' AND d.attempt_count = 1 AND d.resent_from_id IS NULL
          AND d.event_created_at >= to_timestamp($1 / 1000.0) AND d.event_created_at < to_timestamp($2 / 1000.0)`,
      [from, to],
    );
    const of = (key: keyof (typeof rows)[number], list = rows) => percentilesOf(list.map((r) => Number(r[key])));
    const seconds = new Map<number, typeof rows>();
    for (const row of rows) seconds.set(row.second, [...(seconds.get(row.second) ?? []), row]);
    return {
      outbox: of('outbox'),
      toAttempt: of('to_attempt'),
      http: of('http'),
      claimToRecord: of('claim_to_record'),
      total: of('total'),
      bySecond: [...seconds.entries()]
        .sort(([a], [b]) => a - b)
        .map(([second, list]) => ({
          second,
          events: list.length,
          outboxP99: of('outbox', list).p99,
          toAttemptP50: of('to_attempt', list).p50,
          toAttemptP99: of('to_attempt', list).p99,
          totalP99: of('total', list).p99,
        })),
    };
  } finally {
    await db.end().catch(() => undefined);
  }
}

function logSplit(split: DeliverySplit): void {
  const row = (name: string, p: { p50: number; p95: number; p99: number }) =>
    `    ${name.padEnd(34)} p50 ${fmtMs(p.p50)}  p95 ${fmtMs(p.p95)}  p99 ${fmtMs(p.p99)}`;
  log(
    [
      `  where the time went (${fmtNum(split.total.count)} first attempts, from their rows):`,
      row('outbox (commit → fan-out)', split.outbox),
      row('to the attempt (fan-out → claim)', split.toAttempt),
      row('HTTP request', split.http),
      row('claim → success recorded', split.claimToRecord),
      row('commit → success recorded', split.total),
      '    by second of the window (events, outbox p99, to-attempt p50/p99, total p99):',
      ...split.bySecond.map(
        (s) =>
          `      ${String(s.second).padStart(3)} s  ${fmtNum(s.events)}  ${fmtMs(s.outboxP99)}  ${fmtMs(s.toAttemptP50)} / ${fmtMs(s.toAttemptP99)}  ${fmtMs(s.totalP99)}`,
      ),
    ].join('\n'),
  );
}

/**
 * Fixed rate: `rate` inbound events per second (open loop). Latency of every delivery of the
 * events whose createdAt falls in the steady window; one that has not arrived after the drain
 * wait counts as "never" (so a p99 cannot look good by losing the slow ones).
 */
export async function fixedRatePass(
  ctx: RunContext,
  svc: Service,
  ingest: Ingestor,
  targets: IngestTarget[],
  options: { label: string; fanout: number; rate: number; warmupMs: number; measureMs: number; drainMs: number; capture?: number },
): Promise<FixedRateResult> {
  await ctx.receiver.reset();
  resetProgress();
  if (options.capture) await ctx.receiver.capture(options.capture);
  const start = Date.now();
  const steadyFrom = start + options.warmupMs;
  const end = steadyFrom + options.measureMs;
  const monitor = new Monitor(ctx.database, procsOf(ctx, svc));
  let stopping = false;
  let monitorStarted = false;
  let last = { t: start, n: 0 };
  const ticker = (async () => {
    while (!stopping) {
      const now = Date.now();
      if (!monitorStarted && now >= steadyFrom) {
        monitorStarted = true;
        await monitor.start();
      }
      const p = await ctx.receiver.progress();
      if (now - last.t >= 1000) {
        progress(
          `${options.label} [${now < steadyFrom ? 'warm-up' : now < end ? 'measuring' : 'draining'}] ${((now - start) / 1000).toFixed(0)}s` +
            `  ingest ${fmtNum(ingest.accepted)} sent  arrivals ${fmtNum((p.unique - last.n) / ((now - last.t) / 1000))}/s`,
        );
        last = { t: now, n: p.unique };
      }
      svc.assertAlive();
      await sleep(100);
    }
  })();
  const sent = await ingest.fixedRate(targets, options.rate, options.warmupMs + options.measureMs);
  const cpu = monitorStarted
    ? await monitor.stop()
    : await (async () => {
        await monitor.start();
        return monitor.stop();
      })();
  // Deliveries of the events created in the window: those of requests in flight across an edge
  // of the window may count or not (they are not owed, and do not wait for the drain).
  const expected = ingest.createdSurelyBetween(steadyFrom, end) * options.fanout;
  const window = { createdFrom: steadyFrom, createdTo: end, kind: 'ok' as const };
  await waitUntil('fixed-rate deliveries', async () => (await ctx.receiver.window(window)).firsts >= expected, options.drainMs, 200).catch(() => undefined);
  stopping = true;
  await ticker;
  const stats = await ctx.receiver.window({ ...window, latencies: true });
  const byArrival = await ctx.receiver.window({ recvFrom: steadyFrom, recvTo: end, kind: 'ok' });
  const latencies = stats.latencies ?? [];
  const missing = Math.max(0, expected - latencies.length);
  for (let i = 0; i < missing; i += 1) latencies.push(Infinity);
  const seconds = options.measureMs / 1000;
  const result: FixedRateResult = {
    rate: options.rate,
    seconds,
    planned: sent.planned,
    sent: sent.sent,
    sentLate: sent.late,
    expected,
    arrived: stats.firsts,
    deliveriesPerSec: byArrival.ok2xx / seconds,
    latency: percentilesOf(latencies),
    cpu,
  };
  log(
    `  ${options.label}: ${options.rate} events/s → ${fmtNum(result.deliveriesPerSec)} deliveries/s, ${fmtNum(result.arrived)}/${fmtNum(expected)} arrived, ` +
      `latency p50 ${fmtMs(result.latency.p50)} p95 ${fmtMs(result.latency.p95)} p99 ${fmtMs(result.latency.p99)}` +
      `${sent.sent < sent.planned ? ` (only ${fmtNum(sent.sent)} of ${fmtNum(sent.planned)} events could be sent: the ingest is slower than the rate)` : ''}`,
  );
  return result;
}

/**
 * The limit: the same receiver, driven directly with real signed bodies and headers captured
 * from the service's own deliveries, one Pool of 64 connections per endpoint origin (as the
 * service's sender), `concurrency` requests in flight (the worker's DELIVERY_CONCURRENCY).
 */
export async function bareClientPass(
  ctx: RunContext,
  samples: Sample[],
  options: { concurrency: number; durationMs: number; label: string },
): Promise<BareClientResult> {
  if (samples.length === 0) throw new Error('no captured deliveries to replay');
  await ctx.receiver.reset();
  resetProgress();
  const pools = new Map<number, Pool>();
  for (const s of samples) {
    if (!pools.has(s.port)) pools.set(s.port, new Pool(`http://127.0.0.1:${s.port}`, { connections: 64, keepAliveTimeout: 30_000 }));
  }
  const monitor = new Monitor(ctx.database, { receiver: ctx.receiver.pid, ...(ctx.redisPid ? { redis: ctx.redisPid } : {}) });
  await monitor.start();
  const latencies: number[] = [];
  let done = 0;
  let errors = 0;
  let next = 0;
  const start = performance.now();
  const end = start + options.durationMs;
  let lastT = start;
  let lastDone = 0;
  const worker = async () => {
    while (performance.now() < end) {
      const s = samples[next++ % samples.length];
      const t0 = performance.now();
      try {
        const res = await pools.get(s.port)!.request({ method: 'POST', path: s.path, headers: s.headers, body: s.body });
        await res.body.text();
        if (res.statusCode === 200) done += 1;
        else errors += 1;
      } catch {
        errors += 1;
      }
      const t1 = performance.now();
      latencies.push(t1 - t0);
      if (t1 - lastT >= 1000) {
        progress(`${options.label} ${((t1 - start) / 1000).toFixed(0)}s  ${fmtNum(((done - lastDone) * 1000) / (t1 - lastT))} POST/s`);
        lastT = t1;
        lastDone = done;
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  const cpu = await monitor.stop();
  await Promise.all([...pools.values()].map((p) => p.close()));
  const counted = (await ctx.receiver.progress()).total;
  const result: BareClientResult = {
    seconds,
    concurrency: options.concurrency,
    postsPerSec: done / seconds,
    receiverCounted: counted,
    errors,
    samples: samples.length,
    avgBodyBytes: samples.reduce((a, s) => a + Buffer.byteLength(s.body), 0) / samples.length,
    latency: percentilesOf(latencies),
    cpu,
  };
  log(
    `  ${options.label}: ${fmtNum(result.postsPerSec)} POST/s with ${options.concurrency} in flight (${errors} errors, ${samples.length} captured bodies of ~${fmtNum(result.avgBodyBytes)} B)`,
  );
  return result;
}
