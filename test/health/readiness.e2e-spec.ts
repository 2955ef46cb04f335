import { ChildProcess } from 'node:child_process';
import Redis from 'ioredis';
import { Client } from 'pg';
import { OutboxRelay } from '../../src/events/outbox-relay';
import { ServiceQueues } from '../../src/queue/queue.module';
import { createTestApp, TestApp } from '../support/app';
import { freePort } from '../support/delivery';
import { sample, scrapeMetrics } from '../support/metrics';
import { RedisCluster } from '../support/redis-cluster';
import { startRedisServer, stopChild } from '../support/redis-server';
import { createSession } from '../support/session';
import { BASE_DATABASE_URL } from '../support/test-env';
import { waitUntil } from '../support/wait';

jest.setTimeout(120_000);

type Answer = { status: number; body: any; ms: number };

async function ready(t: TestApp): Promise<Answer> {
  const started = Date.now();
  const res = await t.http().get('/ready');
  return { status: res.status, body: res.body, ms: Date.now() - started };
}

/** Polls /ready (as an orchestrator would) until `accept` takes the answer; returns it. */
function readyUntil(t: TestApp, accept: (answer: Answer) => boolean, what: string, timeoutMs = 20_000): Promise<Answer> {
  let last: Answer | undefined;
  return waitUntil(
    async () => {
      last = await ready(t);
      return accept(last) && last;
    },
    () => `${what} (last: ${JSON.stringify(last)})`,
    { timeoutMs, intervalMs: 200 },
  );
}

const isReady = (a: Answer) => a.status === 200;
const downOn = (check: string, message: RegExp) => (a: Answer) => a.status === 503 && message.test(a.body?.error?.[check]?.message ?? '');

/** The readiness gauges and the 503 counter of one check, as Prometheus scrapes them. */
async function readinessMetrics(t: TestApp, check: string): Promise<{ up: number | undefined; notReady: number | undefined }> {
  const text = await scrapeMetrics(t);
  return { up: sample(text, 'ready_check_up', { check }), notReady: sample(text, 'ready_not_ready_answers_total', { check }) };
}

