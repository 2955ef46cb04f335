import { seedLineWithEndpoints, ServiceApi } from '../lib/api';
import { RunContext, Scenario1Result, startScenarioService, windows } from '../lib/context';
import { Ingestor, makeTargets } from '../lib/load';
import { log } from '../lib/util';
import { bareClientPass, fixedRatePass, saturationPass, warmPipeline } from './passes';

/**
 * Scenario 1, delivery throughput: inbound SMS through the real ingest path, fanned out to K
 * endpoints (dealt over a few users who all see the line), delivered, signed, recorded.
 */
export async function scenario1(ctx: RunContext): Promise<Scenario1Result> {
  const { options } = ctx;
  const w = windows(options);
  const K = options.endpoints;
  log(`\nScenario 1: delivery throughput (${K} endpoints over ${options.users} users, ingest concurrency ${options.ingestConcurrency})`);
  const svc = await startScenarioService(ctx, 's1', {});
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const ingest = new Ingestor(svc.baseUrl, ctx.secrets.ingestToken, options.ingestConcurrency, options.smsBytes);
  try {
    await ctx.receiver.config({ failOkEvery: options.failOkEvery });
    const urls = Array.from({ length: K }, (_, i) => ctx.receiver.url(i, `/ok/s1-${i}`));
    const seeded = await seedLineWithEndpoints(api, { label: 's1', users: options.users, urls, mode: options.mode });
    await ctx.receiver.setSecrets(seeded.endpoints.map((e) => [e.path, [e.secret]]));
    const targets = makeTargets([seeded.line.address], 200);
    await warmPipeline(ctx, svc, ingest, targets, K);

    const saturation = await saturationPass(ctx, svc, ingest, targets, {
      label: 'S1 pass 1 (saturation)',
      fanout: K,
      warmupMs: w.warmup,
      measureMs: w.saturation,
      drainMs: Math.max(w.drain, 30_000),
    });
    // Latency where the service keeps up: half the event rate it sustained in pass 1.
    const sustainableRate = Math.max(1, Math.floor(saturation.ingestPerSec / 2));
    const sustainable = await fixedRatePass(ctx, svc, ingest, targets, {
      label: `S1 pass 2 (${sustainableRate} events/s, half of saturation)`,
      fanout: K,
      rate: sustainableRate,
      warmupMs: Math.min(w.warmup, 5_000),
      measureMs: w.fixed,
      drainMs: Math.max(w.drain, 30_000),
    });
    const fixed = await fixedRatePass(ctx, svc, ingest, targets, {
      label: `S1 pass 3 (${options.rate} events/s)`,
      fanout: K,
      rate: options.rate,
      warmupMs: Math.min(w.warmup, 5_000),
      measureMs: w.fixed,
      drainMs: w.drain,
      capture: 500,
    });
    const signatures = await ctx.receiver.progress();
    const samples = await ctx.receiver.samples();
    // The limit is measured with the service stopped: the receiver and the client have the machine.
    await svc.stop();
    const bare = await bareClientPass(ctx, samples, {
      concurrency: options.deliveryConcurrency,
      durationMs: w.bare,
      label: 'S1 limit (bare undici client → same receiver)',
    });
    return {
      endpoints: K,
      users: options.users,
      ingestConcurrency: options.ingestConcurrency,
      deliveryConcurrency: options.deliveryConcurrency,
      saturation,
      sustainable,
      fixed,
      bare,
      signatures: { verified: signatures.verified, bad: signatures.badSignature, badExamples: signatures.badExamples },
    };
  } finally {
    await ingest.close().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
