import { ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fixtureEvent } from '../fixtures/events';
import { DeliveryQueue } from '../../src/delivery/delivery-queue';
import {
  closeDeliveryTestApp,
  createDeliveryTestApp,
  deliveryEnv,
  DeliveryTestApp,
  freePort,
  publish,
  publishAll,
  register,
  requestsTo,
  waitForRequests,
} from '../support/delivery';
import { TestReceiver } from '../support/receiver';
import { startRedisServer, stopChild as stopRedisChild } from '../support/redis-server';
import { createSession, Session } from '../support/session';
import { sleep, waitUntil } from '../support/wait';

jest.setTimeout(300_000);

const ROOT = resolve(__dirname, '../..');

/** Child processes this file started; each is stopped by its own handle, never by name. */
const children = new Set<ChildProcess>();

async function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  await stopRedisChild(child, signal);
  if (child) children.delete(child);
}

afterAll(async () => {
  for (const child of [...children]) await stopChild(child);
});

/** A private redis-server in the foreground on `port`, answering PING before this resolves. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = await startRedisServer(port);
  children.add(child);
  return child;
}

describe('resilience: Redis outage', () => {
  const OUTAGE_MS = 1000;
  let t: DeliveryTestApp;
  const receiver = new TestReceiver();
  let base: string;
  let redisPort: number;
  let redis: ChildProcess | undefined;
  let s: Session;

  beforeAll(async () => {
    base = await receiver.start();
    redisPort = await freePort();
    redis = await startRedis(redisPort);
    t = await createDeliveryTestApp({
      queueTag: 'redisdown',
      env: {
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        DELIVERY_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
        DELIVERY_SWEEP_INTERVAL_MS: '500',
        DELIVERY_SWEEP_GRACE_MS: '1000',
        OUTBOX_POLL_INTERVAL_MS: '200',
      },
    });
    s = await createSession(t.admin);
  });
  afterAll(async () => {
    // Redis must answer for the app to close cleanly.
    if (!redis || redis.exitCode !== null || redis.signalCode !== null) redis = await startRedis(redisPort).catch(() => undefined);
    await closeDeliveryTestApp(t);
    await stopChild(redis, 'SIGTERM');
    await receiver.stop();
  });

  it('events published while Redis is down commit at once and are all delivered, without Redis', async () => {
    const { endpoint } = await register(t, s.apiKey, { url: `${base}/outage`, events: ['contact.merged'] });
    const event = fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null });
    await publish(t, event);
    await waitForRequests(receiver, '/outage', 1);

    await stopChild(redis, 'SIGKILL');
    redis = undefined;
    const killedAt = Date.now();

    const started = Date.now();
    const outboxIds: string[] = [];
    for (let i = 0; i < 20; i++) outboxIds.push(await publish(t, event));
    // Publishing needs only PostgreSQL.
    expect(Date.now() - started).toBeLessThan(3000);
    const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM outbox_events WHERE id = ANY($1::bigint[])', [outboxIds]);
    expect(count).toBe(20);

    // An outage long enough for the relay (polling every 200 ms) and the sweep (every 500 ms) to
    // run into it several times. Fan-out hands its first attempts to the worker of its own process
    // (this app is PROCESS_ROLE=all), which needs no Redis to send them: they go out during the
    // outage, and none is lost or sent twice.
    await sleep(OUTAGE_MS);
    await waitForRequests(receiver, '/outage', 21, 30_000);
    expect(requestsTo(receiver, '/outage').filter((r) => r.receivedAt >= killedAt)).toHaveLength(20);
    redis = await startRedis(redisPort);
    // The queue's connections are back before the app closes (Bull's close waits for them).
    const queue = t.app.get(DeliveryQueue).queue;
    await waitUntil(
      () =>
        queue.getJobCounts().then(
          () => true,
          () => false,
        ),
      'the delivery queue to answer again',
      { timeoutMs: 30_000 },
    );

    const rows: Array<{ source_event_id: string; event_id: string }> = await t.db.query(
      'SELECT source_event_id::text, event_id FROM webhook_deliveries WHERE endpoint_id = $1 AND source_event_id = ANY($2::bigint[])',
      [endpoint.id, outboxIds],
    );
    expect(rows.map((r) => r.source_event_id).sort()).toEqual([...outboxIds].sort());
    const received = new Set(requestsTo(receiver, '/outage').map((r) => JSON.parse(r.body).id));
    expect(rows.filter((r) => !received.has(r.event_id))).toEqual([]);
    await waitUntil(
      async () => {
        const [{ open }] = await t.db.query(`SELECT count(*)::int AS open FROM webhook_deliveries WHERE endpoint_id = $1 AND status <> 'succeeded'`, [
          endpoint.id,
        ]);
        return open === 0;
      },
      'every delivery to be succeeded',
      { timeoutMs: 10_000 },
    );
  });
});

describe('resilience: a worker killed with SIGKILL mid-burst', () => {
  const EVENTS = 500;
  const WORKER_ENV = {
    DELIVERY_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
    DELIVERY_TIMEOUT_MS: '1000',
    DELIVERY_CONCURRENCY: '10',
    DELIVERY_SWEEP_INTERVAL_MS: '500',
    DELIVERY_SWEEP_GRACE_MS: '1000',
  };
  let t: DeliveryTestApp;
  const receiver = new TestReceiver();
  let base: string;
  let s: Session;

  /** `node -r ts-node/register/transpile-only src/main.ts` as PROCESS_ROLE=worker; resolves once it logged "worker started". */
  async function startWorker(name: string): Promise<ChildProcess> {
    const env = {
      ...process.env,
      ...deliveryEnv('crash', WORKER_ENV),
      PROCESS_ROLE: 'worker',
      LOG_LEVEL: 'info',
      TS_NODE_TRANSPILE_ONLY: '1',
    } as NodeJS.ProcessEnv;
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let output = '';
    const ready = new Promise<void>((done, fail) => {
      const onData = (c: Buffer) => {
        output += c.toString();
        if (output.includes('worker started')) done();
        if (output.length > 200_000) output = output.slice(-100_000);
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code, signal) => fail(new Error(`worker ${name} exited (${code ?? signal}) before it started:\n${output.slice(-3000)}`)));
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, fail) => {
      // A worker boots the whole service: 45 s was not enough on an overloaded 2-core machine.
      timer = setTimeout(() => fail(new Error(`worker ${name} did not start within 120 s:\n${output.slice(-3000)}`)), 120_000);
    });
    try {
      await Promise.race([ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
    return child;
  }

  beforeAll(async () => {
    base = await receiver.start();
    // Slow enough that the burst is still under way when the worker is killed.
    receiver.respond = () => ({ status: 200, body: 'ok', delayMs: 20 });
    t = await createDeliveryTestApp({ queueTag: 'crash', env: { ...WORKER_ENV, PROCESS_ROLE: 'api' } });
    s = await createSession(t.admin);
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });

  it('loses no event: every evt id reaches the receiver at least once after a restart', async () => {
    const { endpoint } = await register(t, s.apiKey, { url: `${base}/burst`, events: ['message.received'] });
    const line = s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.id;

    const first = await startWorker('1');
    const outboxIds: string[] = [];
    for (let batch = 0; batch < EVENTS / 50; batch++) {
      outboxIds.push(
        ...(await publishAll(
          t,
          Array.from({ length: 50 }, () => fixtureEvent('message.received', { orgId: s.orgId, lineId: line })),
        )),
      );
    }
    await waitForRequests(receiver, '/burst', 100, 30_000);
    await stopChild(first, 'SIGKILL');
    const atKill = requestsTo(receiver, '/burst').length;
    expect(atKill).toBeLessThan(EVENTS); // the kill really was mid-burst

    const second = await startWorker('2');

    /** What the receiver has of the burst so far; named in the failure when an event is missing. */
    const progress = async () => {
      const rows: Array<{ event_id: string }> = await t.db.query(
        'SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1 AND source_event_id = ANY($2::bigint[])',
        [endpoint.id, outboxIds],
      );
      const received = new Set(requestsTo(receiver, '/burst').map((r) => JSON.parse(r.body).id));
      return { deliveryRows: rows.length, distinctReceived: received.size, missing: rows.filter((r) => !received.has(r.event_id)).length };
    };
    let last = await progress();
    await waitUntil(
      async () => {
        last = await progress();
        return last.deliveryRows === EVENTS && last.missing === 0;
      },
      () => `all ${EVENTS} events at the receiver after the restart (${JSON.stringify(last)})`,
      { timeoutMs: 90_000, intervalMs: 250 },
    );
    await stopChild(second, 'SIGTERM');
  });
});