describe('/ready tells the truth', () => {
  describe('everything up', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(async () => {
      await t.close();
    });

    it('answers 200 with every check up, and the gauges read 1', async () => {
      // Just after boot a check may still be down (a queue connection being made): the 503s the
      // test saw are the ones counted, and none more.
      const seen: Answer[] = [];
      const answer = await readyUntil(t, (a) => (seen.push(a), isReady(a)), '/ready to answer 200');
      const up = { queue: { status: 'up' }, postgres: { status: 'up' }, outbox: { status: 'up' }, delivery_log: { status: 'up' } };
      expect(answer.body).toEqual({ status: 'ok', info: up, error: {}, details: up });
      for (const check of ['queue', 'postgres', 'outbox', 'delivery_log']) {
        const notReady = seen.filter((a) => a.status === 503 && a.body?.error?.[check]).length;
        expect(await readinessMetrics(t, check)).toEqual({ up: 1, notReady });
      }
      // /health is liveness only, whatever /ready says.
      expect((await t.http().get('/health')).status).toBe(200);
    });
  });

  describe('REDIS_URL names one node of a Redis Cluster that does not own the queue prefix slot', () => {
    let cluster: RedisCluster;
    let t: TestApp;
    beforeAll(async () => {
      cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 0 });
      const prefix = process.env.QUEUE_PREFIX!;
      expect(prefix).toMatch(/^\{[^}]+\}$/); // hash-tagged: every queue key is in the slot of the prefix
      const port = cluster.masterNotOwning(prefix);
      t = await createTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
    });
    afterAll(async () => {
      await t?.close();
      await cluster?.stop();
    });

    it('answers 503 naming the queue and MOVED, the gauge reads 0 and the 503s are counted', async () => {
      const answer = await readyUntil(t, downOn('queue', /Redis answered MOVED: this node does not own the queue's slot/), '/ready 503 naming MOVED');
      expect(answer.body.status).toBe('error');
      expect(answer.body.message).toMatch(/^not ready: queue: queue \S+ cannot take work: Redis answered MOVED/);
      expect(answer.body.details.postgres).toEqual({ status: 'up' });
      expect(JSON.stringify(answer.body)).not.toMatch(/redis:\/\//);
      expect(answer.body.message).toMatch(/REDIS_URL names one node of a Redis Cluster, not the cluster/);
      const metrics = await readinessMetrics(t, 'queue');
      expect(metrics.up).toBe(0);
      expect(metrics.notReady).toBeGreaterThanOrEqual(1);
      expect((await readinessMetrics(t, 'postgres')).up).toBe(1);
      expect((await t.http().get('/health')).status).toBe(200);
    });
  });

  describe('REDIS_URL names the one node of a Redis Cluster that owns the queue prefix slot', () => {
    let cluster: RedisCluster;
    let t: TestApp;
    beforeAll(async () => {
      cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 0 });
      t = await createTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${cluster.masterOf(process.env.QUEUE_PREFIX!)}` } });
    });
    afterAll(async () => {
      await t?.close();
      await cluster?.stop();
    });

    it('answers 503 though the queues work there: the rate limits of other slots would be off, unseen', async () => {
      const answer = await readyUntil(t, downOn('queue', /REDIS_URL names one node of a Redis Cluster, not the cluster/), '/ready 503 naming the cluster node');
      expect(answer.body.error.queue.message).not.toMatch(/cannot take work/);
      expect(JSON.stringify(answer.body)).not.toMatch(/redis:\/\//);
    });
  });

  describe('Redis that refuses the credentials in REDIS_URL', () => {
    let redis: ChildProcess | undefined;
    let port: number;
    const apps: TestApp[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    beforeAll(async () => {
      port = await freePort();
      redis = await startRedisServer(port, { password: 'first-pass' });
      process.on('unhandledRejection', onUnhandled);
    });
    afterAll(async () => {
      process.off('unhandledRejection', onUnhandled);
      // Redis must answer the apps' password for them to close cleanly.
      await stopChild(redis);
      redis = await startRedisServer(port, { password: 'first-pass' });
      for (const app of apps) await app.close();
      await stopChild(redis);
    });
    const passwordSeen = (answer: Answer) => JSON.stringify(answer.body).includes('-pass');

    it('a process whose Redis comes back with another password stays up and says so, and is ready again once the password is right', async () => {
      const t = await createTestApp({ env: { REDIS_URL: `redis://:first-pass@127.0.0.1:${port}` } });
      apps.push(t);
      await readyUntil(t, isReady, '/ready 200 with the password accepted');
      await stopChild(redis);
      redis = await startRedisServer(port, { password: 'second-pass' });
      const refused = await readyUntil(t, downOn('queue', /Redis refused the credentials in REDIS_URL/), '/ready 503 naming the refused credentials');
      expect(passwordSeen(refused)).toBe(false);
      // Before the fix, ioredis's own subscribe of a reconnected connection was rejected with the
      // refused AUTH (the old password in it), unhandled: the process ended.
      await waitUntil(async () => (await t.http().get('/health')).status === 200, 'the process to answer /health');
      expect(unhandled.filter((reason) => String(reason).includes('WRONGPASS'))).toEqual([]);
      await stopChild(redis);
      redis = await startRedisServer(port, { password: 'first-pass' });
      await readyUntil(t, isReady, '/ready 200 again once the password is accepted');
      // Closed here: the next test counts the connections waiting for jobs.
      await t.close();
      apps.splice(apps.indexOf(t), 1);
    });

    it('processing that could not start, its credentials refused, is started again once they are accepted; until then /ready says why', async () => {
      const t = await createTestApp({ env: { REDIS_URL: `redis://:later-pass@127.0.0.1:${port}` } });
      apps.push(t);
      const refused = await readyUntil(t, downOn('queue', /Redis refused the credentials in REDIS_URL/), '/ready 503 naming the refused credentials');
      expect(passwordSeen(refused)).toBe(false);
      // Now Redis takes that password: the connections get in, and each queue's processing, which
      // Bull left stopped, is started again by the service.
      const admin = new Redis({ port, host: '127.0.0.1', password: 'first-pass', maxRetriesPerRequest: 1 });
      try {
        await admin.config('SET', 'requirepass', 'later-pass');
      } finally {
        admin.disconnect();
      }
      await readyUntil(t, isReady, '/ready 200 once every queue processes again', 60_000);
      // Each queue's blocking connection waits for the next job (BRPOPLPUSH): processing runs.
      const redisNow = new Redis({ port, host: '127.0.0.1', password: 'later-pass', maxRetriesPerRequest: 1 });
      try {
        const waiting = async () => ((await redisNow.client('LIST')) as string).split('\n').filter((line) => line.includes('cmd=brpoplpush')).length;
        await waitUntil(async () => (await waiting()) >= t.app.get(ServiceQueues).all().length, 'a blocking wait for jobs on every queue');
        // Put back for the close in afterAll.
        await redisNow.config('SET', 'requirepass', 'first-pass');
      } finally {
        redisNow.disconnect();
      }
    });
  });

  describe('Redis stopped, hung, and back', () => {
    let redis: ChildProcess | undefined;
    let port: number;
    let t: TestApp;
    beforeAll(async () => {
      port = await freePort();
      redis = await startRedisServer(port);
      t = await createTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
    });
    afterAll(async () => {
      if (redis?.signalCode === 'SIGSTOP' || redis?.exitCode === null) redis?.kill('SIGCONT');
      // Redis must answer for the app to close cleanly.
      if (!redis || redis.exitCode !== null || redis.signalCode !== null) redis = await startRedisServer(port).catch(() => undefined);
      await t?.close();
      await stopChild(redis);
    });

    it('answers 200, then 503 naming the queue while Redis is down, then 200 once it is back', async () => {
      await readyUntil(t, isReady, '/ready 200 with the private Redis up');
      await stopChild(redis);
      redis = undefined;
      const down = await readyUntil(t, downOn('queue', /Redis connection is (reconnecting|connecting|close|end)/), '/ready 503 naming the queue');
      expect(down.body.message).toMatch(/queue \S+ cannot take work/);
      expect(down.body.details.postgres).toEqual({ status: 'up' });
      expect((await readinessMetrics(t, 'queue')).up).toBe(0);
      expect((await t.http().get('/health')).status).toBe(200);
      redis = await startRedisServer(port);
      await readyUntil(t, isReady, '/ready 200 again once Redis is back');
      expect((await readinessMetrics(t, 'queue')).up).toBe(1);
    });

    it('answers 503 within 3 s while Redis hangs (the process stopped, its connections open)', async () => {
      await readyUntil(t, isReady, '/ready 200 before the hang');
      redis!.kill('SIGSTOP');
      try {
        const hung = await ready(t);
        expect(hung.status).toBe(503);
        expect(hung.body.error.queue.message).toMatch(/no answer within 2 s/);
        expect(hung.ms).toBeLessThan(3000);
      } finally {
        redis!.kill('SIGCONT');
      }
      await readyUntil(t, isReady, '/ready 200 once Redis answers again');
    });
  });

  describe('PostgreSQL read-only', () => {
    const database = process.env.TEST_DATABASE_NAME!;
    let admin: Client;
    let t: TestApp;
    beforeAll(async () => {
      admin = new Client({ connectionString: BASE_DATABASE_URL });
      await admin.connect();
      t = await createTestApp();
    });
    afterAll(async () => {
      await t?.close();
      await admin?.end();
    });

    it('answers 503 naming PostgreSQL writes while new sessions are read-only, then 200 again', async () => {
      await readyUntil(t, isReady, '/ready 200 before');
      await admin.query(`ALTER DATABASE ${database} SET default_transaction_read_only = on`);
      try {
        const down = await readyUntil(t, downOn('postgres', /PostgreSQL cannot be written: new sessions are read-only/), '/ready 503 naming PostgreSQL writes');
        expect(down.body.details.queue).toEqual({ status: 'up' });
        expect(down.body.message).toMatch(/^not ready: postgres: PostgreSQL cannot be written/);
        expect(JSON.stringify(down.body)).not.toMatch(/postgres(ql)?:\/\//);
        const metrics = await readinessMetrics(t, 'postgres');
        expect(metrics.up).toBe(0);
        expect(metrics.notReady).toBeGreaterThanOrEqual(1);
      } finally {
        await admin.query(`ALTER DATABASE ${database} RESET default_transaction_read_only`);
      }
      await readyUntil(t, isReady, '/ready 200 once the database takes writes again');
      expect((await readinessMetrics(t, 'postgres')).up).toBe(1);
    });
  });

  describe('the outbox relay stalled while events wait', () => {
    let all: TestApp;
    let api: TestApp;
    let worker: TestApp;
    let workerMetricsPort: number;
    let db: Client;
    let eventId: string | undefined;
    beforeAll(async () => {
      const env = { READY_OUTBOX_STALL_SECONDS: '1' };
      all = await createTestApp({ env });
      api = await createTestApp({ env: { ...env, PROCESS_ROLE: 'api' } });
      workerMetricsPort = await freePort();
      worker = await createTestApp({ env: { ...env, PROCESS_ROLE: 'worker', METRICS_PORT: String(workerMetricsPort) } });
      db = new Client({ connectionString: process.env.DATABASE_URL });
      await db.connect();
    });
    afterAll(async () => {
      if (eventId) await db.query('DELETE FROM outbox_events WHERE id = $1', [eventId]);
      await db?.end();
      await worker?.close();
      await api?.close();
      await all?.close();
    });

    it('a relaying process answers 503 naming the relay; an api process stays ready (it relays nothing)', async () => {
      await readyUntil(all, isReady, '/ready 200 with the relay running');
      await all.app.get(OutboxRelay).stop();
      await worker.app.get(OutboxRelay).stop();
      const { orgId } = await createSession(all.admin);
      // An event waiting longer than the bound, that no relay takes.
      const [row] = (
        await db.query<{ id: string }>(
          `INSERT INTO outbox_events (type, org_id, data, occurred_at) VALUES ('contact.merged', $1, '{}', now() - interval '10 seconds') RETURNING id`,
          [orgId],
        )
      ).rows;
      eventId = row.id;
      const down = await readyUntil(
        all,
        downOn('outbox', /the outbox relay of this process is stopped while events wait \(the oldest for \d+ s; READY_OUTBOX_STALL_SECONDS is 1\)/),
        '/ready 503 naming the relay',
      );
      expect(down.body.details.queue).toEqual({ status: 'up' });
      expect(down.body.details.postgres).toEqual({ status: 'up' });
      const metrics = await readinessMetrics(all, 'outbox');
      expect(metrics.up).toBe(0);
      expect(metrics.notReady).toBeGreaterThanOrEqual(1);

      // A worker serves no API: its /ready is on METRICS_PORT, and says the same.
      const workerReady = `http://127.0.0.1:${workerMetricsPort}/ready`;
      const workerDown = await waitUntil(
        async () => {
          const res = await fetch(workerReady);
          const body = (await res.json()) as any;
          return res.status === 503 && /the outbox relay of this process is stopped/.test(body.error?.outbox?.message ?? '') && body;
        },
        'the worker to answer 503 on METRICS_PORT naming the relay',
        { intervalMs: 200 },
      );
      expect(Object.keys(workerDown.details).sort()).toEqual(['delivery_log', 'outbox', 'postgres', 'queue']);
      expect((await fetch(`http://127.0.0.1:${workerMetricsPort}/health`)).status).toBe(200);

      // The api role does not relay: the same wait does not take it out of the load balancer.
      const apiAnswer = await readyUntil(api, isReady, 'the api process to answer 200');
      expect(Object.keys(apiAnswer.body.details).sort()).toEqual(['postgres', 'queue']);

      // The event gone (relayed elsewhere, say), nothing waits: ready again.
      await db.query('DELETE FROM outbox_events WHERE id = $1', [eventId]);
      eventId = undefined;
      await readyUntil(all, isReady, '/ready 200 once no event waits');
      expect((await readinessMetrics(all, 'outbox')).up).toBe(1);
    });
  });
});
