import { seedLineWithEndpoints, ServiceApi } from '../lib/api';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { IsolationPass, queuePrefix, RunContext, Scenario2Result, startScenarioService, windows } from '../lib/context';
import { redisMemory } from '../lib/infra';
import { Ingestor, makeTargets } from '../lib/load';
import { fmtPct, log } from '../lib/util';
import { saturationPass, warmPipeline } from './passes';

/**
 * Scenario 2, failure isolation: half the endpoints answer 500 (pass A), then half hang past
 * DELIVERY_TIMEOUT_MS (pass B); the healthy half's deliveries/s as a ratio of what the same
 * share of endpoints got in scenario 1 (or in a baseline pass here when scenario 1 did not run).
 */
export async function scenario2(ctx: RunContext): Promise<Scenario2Result> {
  const { options } = ctx;
  const w = windows(options);
  const K = options.endpoints;
  const healthy = Math.ceil(K / 2);
  log(
    `\nScenario 2: failure isolation (${K} endpoints, ${K - healthy} failing; DELIVERY_TIMEOUT_MS=${options.timeoutMs}, ` +
      `DELIVERY_RETRY_SCHEDULE=${options.retrySchedule}, a 2xx every ${options.failOkEvery || 'never'} on failing paths)`,
  );
  const svc = await startScenarioService(ctx, 's2', {
    DELIVERY_TIMEOUT_MS: String(options.timeoutMs),
    DELIVERY_RETRY_SCHEDULE: options.retrySchedule,
  });
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const ingest = new Ingestor(svc.baseUrl, ctx.secrets.ingestToken, options.ingestConcurrency, options.smsBytes);
  await ctx.receiver.config({ failOkEvery: options.failOkEvery, hangMs: options.timeoutMs + 30_000 });
  try {
    let baselinePerSec = ctx.results.s1?.saturation.deliveriesPerSec;
    let baselineFrom: Scenario2Result['baselineFrom'] = 'scenario 1';
    if (baselinePerSec === undefined) {
      baselineFrom = 'own baseline pass';
      const urls = Array.from({ length: K }, (_, i) => ctx.receiver.url(i, `/ok/s2base-${i}`));
      const seeded = await seedLineWithEndpoints(api, { label: 's2base', users: options.users, urls, mode: options.mode });
      await ctx.receiver.setSecrets(seeded.endpoints.map((e) => [e.path, [e.secret]]));
      const targets = makeTargets([seeded.line.address], 200);
      await warmPipeline(ctx, svc, ingest, targets, K);
      const base = await saturationPass(ctx, svc, ingest, targets, {
        label: 'S2 baseline (all healthy)',
        fanout: K,
        warmupMs: w.warmup,
        measureMs: w.isolation,
        drainMs: w.drain,
      });
      baselinePerSec = base.deliveriesPerSec;
      for (const user of seeded.users) for (const e of user.endpoints) await api.setEndpointStatus(user.apiKey, e.id, 'disabled');
    }

    const passes: IsolationPass[] = [];
    for (const kind of ['fail', 'hang'] as const) {
      const tag = `s2${kind}`;
      const urls = Array.from({ length: K }, (_, i) => ctx.receiver.url(i, i < healthy ? `/ok/${tag}-${i}` : `/${kind}/${tag}-${i}`));
      const seeded = await seedLineWithEndpoints(api, { label: tag, users: options.users, urls, mode: options.mode });
      await ctx.receiver.setSecrets(seeded.endpoints.map((e) => [e.path, [e.secret]]));
      const targets = makeTargets([seeded.line.address], 200);
      const result = await saturationPass(ctx, svc, ingest, targets, {
        label: `S2 pass ${kind === 'fail' ? 'A (half answer 500)' : `B (half hang > ${options.timeoutMs} ms)`}`,
        fanout: K,
        warmupMs: w.warmup,
        measureMs: w.isolation,
        drainMs: 1_000,
        healthyKind: 'ok',
        healthyFanout: healthy,
      });
      const delayedJobsAtEnd = (await redisMemory(queuePrefix(ctx, 's2'), 'webhook-delivery').catch(() => ({ delayed: NaN }))).delayed;
      const all = await ctx.receiver.window({});
      // Endpoints the service disabled by itself (auto-disable) during the pass.
      let autoDisabled = 0;
      for (const user of seeded.users) {
        const listed = await api.tool<{ endpoints: Array<{ id: string; status: string; disabledReason: string | null }> }>(user.apiKey, 'list_webhooks', {});
        autoDisabled += listed.endpoints.filter((e) => e.status === 'disabled').length;
        // Stop this pass's traffic (cancels its waiting retries) before the next pass.
        for (const e of listed.endpoints) if (e.status === 'active') await api.setEndpointStatus(user.apiKey, e.id, 'disabled');
      }
      const ratio = result.deliveriesPerSec / (baselinePerSec * (healthy / K));
      log(`  → healthy half at ${fmtPct(ratio)} of its share of the baseline; ${autoDisabled} endpoint(s) auto-disabled`);
      passes.push({ kind, result, healthyEndpoints: healthy, ratio, autoDisabled, attemptsByKind: all.byKind, delayedJobsAtEnd });
    }
    return {
      endpointConcurrency: effectiveEndpointConcurrency(ctx),
      baselineFrom,
      baselinePerSec,
      baselineHealthyShare: healthy / K,
      timeoutMs: options.timeoutMs,
      retrySchedule: options.retrySchedule,
      failOkEvery: options.failOkEvery,
      passes,
    };
  } finally {
    await ingest.close().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}

/** DELIVERY_ENDPOINT_CONCURRENCY in effect: the option, else the built service's default (if it has one). */
function effectiveEndpointConcurrency(ctx: RunContext): number | undefined {
  if (ctx.options.endpointConcurrency !== undefined) return ctx.options.endpointConcurrency;
  try {
    const source = readFileSync(join(ctx.root, 'dist/src/delivery/delivery.config.js'), 'utf8');
    const match = /'DELIVERY_ENDPOINT_CONCURRENCY', \{[^}]*default: ([\d_]+)/.exec(source);
    return match ? Number(match[1].replace(/_/g, '')) : undefined;
  } catch {
    return undefined;
  }
}
