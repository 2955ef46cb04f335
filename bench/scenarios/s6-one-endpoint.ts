import { seedLineWithEndpoints, ServiceApi } from '../lib/api';
import { RunContext, Scenario6Result, startScenarioService, windows } from '../lib/context';
import { Ingestor, makeTargets } from '../lib/load';
import { log } from '../lib/util';
import { saturationPass, warmPipeline } from './passes';

/**
 * Scenario 6, one endpoint receiving everything (api + worker processes, or one with --s6-one-process): first with the queue
 * kept short (what one endpoint can be sent), then with ingest as fast as it goes and no flow
 * control: do deliveries keep pace with the events (arrivals ÷ events), and how late are they?
 */
export async function scenario6(ctx: RunContext): Promise<Scenario6Result> {
  const { options } = ctx;
  const w = windows(options);
  log(`\nScenario 6: one endpoint receiving every event${options.s6OneProcess ? ', one PROCESS_ROLE=all process' : ''}`);
  const svc = await startScenarioService(ctx, 's6', {}, options.s6OneProcess ? 'all' : 'split');
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const ingest = new Ingestor(svc.baseUrl, ctx.secrets.ingestToken, options.ingestConcurrency, options.smsBytes);
  try {
    await ctx.receiver.config({ failOkEvery: options.failOkEvery });
    const seeded = await seedLineWithEndpoints(api, { label: 's6', users: 1, urls: [ctx.receiver.url(0, '/ok/s6-0')], mode: options.mode });
    await ctx.receiver.setSecrets(seeded.endpoints.map((e) => [e.path, [e.secret]]));
    const targets = makeTargets([seeded.line.address], 200);
    await warmPipeline(ctx, svc, ingest, targets, 1);
    const saturation = await saturationPass(ctx, svc, ingest, targets, {
      label: 'S6 pass 1 (one endpoint, saturation)',
      fanout: 1,
      warmupMs: w.warmup,
      measureMs: w.saturation,
      drainMs: Math.max(w.drain, 30_000),
    });
    const unthrottled = await saturationPass(ctx, svc, ingest, targets, {
      label: 'S6 pass 2 (one endpoint, ingest unthrottled)',
      fanout: 1,
      warmupMs: w.warmup,
      measureMs: w.fixed,
      drainMs: Math.max(w.drain, 60_000),
      unthrottled: true,
    });
    // Pass 3 (a backlog of first attempts in the paused queue, then drained) is not run: since
    // change 28 of docs/PERFORMANCE.md fan-out hands first attempts to its own process's worker,
    // not to the queue, so pausing the queue builds no backlog (the pass waited for one and failed).
    // Pass 1's saturation is the endpoint's drain rate.
    log('  S6 pass 3 (backlog drain) not run: first attempts no longer wait in the delivery queue (docs/PERFORMANCE.md, change 28)');
    return { saturation, unthrottled };
  } finally {
    await ingest.close().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
