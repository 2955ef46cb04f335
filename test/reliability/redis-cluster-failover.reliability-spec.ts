import { Client } from 'pg';
import { createTenant, ingestSms, IngestOutcome, steadyTraffic, Tenant, toolOk } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder } from './support/results';
import { freePort, ServiceProcess, sleep, deliveriesAllSucceeded, waitFor } from './support/stack';
import { RedisCluster } from '../support/redis-cluster';

/**
 * Issue 46: "a master fails over (CLUSTER FAILOVER on its replica, then the old master killed)
 * during a delivery run: every event delivered, none twice beyond the at-least-once rule, the
 * outage visible in metrics."
 *
 * A private Redis Cluster (3 masters, a replica each; test/support/redis-cluster.ts), one `api`
 * and one `worker` process on REDIS_URL=redis+cluster://...; inbound SMS at a steady rate, each
 * a message.received delivery. Mid-run the master serving the queues' slot (`{rel}`) is failed
 * over to its replica and killed.
 */
const PREFIX = '{rel}';
const SMS_PER_SECOND = 20;
const BEFORE_MS = 5_000;
const AFTER_MS = 8_000;

/** The sum of a counter over all its label sets in a Prometheus exposition. */
function counterSum(exposition: string, name: string): number {
  return exposition
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

describe('reliability: a Redis Cluster master fails over during a delivery run', () => {
  let cluster: RedisCluster;
  let stack: Stack;
  let worker: ServiceProcess;
  let metricsPort: number;
  let tenant: Tenant;
  const result = new ResultBuilder('redis-cluster-failover', 'Redis Cluster: the queues’ master fails over during a delivery run');

  beforeAll(async () => {
    cluster = await RedisCluster.start();
    stack = await startStack({ tag: 'cluster', workers: 0, env: { REDIS_URL: cluster.url, QUEUE_PREFIX: PREFIX } });
    metricsPort = await freePort();
    worker = await ServiceProcess.start({
      name: 'cluster-worker1',
      role: 'worker',
      env: { LOG_LEVEL: 'info', ...stack.env, METRICS_PORT: String(metricsPort) },
    });
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    result.record();
    await worker?.stop('SIGTERM');
    await stack?.stop();
    await cluster?.stop();
  });

  const metrics = async (base: string) => (await fetch(`${base}/metrics`)).text();

  it('delivers every event once the replica has taken over, and the metrics show the lost master', async () => {
    const api = stack.apis[0];
    const { receiver } = stack;
    const workerMetrics = `http://127.0.0.1:${metricsPort}`;
    const { secret } = await toolOk<{ secret: string }>(api.baseUrl, tenant.apiKey, 'register_webhook', {
      url: `${stack.receiverUrl}/failover`,
      events: ['message.received'],
    });
    receiver.secrets.set('/failover', [secret]);
    const phone = tenant.lines[0].address;
    /** redis_errors_total and redis_cluster_nodes_removed_total, summed over the worker and the api process. */
    const outageCounters = async () => {
      const both = (await metrics(workerMetrics)) + (await metrics(api.baseUrl));
      return { errors: counterSum(both, 'redis_errors_total'), removed: counterSum(both, 'redis_cluster_nodes_removed_total') };
    };
    const before = await outageCounters();

    type Tagged = IngestOutcome & { phase: string };
    let phase = 'before';
    const sms = steadyTraffic<Tagged>(SMS_PER_SECOND, async (i) => {
      const p = phase;
      const o = await ingestSms(api.baseUrl, {
        to: phone,
        from: `+1666${String(3_000_000 + (i % 50)).padStart(7, '0')}`,
        body: `failover sms ${i}`,
        providerMessageId: `failover-${i}`,
      });
      return { ...o, phase: p };
    });

    await sleep(BEFORE_MS);
    phase = 'during';
    const oldMaster = cluster.masterOf(PREFIX);
    const startedAt = Date.now();
    const newMaster = await cluster.failOver(PREFIX);
    const healthyAt = Date.now();
    phase = 'after';
    await sleep(AFTER_MS);
    const outcomes = await sms.stop();

    const ok = (o: Tagged) => o.status === 200 || o.status === 201;
    const accepted = outcomes.filter(ok);
    const failed = outcomes.filter((o) => !ok(o));
    result.load = `${fmt(outcomes.length)} inbound SMS at ${SMS_PER_SECOND}/s, 1 api + 1 worker on a 3-master, 3-replica Redis Cluster`;
    result.faults = `the master of the queues' slot (${PREFIX}) failed over to its replica (CLUSTER FAILOVER), then killed`;
    result.figure(
      'failover (CLUSTER FAILOVER until every live node reports cluster_state:ok)',
      `${((healthyAt - startedAt) / 1000).toFixed(1)} s, master ${oldMaster} → ${newMaster}`,
    );
    result.figure(
      'ingest answers 2xx',
      `${fmt(accepted.length)} of ${fmt(outcomes.length)}${failed.length ? ` (others: ${[...new Set(failed.map((o) => o.status || o.error))].join(', ')})` : ''}`,
    );
    result.figure('sent during the failover', fmt(outcomes.filter((o) => o.phase === 'during').length));

    const acceptedIds = new Set(accepted.map((o) => o.messageId!));
    const missing = () => [...acceptedIds].filter((id) => !receiver.messageIds('/failover').has(id));
    try {
      await waitFor(() => missing().length === 0, 'every accepted message at the receiver', 120_000, 250);
    } finally {
      const arrivals = receiver.on('/failover');
      const duplicates = receiver.duplicates('/failover');
      result.lost = missing().length;
      result.duplicates = fmt(duplicates.length);
      result.figure('accepted messages never delivered (lost)', fmt(missing().length));
      result.figure(
        'every event delivered, after the cluster was healthy again',
        `${((Math.max(0, ...arrivals.map((a) => a.at)) - healthyAt) / 1000).toFixed(1)} s`,
      );
      result.figure('signatures verified', `${fmt(arrivals.filter((a) => a.verified).length)} of ${fmt(arrivals.length)}`);
      result.figure('event ids delivered more than once', fmt(duplicates.length));
    }
    const after = await outageCounters();
    result.figure('redis_errors_total over both processes, before / after', `${fmt(before.errors)} / ${fmt(after.errors)}`);
    result.figure('redis_cluster_nodes_removed_total over both processes, before / after', `${fmt(before.removed)} / ${fmt(after.removed)}`);

    expect(failed).toEqual([]);
    expect(missing()).toEqual([]);
    expect(receiver.badSignatures).toBe(0);
    // Every delivery row was recorded as succeeded before its job ended: a failover re-runs no finished delivery.
    expect(receiver.duplicates('/failover')).toEqual([]);
    // A graceful CLUSTER FAILOVER costs no command an error; the old master leaving every client's map shows it.
    expect(after.removed).toBeGreaterThan(before.removed);

    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const statuses = await deliveriesAllSucceeded(db);
      expect(statuses).toEqual([{ status: 'succeeded', count: accepted.length }]);
    } finally {
      await db.end();
    }
    result.passed = true;
  });
});
