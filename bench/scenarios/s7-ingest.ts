import { ServiceApi } from '../lib/api';
import { RunContext, Scenario7Result, startScenarioService, windows } from '../lib/context';
import { Ingestor, IngestTarget, makeTargets } from '../lib/load';
import { Monitor } from '../lib/monitor';
import { fmtMs, fmtNum, log, percentilesOf, sleep } from '../lib/util';
import { procsOf } from './passes';

/** Distinct partner numbers of the many-senders pass: each starts its own thread. */
const MANY_SENDERS = 10_000;

/**
 * Scenario 7, ingest alone: inbound SMS to a line nobody subscribed to (no deliveries), as fast
 * as the connections allow, against one `api` process (and its worker). First from many senders
 * (each message its own thread), then from one sender (every message the same thread, which
 * serialises them on the thread's row): the difference is what that serialisation costs.
 */
export async function scenario7(ctx: RunContext): Promise<Scenario7Result> {
  const { options } = ctx;
  const w = windows(options);
  const concurrency = Math.max(options.ingestConcurrency, 32);
  log(`\nScenario 7: ingest alone, ${concurrency} connections`);
  const svc = await startScenarioService(ctx, 's7', {});
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const ingest = new Ingestor(svc.baseUrl, ctx.secrets.ingestToken, concurrency, options.smsBytes);
  try {
    const org = await api.createOrg('bench s7');
    const line = await api.createPhoneLine(org.id);
    const pass = async (label: string, targets: IngestTarget[], senders: number) => {
      const failedBase = ingest.failed;
      const start = Date.now();
      const from = start + Math.min(w.warmup, 5_000);
      const end = from + w.fixed;
      const monitor = new Monitor(ctx.database, procsOf(ctx, svc));
      const monitoring = (async () => {
        await sleep(from - Date.now());
        await monitor.start();
      })();
      await ingest.closedLoop(
        targets,
        () => Date.now() >= end,
        () => true,
      );
      await monitoring;
      const cpu = await monitor.stop();
      const perSec = ingest.acceptedBetween(from, end) / (w.fixed / 1000);
      const latency = percentilesOf(ingest.durationsBetween(from, end));
      const failed = ingest.failed - failedBase;
      log(
        `  ${label}: ${fmtNum(perSec)} inbound SMS/s, request p50 ${fmtMs(latency.p50)} p99 ${fmtMs(latency.p99)}` +
          `${failed ? `, ${failed} failed (${ingest.lastError})` : ''}`,
      );
      return { senders, perSec, failed, latency, cpu };
    };
    const manySenders = await pass(`S7 pass 1 (${fmtNum(MANY_SENDERS)} senders)`, makeTargets([line.address], MANY_SENDERS), MANY_SENDERS);
    const oneSender = await pass('S7 pass 2 (one sender)', makeTargets([line.address], 1), 1);
    return { concurrency, manySenders, oneSender };
  } finally {
    await ingest.close().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
