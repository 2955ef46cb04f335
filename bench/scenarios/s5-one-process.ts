import { seedLineWithEndpoints, ServiceApi } from '../lib/api';
import { RunContext, Scenario5Result, startScenarioService, windows } from '../lib/context';
import { Ingestor, makeTargets } from '../lib/load';
import { log } from '../lib/util';
import { saturationPass, warmPipeline } from './passes';

/**
 * Scenario 5, one process: scenario 1's saturation pass (K endpoints per inbound SMS) against the
 * service as a new user first runs it, `npm start` with `PROCESS_ROLE=all`: the API, the outbox
 * relay and the delivery worker share one Node event loop, and it logs at the default level.
 */
export async function scenario5(ctx: RunContext): Promise<Scenario5Result> {
  const { options } = ctx;
  const w = windows(options);
  const K = options.endpoints;
  log(`\nScenario 5: one PROCESS_ROLE=all process, ${K} endpoints`);
  // Logging as `npm start` does by default (info, JSON), not the bench's usual warn.
  const svc = await startScenarioService(ctx, 's5', { LOG_LEVEL: 'info', LOG_FORMAT: 'json' }, 'all');
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const ingest = new Ingestor(svc.baseUrl, ctx.secrets.ingestToken, options.ingestConcurrency, options.smsBytes);
  try {
    await ctx.receiver.config({ failOkEvery: options.failOkEvery });
    const urls = Array.from({ length: K }, (_, i) => ctx.receiver.url(i, `/ok/s5-${i}`));
    const seeded = await seedLineWithEndpoints(api, { label: 's5', users: options.users, urls, mode: options.mode });
    await ctx.receiver.setSecrets(seeded.endpoints.map((e) => [e.path, [e.secret]]));
    const targets = makeTargets([seeded.line.address], 200);
    await warmPipeline(ctx, svc, ingest, targets, K);
    const saturation = await saturationPass(ctx, svc, ingest, targets, {
      label: 'S5 (one process, saturation)',
      fanout: K,
      warmupMs: w.warmup,
      measureMs: w.saturation,
      drainMs: Math.max(w.drain, 30_000),
    });
    return { endpoints: K, saturation };
  } finally {
    await ingest.close().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
