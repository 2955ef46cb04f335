import { Logger } from '@nestjs/common';
import { RedisClient } from '../../src/queue/queue.module';
import { createTestApp } from '../support/app';
import { Hook, inboundSms, MessagingTestApp, createMessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { rpc } from '../support/mcp';
import { RedisCluster } from '../support/redis-cluster';
import { createSession } from '../support/session';
import { SseClient } from '../support/sse';
import { privateQueuePrefix } from '../support/test-env';
import { waitUntil } from '../support/wait';
import { signInBrowser } from '../support/web';

/**
 * The service on a Redis Cluster (issue 46; docs/redis-cluster.md): a private 3-master,
 * 3-replica cluster from Debian's redis-server, REDIS_URL=redis+cluster://<every node>. Webhook
 * delivery end to end, a retry (a Bull delayed job), live pages over pub/sub, a rate limit, the
 * keys spread over more than one slot; and a redis:// URL naming one node of the cluster logged
 * as the misconfiguration it is.
 */
const RATE = 20;

describe('on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let m: MessagingTestApp;
  let prefix: string;

  beforeAll(async () => {
    cluster = await RedisCluster.start();
    prefix = privateQueuePrefix('cluster');
    m = await createMessagingTestApp({
      REDIS_URL: cluster.url,
      QUEUE_PREFIX: prefix,
      DELIVERY_RETRY_SCHEDULE: '1s,1s',
      MCP_RATE_LIMIT: String(RATE),
      MCP_MAX_BATCH: '10',
      RATE_LIMIT_REDIS_TIMEOUT_MS: '5000',
    });
  });
  afterAll(async () => {
    await m?.close();
    await cluster?.stop();
  });

  it('delivers an inbound SMS to a real receiver as a signed webhook', async () => {
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const hook = await Hook.register(m, s.apiKey, { events: ['message.received'] });
    const sms = await inboundSms(m, s.lines[0].address, partnerPhone(), 'hello over the cluster');
    const [event] = await hook.waitFor(1, 'message.received');
    expect(event.data.message.id).toBe(sms.messageId);
    expect(event.data.message.body).toBe('hello over the cluster');
  });

  it('retries a failed attempt from a delayed job', async () => {
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const hook = await Hook.register(m, s.apiKey, { events: ['message.received'] });
    const marker = `once refused ${Date.now()}`;
    const previous = m.receiver.respond;
    let refused = 0;
    m.receiver.respond = (req) => (req.body.includes(marker) && refused++ === 0 ? { status: 503, body: 'not yet' } : previous(req));
    try {
      const sms = await inboundSms(m, s.lines[0].address, partnerPhone(), marker);
      const [first, second] = await waitUntil(() => {
        const arrived = m.receiver.requests.filter((r) => r.body.includes(marker));
        return arrived.length >= 2 && arrived;
      }, 'the first attempt and its retry');
      // The retry waited in Bull's delayed set for its step of DELIVERY_RETRY_SCHEDULE (1 s).
      expect(second.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(900);
      expect(second.headers['x-service-event-id']).toBe(first.headers['x-service-event-id']);
      expect(hook.events('message.received').map((e) => e.data.message.id)).toEqual([sms.messageId, sms.messageId]);
      await waitUntil(async () => {
        const rows: Array<{ status: string }> = await m.db.query(`SELECT status FROM webhook_deliveries WHERE endpoint_id = $1`, [hook.id]);
        return rows.length === 1 && rows[0].status === 'succeeded';
      }, 'the one delivery to be recorded as succeeded');
    } finally {
      m.receiver.respond = previous;
    }
  });

  it('is ready on the cluster: every check up, the queue probe written in the queues’ slot', async () => {
    const res = await m.http().get('/ready');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.info)).toEqual(expect.arrayContaining(['queue', 'postgres', 'outbox']));
  });

  it('tells a live page of an inbound SMS through cluster pub/sub', async () => {
    const owner = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const browser = await signInBrowser(m, owner.userId);
    const stream = await SseClient.open(m.baseUrl, '/live/events', browser.cookie);
    try {
      expect(stream.status).toBe(200);
      await waitUntil(() => stream.retry, 'the stream to start');
      const sms = await inboundSms(m, owner.lines[0].address, partnerPhone(), 'live');
      // Only the Redis channel carries it from the relay's publish to the stream (src/live).
      await waitUntil(() => stream.find('message.received', (d) => d.messageId === sms.messageId), 'message.received on the live stream');
    } finally {
      stream.disconnect();
    }
  });

  it('refuses calls over MCP_RATE_LIMIT with 429, counted in the cluster', async () => {
    const s = await createSession(m.admin);
    for (let i = 0; i < RATE; i++) expect((await rpc(m, s.apiKey, 'ping')).status).toBe(200);
    const refused = await rpc(m, s.apiKey, 'ping');
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/^rate limit reached: this API key may make 20 calls per 60 s \(MCP_RATE_LIMIT\)/);
  });

  it('spreads its keys: the queues in their hash-tagged slot, rate-limit counters in slots of their own, on more than one master', async () => {
    // A few more keys with a counter each, so the counters do not all fall on the queues' master by chance.
    for (let i = 0; i < 6; i++) expect((await rpc(m, (await createSession(m.admin)).apiKey, 'ping')).status).toBe(200);
    const queueMaster = cluster.masterOf(prefix);
    const queueSlot = Number(cluster.cli(queueMaster, 'CLUSTER', 'KEYSLOT', prefix).stdout.trim());
    expect(Number(cluster.cli(queueMaster, 'CLUSTER', 'COUNTKEYSINSLOT', String(queueSlot)).stdout.trim())).toBeGreaterThan(0);
    expect(cluster.slotsInUse()).toBeGreaterThanOrEqual(2);
    const mastersWithKeys = cluster.mastersAndSlots().filter(({ port }) => Number(cluster.cli(port, 'DBSIZE').stdout.trim()) > 0);
    expect(mastersWithKeys.length).toBeGreaterThanOrEqual(2);
  });

  it('a redis:// URL naming a master that does not serve the queues’ slot is logged as an error, not taken silently', async () => {
    const errors: string[] = [];
    const spy = jest.spyOn(Logger.prototype, 'error').mockImplementation(function (message: unknown) {
      errors.push(String(message));
    });
    const single = await createTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${cluster.masterNotOwning(prefix)}`, QUEUE_PREFIX: prefix } });
    try {
      const client = single.app.get(RedisClient);
      await waitUntil(() => client.clusterMismatch, 'the single-node client to notice the cluster');
      expect(client.clusterMismatch).toMatch(/^REDIS_URL names one node of a Redis Cluster.*redis\+cluster:\/\//);
      expect(errors).toContain(client.clusterMismatch);
      // …and readiness says so: the queue check's write gets MOVED.
      const ready = await single.http().get('/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.message).toMatch(/queue [\w-]+ cannot take work: Redis answered MOVED/);
    } finally {
      spy.mockRestore();
      await single.close();
    }
  });
});
