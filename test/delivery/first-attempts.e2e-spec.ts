import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { FIRST_ATTEMPT_FRESH_MS } from '../../src/delivery/delivery-attempts.service';
import { DeliveryAttemptsRepository } from '../../src/delivery/delivery-attempts.repository';
import { DeliveryQueue } from '../../src/delivery/delivery-queue';
import { DeliveryProcessor } from '../../src/delivery/delivery.processor';
import { toolOk } from '../support/mcp';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { ReceivedRequest } from '../support/receiver';
import { createSession } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * Fan-out hands the first attempts it made to the worker of its own process, with what sending
 * them needs (the endpoint's URL and keys, the payload), read in its transaction; no Bull job is
 * made, and an attempt that starts within FIRST_ATTEMPT_FRESH_MS is claimed by its row alone. One
 * that starts later reads the endpoint and the line access again at its claim, as every retry
 * does. Real inbound SMS through a PROCESS_ROLE=all app, a real receiver, Standard Webhooks'
 * own verifier.
 */

interface Row {
  id: string;
  status: string;
  attempt_count: number;
  last_error: string | null;
}

function standardHeaders(req: ReceivedRequest): Record<string, string> {
  return {
    'webhook-id': req.headers['webhook-id'] as string,
    'webhook-timestamp': req.headers['webhook-timestamp'] as string,
    'webhook-signature': req.headers['webhook-signature'] as string,
  };
}

describe('first attempts handed over by fan-out', () => {
  let m: MessagingTestApp;
  /** Requests to paths under /hold/ wait until this resolves. */
  let release: () => void = () => undefined;
  let held: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    // One request at a time per endpoint, a fixed limit: a second event's attempt waits for the first.
    m = await createMessagingTestApp({
      DELIVERY_RETRY_SCHEDULE: '200ms',
      DELIVERY_ENDPOINT_CONCURRENCY: '1',
      DELIVERY_ENDPOINT_CONCURRENCY_MAX: '1',
    });
    let failedOnce = new Set<string>();
    m.receiver.respond = (req) => {
      if (req.url.startsWith('/hold/')) return { status: 200, body: 'ok', until: held };
      if (req.url.startsWith('/flaky/') && !failedOnce.has(req.url)) {
        failedOnce = new Set([...failedOnce, req.url]);
        return { status: 500, body: 'not yet' };
      }
      return { status: 200, body: 'ok' };
    };
  });
  afterAll(async () => {
    release();
    await m?.close();
  });

  const rowsOf = (endpointId: string): Promise<Row[]> =>
    m.db.query(`SELECT id, status, attempt_count, last_error FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at, id`, [endpointId]);
  const at = (path: string): ReceivedRequest[] => m.receiver.requests.filter((r) => r.url === path);

  it('sends the first attempt without a job, with the bytes and signature a retry that read everything again sends', async () => {
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const path = `/flaky/${randomBytes(4).toString('hex')}`;
    const { endpoint, signingSecret } = await toolOk(m, s.apiKey, 'register_webhook', { url: `${m.receiverUrl}${path}`, events: ['message.received'] });
    // Watched, not replaced: both run as they do in production.
    const enqueueBatches = jest.spyOn(m.app.get(DeliveryQueue), 'enqueueBatches');
    const claimFirst = jest.spyOn(m.app.get(DeliveryAttemptsRepository), 'claimFirst');
    try {
      await inboundSms(m, s.lines[0].address, partnerPhone(), 'first attempt, then its retry');
      const [row] = await waitUntil(async () => {
        const rows = await rowsOf(endpoint.id);
        return rows.length === 1 && rows[0].status === 'succeeded' && rows;
      }, 'the delivery to succeed on its retry');
      expect(row.attempt_count).toBe(2);
      // Fan-out handed the first attempt over here, claimed by its row alone; only the retry went through Redis.
      expect(enqueueBatches).not.toHaveBeenCalled();
      expect(claimFirst.mock.calls.flatMap(([ids]) => ids)).toEqual([row.id]);
    } finally {
      enqueueBatches.mockRestore();
      claimFirst.mockRestore();
    }
    const [first, retry] = at(path);
    // The first attempt was sent on what fan-out read; the retry was claimed the full way, reading
    // the stored payload and the endpoint's keys: the same envelope, byte for byte, and both verify.
    expect(first.body).toBe(retry.body);
    expect(first.headers['webhook-id']).toBe(retry.headers['webhook-id']);
    const verifier = new Webhook(signingSecret as string);
    expect(verifier.verify(first.body, standardHeaders(first))).toMatchObject({ type: 'message.received', endpointId: endpoint.id });
    expect(verifier.verify(retry.body, standardHeaders(retry))).toMatchObject({ type: 'message.received', endpointId: endpoint.id });
    const attempts = await m.db.query(
      `SELECT attempt_number, status_code FROM webhook_delivery_attempt_log a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 ORDER BY attempt_number`,
      [endpoint.id],
    );
    expect(attempts).toEqual([
      { attempt_number: 1, status_code: 500 },
      { attempt_number: 2, status_code: 200 },
    ]);
  });

  it('a first attempt that waited past the hand-over reads the line access again, and is not sent once access ended', async () => {
    held = new Promise<void>((resolve) => (release = resolve));
    const s = await createSession(m.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const line = s.lines[0];
    const path = `/hold/${randomBytes(4).toString('hex')}`;
    const { endpoint } = await toolOk(m, s.apiKey, 'register_webhook', { url: `${m.receiverUrl}${path}`, events: ['message.received'] });

    // The first event's attempt is held by the receiver; the second's waits behind it for the endpoint's one slot.
    await inboundSms(m, line.address, partnerPhone(), 'held at the receiver');
    await waitUntil(() => at(path).length === 1, 'the first attempt to reach the receiver');
    await inboundSms(m, line.address, partnerPhone(), 'waits for the slot');
    const processor = m.app.get(DeliveryProcessor);
    await waitUntil(async () => (await rowsOf(endpoint.id)).length === 2 && processor.parkedCount() === 1, 'the second attempt to wait in the worker');
    const handedOverAt = Date.now();

    // Longer than what fan-out read stands for, and then the owner's access to the line ends.
    await waitUntil(() => Date.now() - handedOverAt > FIRST_ATTEMPT_FRESH_MS, 'the hand-over to be older than its freshness', { intervalMs: 100 });
    expect((await m.admin.delete(`/admin/lines/${line.id}/members/${s.userId}`)).status).toBe(204);
    release();

    const rows = await waitUntil(async () => {
      const found = await rowsOf(endpoint.id);
      return found.every((r) => r.status !== 'pending') && found;
    }, 'both deliveries to end');
    expect(rows.map((r) => r.status)).toEqual(['succeeded', 'cancelled']);
    expect(rows[1].attempt_count).toBe(0);
    expect(rows[1].last_error).toMatch(/no longer receives this line's events/);
    expect(at(path)).toHaveLength(1);
  });
});

describe('first attempts past the hand-over bound', () => {
  let m: MessagingTestApp;
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    // One attempt at a time in the worker: up to ten (10 × DELIVERY_CONCURRENCY) wait for it with no job.
    // A held request is not timed out meanwhile.
    m = await createMessagingTestApp({ DELIVERY_CONCURRENCY: '1', DELIVERY_TIMEOUT_MS: '60000' });
    m.receiver.respond = () => ({ status: 200, body: 'ok', until: held });
  });
  afterAll(async () => {
    release();
    await m?.close();
  });

  it("takes a fan-out's attempts up to the bound and puts only the rest in batch jobs; each event is delivered once", async () => {
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const paths = [`/hold/${randomBytes(4).toString('hex')}`, `/hold/${randomBytes(4).toString('hex')}`];
    const endpoints: string[] = [];
    for (const path of paths) {
      const { endpoint } = await toolOk(m, s.apiKey, 'register_webhook', { url: `${m.receiverUrl}${path}`, events: ['message.received'] });
      endpoints.push(endpoint.id);
    }
    const requests = () => m.receiver.requests.filter((r) => paths.includes(r.url));
    const processor = m.app.get(DeliveryProcessor);
    const enqueueBatches = jest.spyOn(m.app.get(DeliveryQueue), 'enqueueBatches');
    try {
      // Each event fans out to two attempts. The first event's first attempt holds the worker's one
      // slot at the receiver, its second waits; five more events bring eleven waiting, one past the bound.
      await inboundSms(m, s.lines[0].address, partnerPhone(), 'held');
      await waitUntil(() => requests().length === 1 && processor.waitingCount() === 1, 'the first attempt to reach the receiver, the second to wait');
      for (let i = 0; i < 5; i += 1) await inboundSms(m, s.lines[0].address, partnerPhone(), `behind it ${i}`);
      // However the relay batched the five: ten wait here, the one past the bound went to Redis
      // (before, the whole batch that crossed it did), and this worker's Bull took its job, which waits too.
      await waitUntil(
        () => processor.waitingCount() === 11,
        () => `eleven attempts to wait for the slot (${processor.waitingCount()})`,
      );
      const spilled = enqueueBatches.mock.calls.flatMap(([batch]) => batch);
      expect(spilled).toHaveLength(1);
      expect(spilled[0]).toMatchObject({ attempt: 1 });
      expect(endpoints).toContain(spilled[0].endpointId);
    } finally {
      enqueueBatches.mockRestore();
      release();
    }
    const rows = await waitUntil(async () => {
      const found: Array<{ status: string; attempt_count: number }> = await m.db.query(
        `SELECT status, attempt_count FROM webhook_deliveries WHERE endpoint_id = ANY ($1::uuid[])`,
        [endpoints],
      );
      return found.length === 12 && found.every((r) => r.status === 'succeeded') && found;
    }, 'the twelve deliveries to succeed');
    expect(rows.every((r) => r.attempt_count === 1)).toBe(true);
    expect(requests()).toHaveLength(12);
    expect(new Set(requests().map((r) => `${r.url} ${r.headers['webhook-id'] as string}`)).size).toBe(12);
  });
});
