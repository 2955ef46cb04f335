import { fixtureEvent } from '../fixtures/events';
import {
  afterPendingRetries,
  attemptsOf,
  closeDeliveryTestApp,
  createDeliveryTestApp,
  deliveriesOf,
  DeliveryTestApp,
  deleteRegisteredEndpoints,
  EVT_ID,
  freePort,
  hmacHex,
  parseSignature,
  publish,
  publishAll,
  register,
  requestsTo,
  routeResponses,
  waitForRequests,
  waitForStatus,
} from '../support/delivery';
import { ISO_MS, toolError, toolOk } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { sleep, waitUntil } from '../support/wait';

const TIMEOUT_MS = 1000;
/** Every retry comes this long after the attempt before it (DELIVERY_RETRY_SCHEDULE, 5 retries). */
const RETRY_MS = 500;

/**
 * Outcomes of one attempt, the compressed retry schedule, and resend. Every attempt is checked in
 * the delivery log (webhook_delivery_attempt_log) and in list_webhook_deliveries, not only at the receiver.
 */
jest.setTimeout(30_000);

describe('delivery outcomes, retries and resend', () => {
  let t: DeliveryTestApp;
  const receiver = new TestReceiver();
  const responders = routeResponses(receiver);
  let base: string;
  let s: Session;
  let n = 0;

  beforeAll(async () => {
    base = await receiver.start();
    t = await createDeliveryTestApp({
      queueTag: 'retries',
      env: { DELIVERY_RETRY_SCHEDULE: Array(5).fill(`${RETRY_MS}ms`).join(','), DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS) },
    });
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });
  afterEach(() => deleteRegisteredEndpoints(t));

  const emailLine = () => s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.id;

  /** Registers `<base><path>` for contact.merged (or `events`), publishes one event, returns the endpoint id. */
  async function deliverOne(path: string, options: { url?: string; events?: string[]; mode?: string } = {}): Promise<string> {
    const { endpoint } = await register(t, s.apiKey, {
      url: options.url ?? `${base}${path}`,
      events: options.events ?? ['contact.merged'],
      ...(options.mode ? { mode: options.mode } : {}),
    });
    const kind = (options.events?.[0] ?? 'contact.merged') as 'contact.merged' | 'message.received';
    await publish(t, fixtureEvent(kind, { orgId: s.orgId, lineId: emailLine() }));
    return endpoint.id;
  }

  const uniquePath = (name: string) => `/${name}-${++n}`;

  describe('outcome of an attempt', () => {
    it.each([
      [201, 'nope'],
      [204, ''],
      [200, 'nope'],
      [299, '{"error":"this body says failure but the status is 2xx"}'],
    ])('%i with body %j succeeds on the first attempt', async (status, body) => {
      const path = uniquePath(`ok-${status}`);
      responders.set(path, () => ({ status, body }));
      const endpointId = await deliverOne(path);
      const delivery = await waitForStatus(t, endpointId, ['succeeded', 'retrying', 'failed']);
      expect(delivery.status).toBe('succeeded');
      expect(delivery.attempt_count).toBe(1);
      expect(delivery.last_status_code).toBe(status);
      expect(delivery.next_attempt_at).toBeNull();
      const attempts = await attemptsOf(t, delivery.id);
      expect(attempts).toEqual([expect.objectContaining({ attempt_number: 1, status_code: status, error_kind: null, response_body: body })]);
      expect(attempts[0].duration_ms).toBeGreaterThanOrEqual(0);
    });

    it("the attempt that succeeds is on its delivery's row, and the tools show it as an attempt", async () => {
      const path = uniquePath('ok-row');
      responders.set(path, () => ({ status: 202, body: 'taken' }));
      const endpointId = await deliverOne(path);
      const delivery = await waitForStatus(t, endpointId, ['succeeded', 'retrying', 'failed']);
      expect(delivery).toMatchObject({ status: 'succeeded', attempt_count: 1, last_status_code: 202, success_response_body: 'taken' });
      expect(delivery.success_duration_ms).toBeGreaterThanOrEqual(0);
      // No attempt row: the success is written once, on the delivery (migration SuccessOnDelivery).
      expect((await t.db.query('SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE delivery_id = $1', [delivery.id]))[0].n).toBe(0);
      const detail = await toolOk<{ delivery: { lastDurationMs: number | null }; attempts: Array<Record<string, unknown>> }>(
        t,
        s.apiKey,
        'get_webhook_delivery',
        {
          deliveryId: delivery.id,
        },
      );
      expect(detail.attempts).toEqual([
        {
          attemptNumber: 1,
          attemptedAt: delivery.last_attempt_at?.toISOString(),
          durationMs: delivery.success_duration_ms,
          statusCode: 202,
          errorKind: null,
          responseBody: 'taken',
        },
      ]);
      expect(detail.delivery.lastDurationMs).toBe(delivery.success_duration_ms);
      const list = await toolOk<{ deliveries: Array<{ id: string; lastDurationMs: number | null }> }>(t, s.apiKey, 'list_webhook_deliveries', { endpointId });
      expect(list.deliveries.find((d) => d.id === delivery.id)?.lastDurationMs).toBe(delivery.success_duration_ms);
    });

    it('a success that comes after its delivery stopped waiting is kept as an attempt row', async () => {
      const path = uniquePath('ok-late');
      // Cancelled while its attempt is under way (as disabling the endpoint cancels what waits),
      // and answered right after, well within the attempt's timeout.
      const cancelled = async () => {
        await t.db.query(
          `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL
            WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE url = $1)`,
          [`${base}${path}`],
        );
      };
      responders.set(path, () => ({ status: 200, body: 'late', until: cancelled() }));
      const endpointId = await deliverOne(path);
      await waitForRequests(receiver, path, 1);
      const [waiting] = await deliveriesOf(t, endpointId);
      const [attempt] = await waitUntil(async () => {
        const rows = await t.db.query('SELECT attempt_number, status_code, response_body FROM webhook_delivery_attempts WHERE delivery_id = $1', [waiting.id]);
        return rows.length > 0 && rows;
      }, 'the late success to be recorded');
      expect(attempt).toEqual({ attempt_number: 1, status_code: 200, response_body: 'late' });
      const [after] = await deliveriesOf(t, endpointId);
      expect(after).toMatchObject({ status: 'cancelled', success_duration_ms: null, success_response_body: null });
      const detail = await toolOk<{ attempts: Array<{ attemptNumber: number; statusCode: number }> }>(t, s.apiKey, 'get_webhook_delivery', {
        deliveryId: waiting.id,
      });
      expect(detail.attempts).toEqual([expect.objectContaining({ attemptNumber: 1, statusCode: 200, responseBody: 'late' })]);
    });

    it(`500 is a failure: recorded, then retrying with the next attempt ${RETRY_MS} ms later`, async () => {
      const path = uniquePath('e500');
      responders.set(path, () => ({ status: 500, body: 'boom' }));
      const endpointId = await deliverOne(path);
      const delivery = await waitForStatus(t, endpointId, ['retrying', 'succeeded', 'failed']);
      expect(delivery.status).toBe('retrying');
      expect(delivery.last_status_code).toBe(500);
      const [attempt] = await attemptsOf(t, delivery.id);
      expect(attempt).toMatchObject({ attempt_number: 1, status_code: 500, error_kind: null, response_body: 'boom' });
      const wait = delivery.next_attempt_at!.getTime() - new Date(attempt.attempted_at).getTime();
      expect(wait).toBeGreaterThanOrEqual(RETRY_MS - 100);
      expect(wait).toBeLessThanOrEqual(RETRY_MS + 100);
    });

    it('connection refused is a failed attempt with error kind connection_refused', async () => {
      const port = await freePort();
      const endpointId = await deliverOne('', { url: `http://127.0.0.1:${port}/hook` });
      const delivery = await waitForStatus(t, endpointId, ['retrying', 'succeeded', 'failed']);
      expect(delivery.status).toBe('retrying');
      expect(delivery.last_status_code).toBeNull();
      expect(delivery.last_error).toMatch(/^connection_refused/);
      const [attempt] = await attemptsOf(t, delivery.id);
      expect(attempt).toMatchObject({ attempt_number: 1, status_code: null, error_kind: 'connection_refused', response_body: null });
    });

    it(`a receiver answering after DELIVERY_TIMEOUT_MS (${TIMEOUT_MS} ms) is a timeout`, async () => {
      const path = uniquePath('slow');
      responders.set(path, () => ({ status: 200, body: 'too late', delayMs: TIMEOUT_MS + 1500 }));
      const endpointId = await deliverOne(path);
      const delivery = await waitForStatus(t, endpointId, ['retrying', 'succeeded', 'failed'], 5000);
      expect(delivery.status).toBe('retrying');
      const [attempt] = await attemptsOf(t, delivery.id);
      expect(attempt).toMatchObject({ attempt_number: 1, status_code: null, error_kind: 'timeout' });
      expect(attempt.duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      expect(attempt.duration_ms).toBeLessThan(TIMEOUT_MS + 1000);
      // One request for that attempt (its retry may be on the wire already).
      const attemptEnded = new Date(attempt.attempted_at).getTime() + attempt.duration_ms;
      expect(requestsTo(receiver, path).filter((r) => r.receivedAt <= attemptEnded)).toHaveLength(1);
    });

    it('a 301 is a failure and its Location is not followed', async () => {
      const path = uniquePath('moved');
      const target = uniquePath('moved-target');
      responders.set(path, () => ({ status: 301, body: 'moved', headers: { location: `${base}${target}` } }));
      const endpointId = await deliverOne(path);
      const delivery = await waitForStatus(t, endpointId, ['retrying', 'succeeded', 'failed']);
      expect(delivery.status).toBe('retrying');
      expect(delivery.last_status_code).toBe(301);
      expect((await attemptsOf(t, delivery.id))[0]).toMatchObject({ status_code: 301, error_kind: null });
      // A followed redirect would be requested within the attempt, before its outcome is recorded.
      expect(requestsTo(receiver, target)).toHaveLength(0);
    });

    it('a 5 MB response body: only the first 2048 bytes are kept, and the 2xx still succeeds', async () => {
      const path = uniquePath('huge');
      const huge = Buffer.from('0123456789abcdef'.repeat((5 * 1024 * 1024) / 16));
      responders.set(path, () => ({ status: 200, body: huge }));
      const endpointId = await deliverOne(path);
      const delivery = await waitForStatus(t, endpointId, ['succeeded', 'retrying', 'failed']);
      expect(delivery.status).toBe('succeeded');
      const [attempt] = await attemptsOf(t, delivery.id);
      expect(Buffer.byteLength(attempt.response_body!, 'utf8')).toBe(2048);
      expect(attempt.response_body).toBe(huge.subarray(0, 2048).toString('utf8'));
      expect(attempt.duration_ms).toBeLessThan(TIMEOUT_MS);
    });

    it('a multi-byte UTF-8 body is cut at a character boundary, never over 2048 bytes', async () => {
      const path = uniquePath('utf8');
      // 'é' is 2 bytes, '☕' 3: a cut at byte 2048 falls inside a character.
      const body = `x${'☕é'.repeat(2000)}`;
      responders.set(path, () => ({ status: 500, body }));
      const endpointId = await deliverOne(path);
      const delivery = await waitForStatus(t, endpointId, ['retrying', 'succeeded', 'failed']);
      const [attempt] = await attemptsOf(t, delivery.id);
      const kept = Buffer.byteLength(attempt.response_body!, 'utf8');
      expect(kept).toBeLessThanOrEqual(2048);
      expect(kept).toBeGreaterThan(2040);
      expect(body.startsWith(attempt.response_body!)).toBe(true);
    });
  });

  it('a slow receiver does not hold back deliveries to another endpoint', async () => {
    const slow = new TestReceiver();
    slow.respond = () => ({ status: 200, body: 'slow', delayMs: 800 });
    const slowBase = await slow.start();
    try {
      await register(t, s.apiKey, { url: `${slowBase}/slow`, events: ['contact.merged'] });
      const fastPath = uniquePath('fast');
      await register(t, s.apiKey, { url: `${base}${fastPath}`, events: ['message.sent'] });
      await publishAll(
        t,
        Array.from({ length: 30 }, () => fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null })),
      );
      await waitUntil(() => slow.requests.length >= 5, 'the slow receiver to be busy', { timeoutMs: 5000, intervalMs: 10 });

      const published = Date.now();
      await publish(t, fixtureEvent('message.sent', { orgId: s.orgId, lineId: emailLine() }));
      const [fast] = await waitForRequests(receiver, fastPath, 1, 5000);
      expect(fast.receivedAt - published).toBeLessThan(700);
      await slow.waitFor(30, 10_000);
    } finally {
      await slow.stop();
    }
  });

  describe('retry schedule', () => {
    it(`an always-500 receiver gets exactly 6 attempts ${RETRY_MS} ms apart with one envelope id, then the delivery is failed`, async () => {
      const path = uniquePath('always-500');
      responders.set(path, () => ({ status: 500, body: 'down' }));
      const { endpoint, secret } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
      await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));

      const delivery = await waitForStatus(t, endpoint.id, ['failed', 'succeeded'], 15_000);
      expect(delivery.status).toBe('failed');
      await afterPendingRetries(t); // a 7th attempt would come RETRY_MS after the 6th
      const requests = requestsTo(receiver, path);
      expect(requests).toHaveLength(6);

      const envelopes = requests.map((r) => JSON.parse(r.body));
      expect(new Set(envelopes.map((e) => e.id)).size).toBe(1);
      expect(envelopes[0].id).toMatch(EVT_ID);
      expect(new Set(envelopes.map((e) => e.createdAt)).size).toBe(1);
      expect(requests.map((r) => r.headers['x-service-event-id'])).toEqual(Array(6).fill(envelopes[0].id));
      for (let i = 1; i < requests.length; i++) {
        expect(requests[i].receivedAt - requests[i - 1].receivedAt).toBeGreaterThanOrEqual(RETRY_MS - 50);
      }
      // Each attempt is signed afresh, over its own bytes.
      for (const r of requests) {
        const sig = parseSignature(r.headers['x-service-signature']);
        expect(sig.v1).toEqual([hmacHex(secret, sig.t, r.body)]);
      }

      const attempts = await attemptsOf(t, delivery.id);
      expect(attempts.map((a) => a.attempt_number)).toEqual([1, 2, 3, 4, 5, 6]);
      for (const a of attempts) {
        expect(a).toMatchObject({ status_code: 500, error_kind: null, response_body: 'down' });
        expect(a.duration_ms).toBeGreaterThanOrEqual(0);
      }

      const list = await toolOk(t, s.apiKey, 'list_webhook_deliveries', { endpointId: endpoint.id });
      expect(list.deliveries).toHaveLength(1);
      expect(list.deliveries[0]).toMatchObject({
        id: delivery.id,
        eventId: envelopes[0].id,
        endpointId: endpoint.id,
        eventType: 'contact.merged',
        status: 'failed',
        attempts: 6,
        lastStatusCode: 500,
        nextAttemptAt: null,
        resentFromId: null,
      });
      expect(list.deliveries[0].lastAttemptAt).toMatch(ISO_MS);
    });

    it('a receiver that fails twice then answers 200 ends succeeded after 3 attempts; attachment URLs are re-signed per attempt', async () => {
      const path = uniquePath('flaky');
      responders.set(path, (count) => (count <= 2 ? { status: 503, body: `fail ${count}` } : { status: 200, body: 'finally' }));
      const endpointId = await deliverOne(path, { events: ['message.received'], mode: 'verbose' });
      const delivery = await waitForStatus(t, endpointId, ['succeeded', 'failed'], 10_000);
      expect(delivery.status).toBe('succeeded');
      expect(delivery.attempt_count).toBe(3);
      expect(delivery.last_status_code).toBe(200);
      expect(delivery.next_attempt_at).toBeNull();

      const attempts = await attemptsOf(t, delivery.id);
      expect(attempts.map((a) => [a.attempt_number, a.status_code, a.error_kind, a.response_body])).toEqual([
        [1, 503, null, 'fail 1'],
        [2, 503, null, 'fail 2'],
        [3, 200, null, 'finally'],
      ]);
      await afterPendingRetries(t); // no retry after the success
      const requests = requestsTo(receiver, path);
      expect(requests).toHaveLength(3);
      const expires = requests.map((r) => Number(/expires=(\d+)/.exec(JSON.parse(r.body).data.attachments[0].url)![1]));
      // Signed when sent, to the second: two attempts RETRY_MS apart may share one, but the
      // third attempt comes more than a second after the first.
      expect(expires[1]).toBeGreaterThanOrEqual(expires[0]);
      expect(expires[2]).toBeGreaterThanOrEqual(expires[1]);
      expect(expires[2]).toBeGreaterThan(expires[0]);
      // The endpoint's failure count was reset by the 2xx.
      const [{ consecutive_failures: failures }] = await t.db.query('SELECT consecutive_failures FROM webhook_endpoints WHERE id = $1', [endpointId]);
      expect(failures).toBe(0);
    });
  });

  describe('resend_webhook_delivery', () => {
    it('delivers the same data again with a new evt_ id and createdAt; the list shows the new row with resentFromId', async () => {
      const path = uniquePath('resend');
      const endpointId = await deliverOne(path, { events: ['message.received'], mode: 'verbose' });
      const [first] = await waitForRequests(receiver, path, 1);
      const original = await waitForStatus(t, endpointId, ['succeeded']);
      const before = JSON.parse(first.body);

      await sleep(20); // createdAt is to the millisecond
      const resent = await toolOk(t, s.apiKey, 'resend_webhook_delivery', { deliveryId: original.id });
      expect(resent.delivery).toMatchObject({ endpointId, eventType: 'message.received', resentFromId: original.id, status: 'pending', attempts: 0 });
      expect(resent.delivery.id).not.toBe(original.id);
      expect(resent.delivery.eventId).toMatch(EVT_ID);
      expect(resent.delivery.eventId).not.toBe(before.id);

      const [, second] = await waitForRequests(receiver, path, 2);
      const after = JSON.parse(second.body);
      expect(after.id).toBe(resent.delivery.eventId);
      expect(second.headers['x-service-event-id']).toBe(after.id);
      expect(after.type).toBe(before.type);
      expect(after.endpointId).toBe(before.endpointId);
      expect(after.mode).toBe('verbose');
      expect(after.createdAt).toMatch(ISO_MS);
      expect(Date.parse(after.createdAt)).toBeGreaterThan(Date.parse(before.createdAt));
      // Same data; only the attachment links are signed anew.
      const withoutUrls = (data: any) => ({ ...data, attachments: data.attachments.map(({ url: _url, ...a }: any) => a) });
      expect(withoutUrls(after.data)).toEqual(withoutUrls(before.data));

      await waitUntil(async () => (await deliveriesOf(t, endpointId)).every((d) => d.status === 'succeeded'), 'both deliveries succeeded');
      const list = await toolOk(t, s.apiKey, 'list_webhook_deliveries', { endpointId });
      expect(list.deliveries.map((d: any) => [d.id, d.resentFromId, d.status])).toEqual([
        [resent.delivery.id, original.id, 'succeeded'],
        [original.id, null, 'succeeded'],
      ]);
      expect(list.deliveries[0].eventId).toBe(after.id);
      expect(list.deliveries[1].eventId).toBe(before.id);
    });

    it("another user's delivery id is not found", async () => {
      const path = uniquePath('resend-other');
      const endpointId = await deliverOne(path);
      const delivery = await waitForStatus(t, endpointId, ['succeeded']);
      const other = await createSession(t.admin, { orgId: s.orgId });
      const message = await toolError(t, other.apiKey, 'resend_webhook_delivery', { deliveryId: delivery.id });
      expect(message).toMatch(/not found/i);
      expect(await deliveriesOf(t, endpointId)).toHaveLength(1);
      // The owner's own resend goes out after anything the refused call could have queued.
      await toolOk(t, s.apiKey, 'resend_webhook_delivery', { deliveryId: delivery.id });
      await waitForRequests(receiver, path, 2);
      expect(await deliveriesOf(t, endpointId)).toHaveLength(2);
      expect(requestsTo(receiver, path)).toHaveLength(2);
    });
  });
});
