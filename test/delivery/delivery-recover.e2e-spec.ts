import { randomUUID } from 'node:crypto';
import { verifyWebhook } from '../../src/sdk';
import { fixtureData, fixtureEvent } from '../fixtures/events';
import {
  closeDeliveryTestApp,
  createDeliveryTestApp,
  DeliveryTestApp,
  EVT_ID,
  freePort,
  publish,
  register,
  requestsTo,
  routeResponses,
  Routes,
  waitDeliveryIdle,
  waitForRequests,
} from '../support/delivery';
import { rpc, toolError, toolOk } from '../support/mcp';
import { storePayload } from '../support/payloads';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * recover_webhook_deliveries, get_webhook_delivery and list_webhook_deliveries' status filter,
 * against a real receiver: failed deliveries are made by the delivery engine itself (the receiver
 * answers 500 until told otherwise) or written as rows where a test needs exact event times.
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

interface Recovered {
  endpointId: string;
  since: string;
  until: string;
  queued: number;
  truncated: boolean;
  nextSince: string | null;
}

interface Row {
  id: string;
  event_id: string;
  status: string;
  resent_from_id: string | null;
  recovered_at: Date | null;
  event_created_at: Date;
  updated_at: Date;
}

// One app and one receiver for the whole file; each describe has a session of its own (endpoint caps are per user).
// Two attempts a delivery, 200 ms apart: a receiver that answers 500 twice makes it `failed` within a second.
let t: DeliveryTestApp;
const receiver = new TestReceiver();
let base: string;
let routes: Routes;

beforeAll(async () => {
  base = await receiver.start();
  routes = routeResponses(receiver);
  t = await createDeliveryTestApp({ queueTag: 'recover', env: { DELIVERY_RETRY_SCHEDULE: '200ms' } });
});
afterAll(async () => {
  await closeDeliveryTestApp(t);
  await receiver.stop();
});

describe('recovering failed webhook deliveries', () => {
  let s: Session;

  beforeAll(async () => {
    s = await createSession(t.admin, { tier: 'POWER' });
  });

  const recover = (key: string, args: Record<string, unknown>) => toolOk<Recovered>(t, key, 'recover_webhook_deliveries', args);
  const rowsOf = (endpointId: string): Promise<Row[]> =>
    t.db.query(
      `SELECT id, event_id, status, resent_from_id, recovered_at, event_created_at, updated_at FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at, id`,
      [endpointId],
    );

  /** A delivery row written directly, with its own payload, at an exact event time. */
  async function insertDelivery(
    endpointId: string,
    userId: string,
    status: string,
    eventAt: number,
    extra: { lineId?: string | null; nextAttemptAt?: number | null } = {},
  ): Promise<{ id: string; data: object }> {
    const data = { contact: { id: randomUUID(), displayName: 'Row', identities: [] }, mergedContactIds: [randomUUID()] };
    const [row] = await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, line_id, event_type, mode, payload_id, event_created_at, status, attempt_count, next_attempt_at)
       VALUES ('evt_' || md5(random()::text), $1, $2, $3, 'contact.merged', 'concise', $4, $5, $6, $7, $8) RETURNING id`,
      [
        endpointId,
        userId,
        extra.lineId ?? null,
        await storePayload(t.db, data),
        new Date(eventAt),
        status,
        status === 'pending' ? 0 : 2,
        extra.nextAttemptAt == null ? null : new Date(extra.nextAttemptAt),
      ],
    );
    return { id: row.id, data };
  }

  /** An endpoint of `s` on its own receiver path, answering 500 (with `failBody`) while `failing.on`. */
  async function failingEndpoint(path: string, failBody = 'down') {
    const failing = { on: true };
    routes.set(path, () => (failing.on ? { status: 500, body: failBody } : { status: 200, body: 'ok' }));
    const { endpoint, secret } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
    return { endpointId: endpoint.id, secret, failing };
  }

  async function waitFailed(endpointId: string, count: number): Promise<Row[]> {
    return waitUntil(async () => {
      const rows = (await rowsOf(endpointId)).filter((r) => r.status === 'failed');
      return rows.length >= count ? rows : undefined;
    }, `${count} failed deliveries of ${endpointId}`);
  }

  describe('a window of failed deliveries', () => {
    let endpointId: string;
    let secret: string;
    let failed: Row[];
    let outside: { id: string; data: object };
    let untouched: string[];
    let resentByHand: Row;
    let first: Recovered;
    const path = '/window';

    beforeAll(async () => {
      const ep = await failingEndpoint(path);
      endpointId = ep.endpointId;
      secret = ep.secret;
      for (let i = 0; i < 4; i += 1) await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
      failed = await waitFailed(endpointId, 4);
      expect(requestsTo(receiver, path)).toHaveLength(8); // 4 deliveries × 2 attempts
      ep.failing.on = false;
      // One of them was resent by hand already: recovery leaves it to its copy.
      resentByHand = failed[3];
      await toolOk(t, s.apiKey, 'resend_webhook_delivery', { deliveryId: resentByHand.id });
      await waitForRequests(receiver, path, 9);
      await waitDeliveryIdle(t); // the copy's success recorded before the rows are compared
      // Outside the window (2 h ago), and inside it but not failed.
      const now = Date.now();
      outside = await insertDelivery(endpointId, s.userId, 'failed', now - 2 * HOUR);
      untouched = [
        (await insertDelivery(endpointId, s.userId, 'succeeded', now - 10 * 60_000)).id,
        (await insertDelivery(endpointId, s.userId, 'cancelled', now - 10 * 60_000)).id,
        (await insertDelivery(endpointId, s.userId, 'pending', now - 10 * 60_000, { nextAttemptAt: now + DAY })).id,
      ];
    });

    it('resends each failed delivery of the window once, as a new delivery that arrives signed', async () => {
      const before = await rowsOf(endpointId);
      const since = Date.now() - HOUR;
      first = await recover(s.apiKey, { endpointId, since: iso(since) });
      expect(first).toEqual({ endpointId, since: iso(since), until: expect.any(String), queued: 3, truncated: false, nextSince: null });
      expect(Date.parse(first.until)).toBeGreaterThan(since);

      const requests = await waitForRequests(receiver, path, 12);
      const recoveredRequests = requests.slice(9);
      const originals = failed.slice(0, 3);
      const payloads = new Map<string, unknown>();
      for (const original of originals) {
        const [sent] = requests.filter((r) => r.headers['x-service-event-id'] === original.event_id);
        payloads.set(original.id, JSON.parse(sent.body).data);
      }
      const rows = await rowsOf(endpointId);
      const copies = rows.filter((r) => originals.some((o) => o.id === r.resent_from_id));
      expect(copies).toHaveLength(3);
      expect(new Set(copies.map((c) => c.resent_from_id))).toEqual(new Set(originals.map((o) => o.id)));
      for (const req of recoveredRequests) {
        const envelope = verifyWebhook(req.body, req.headers['x-service-signature'] as string, [secret]);
        expect(envelope.id).toMatch(EVT_ID);
        const copy = copies.find((c) => c.event_id === envelope.id)!;
        expect(copy).toBeDefined();
        expect(originals.map((o) => o.event_id)).not.toContain(envelope.id); // a new id, as resend makes
        expect(envelope.data).toEqual(payloads.get(copy.resent_from_id!));
        expect(envelope.endpointId).toBe(endpointId);
      }
      await waitUntil(
        async () => (await rowsOf(endpointId)).filter((r) => copies.some((c) => c.id === r.id) && r.status === 'succeeded').length === 3,
        'copies to succeed',
      );

      // The originals are marked recovered and stay failed; nothing else changed.
      const after = new Map((await rowsOf(endpointId)).map((r) => [r.id, r]));
      for (const original of originals) expect(after.get(original.id)).toMatchObject({ status: 'failed', recovered_at: expect.any(Date) });
      for (const row of before.filter((r) => !originals.some((o) => o.id === r.id))) {
        expect(after.get(row.id)).toEqual(row);
      }
      expect(after.get(resentByHand.id)!.recovered_at).toBeNull();
      expect(after.get(outside.id)!.recovered_at).toBeNull();
    });

    it('a second call over an overlapping window resends none of them again, only what the wider window adds', async () => {
      await waitDeliveryIdle(t);
      const count = requestsTo(receiver, path).length;
      const since = Date.now() - 3 * HOUR;
      const second = await recover(s.apiKey, { endpointId, since: iso(since) });
      expect(second).toMatchObject({ queued: 1, truncated: false, nextSince: null });
      const [arrived] = (await waitForRequests(receiver, path, count + 1)).slice(count);
      expect(verifyWebhook(arrived.body, arrived.headers['x-service-signature'] as string, [secret]).data).toEqual(outside.data);

      expect(await recover(s.apiKey, { endpointId, since: iso(since) })).toMatchObject({ queued: 0 });
      expect(await recover(s.apiKey, { endpointId, since: first.since, until: first.until })).toMatchObject({ queued: 0 });
      await waitDeliveryIdle(t);
      expect(requestsTo(receiver, path)).toHaveLength(count + 1);
      const rows = await rowsOf(endpointId);
      for (const id of untouched) expect(rows.find((r) => r.id === id)!.recovered_at).toBeNull();
      expect(rows.filter((r) => r.resent_from_id !== null)).toHaveLength(5); // 1 by hand, 3 + 1 recovered
    });

    it('until ends the window, exclusive', async () => {
      const ep = await failingEndpoint('/until');
      ep.failing.on = false;
      const now = Date.now();
      const at = now - 30 * 60_000;
      const onTheEdge = await insertDelivery(ep.endpointId, s.userId, 'failed', at);
      const inside = await insertDelivery(ep.endpointId, s.userId, 'failed', at - 1);
      const answer = await recover(s.apiKey, { endpointId: ep.endpointId, since: iso(at - HOUR), until: iso(at) });
      expect(answer).toMatchObject({ since: iso(at - HOUR), until: iso(at), queued: 1 });
      const rows = await rowsOf(ep.endpointId);
      expect(rows.find((r) => r.id === inside.id)!.recovered_at).toEqual(expect.any(Date));
      expect(rows.find((r) => r.id === onTheEdge.id)!.recovered_at).toBeNull();
      await waitForRequests(receiver, '/until', 1);
    });
  });

  describe('who may recover', () => {
    it("another user's endpoint and an endpoint hidden from a LINES key answer as an unknown id, and nothing changes", async () => {
      const ep = await failingEndpoint('/hidden');
      ep.failing.on = false;
      const row = await insertDelivery(ep.endpointId, s.userId, 'failed', Date.now() - 60_000);
      const other = await createSession(t.admin);
      const linesKey = (
        await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'one line', channelAccess: { mode: 'LINES', lines: [s.lines[0].address] } }).expect(201)
      ).body.key;
      const since = iso(Date.now() - HOUR);
      const ghost = randomUUID();
      for (const key of [other.apiKey, linesKey]) {
        const unknown = await toolError(t, key, 'recover_webhook_deliveries', { endpointId: ghost, since });
        expect(unknown).toBe(`webhook endpoint ${ghost} not found`);
        expect(await toolError(t, key, 'recover_webhook_deliveries', { endpointId: ep.endpointId, since })).toBe(unknown.replace(ghost, ep.endpointId));
      }
      expect((await rowsOf(ep.endpointId)).find((r) => r.id === row.id)!.recovered_at).toBeNull();
      // The owner's unrestricted key does recover it: the refusals above were about the caller.
      expect(await recover(s.apiKey, { endpointId: ep.endpointId, since })).toMatchObject({ queued: 1 });
      await waitForRequests(receiver, '/hidden', 1);
    });

    it('a LINES key recovers only the deliveries of its lines on an endpoint it sees', async () => {
      const [email, phone] = s.lines;
      const path = '/scoped';
      routes.set(path, () => ({ status: 200, body: 'ok' }));
      const { endpoint } = await register(t, s.apiKey, {
        url: `${base}${path}`,
        events: ['message.received'],
        channelScope: { allChannels: false, channels: [{ channelType: email.type, channelId: email.id }] },
      });
      const linesKey = (
        await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'email only', channelAccess: { mode: 'LINES', lines: [email.address] } }).expect(201)
      ).body.key;
      const now = Date.now();
      const mine = await insertDelivery(endpoint.id, s.userId, 'failed', now - 60_000, { lineId: email.id });
      const otherLine = await insertDelivery(endpoint.id, s.userId, 'failed', now - 60_000, { lineId: phone.id });
      const orgWide = await insertDelivery(endpoint.id, s.userId, 'failed', now - 60_000, { lineId: null });
      expect(await recover(linesKey, { endpointId: endpoint.id, since: iso(now - HOUR) })).toMatchObject({ queued: 1 });
      const rows = await rowsOf(endpoint.id);
      expect(rows.find((r) => r.id === mine.id)!.recovered_at).toEqual(expect.any(Date));
      expect(rows.find((r) => r.id === otherLine.id)!.recovered_at).toBeNull();
      expect(rows.find((r) => r.id === orgWide.id)!.recovered_at).toBeNull();
      await waitForRequests(receiver, path, 1);
    });

    it('a disabled endpoint is refused, saying so, and nothing is resent', async () => {
      const ep = await failingEndpoint('/disabled');
      const row = await insertDelivery(ep.endpointId, s.userId, 'failed', Date.now() - 60_000);
      await toolOk(t, s.apiKey, 'update_webhook', { endpointId: ep.endpointId, status: 'disabled' });
      const message = await toolError(t, s.apiKey, 'recover_webhook_deliveries', { endpointId: ep.endpointId, since: iso(Date.now() - HOUR) });
      expect(message).toMatch(/is disabled/);
      expect(message).toContain('update_webhook');
      const rows = await rowsOf(ep.endpointId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ id: row.id, recovered_at: null });
    });
  });

  describe('arguments', () => {
    let endpointId: string;
    beforeAll(async () => {
      endpointId = (await failingEndpoint('/arguments')).endpointId;
      await insertDelivery(endpointId, s.userId, 'failed', Date.now() - 60_000);
    });
    afterAll(async () => {
      expect((await rowsOf(endpointId)).filter((r) => r.recovered_at !== null || r.resent_from_id !== null)).toEqual([]);
    });

    const refused = (args: Record<string, unknown>) => toolError(t, s.apiKey, 'recover_webhook_deliveries', { endpointId, ...args });
    const now = () => Date.now();

    it.each([
      ['absent', {}, /^invalid arguments: since is required$/],
      ['not a date', { since: 'yesterday' }, /^invalid arguments: since must match format "date-time"$/],
      ['a date without a time', { since: '2026-01-01' }, /^invalid arguments: since must match format "date-time"$/],
      ['without a time zone', { since: '2026-01-01T00:00:00' }, /^invalid arguments: since must match format "date-time"$/],
      ['an impossible date', { since: '2026-02-30T00:00:00Z' }, /^invalid arguments: since must match format "date-time"$/],
      ['a number', { since: 1767225600 }, /^invalid arguments: since must be string$/],
    ])('since %s is refused, naming since', async (_, args, expected) => {
      expect(await refused(args)).toMatch(expected);
    });

    it('a malformed until is refused, naming until', async () => {
      expect(await refused({ since: iso(now() - HOUR), until: 'now' })).toBe('invalid arguments: until must match format "date-time"');
    });

    it('since in the future, or after until, is refused naming since', async () => {
      expect(await refused({ since: iso(now() + HOUR) })).toMatch(/^since \(.+\) must not be in the future$/);
      expect(await refused({ since: iso(now() - HOUR), until: iso(now() - 2 * HOUR) })).toMatch(/^since \(.+\) must not be after until \(.+\)$/);
    });

    it('a window longer than 7 days is refused, naming the bound', async () => {
      expect(await refused({ since: iso(now() - 8 * DAY), until: iso(now() - 12 * HOUR) })).toMatch(/at most 7 days/);
      expect(await refused({ since: iso(now() - 7 * DAY - 60_000) })).toMatch(/at most 7 days/);
      // Exactly 7 days is allowed.
      const until = now() - HOUR;
      expect(await recover(s.apiKey, { endpointId, since: iso(until - 7 * DAY), until: iso(until) })).toMatchObject({ queued: 0 });
    });

    it("since older than the delivery log's retention (30 days) is refused, naming since", async () => {
      const message = await refused({ since: iso(now() - 31 * DAY), until: iso(now() - 30 * DAY + HOUR) });
      expect(message).toMatch(/^since must be within the delivery log's retention of 30 days: not before \S+Z/);
    });

    it('an unknown argument is refused', async () => {
      expect(await refused({ since: iso(now() - HOUR), status: 'failed' })).toBe('invalid arguments: status is not a known argument');
    });
  });

  it('queues at most 1,000 a call, oldest first, with truncated and where to continue', async () => {
    const path = '/bulk';
    routes.set(path, () => ({ status: 200, body: 'ok' }));
    const { endpoint, secret } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
    const start = Date.now() - 2 * HOUR;
    // 1,003 failed deliveries one second apart, sharing one payload.
    await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, attempt_count)
       SELECT 'evt_' || md5(random()::text || i::text), $1, $2, 'contact.merged', 'concise', $3, $4::timestamptz + i * interval '1 second', 'failed', 2
         FROM generate_series(0, 1002) AS i`,
      [endpoint.id, s.userId, await storePayload(t.db, fixtureData('contact.merged')), new Date(start)],
    );
    const since = iso(start - 1);
    const first = await recover(s.apiKey, { endpointId: endpoint.id, since });
    expect(first).toMatchObject({ queued: 1000, truncated: true, nextSince: iso(start + 1000 * 1000) });
    const marked: Array<{ event_created_at: Date }> = await t.db.query(
      `SELECT event_created_at FROM webhook_deliveries WHERE endpoint_id = $1 AND recovered_at IS NOT NULL ORDER BY event_created_at`,
      [endpoint.id],
    );
    expect(marked).toHaveLength(1000);
    expect(marked[999].event_created_at.getTime()).toBe(start + 999 * 1000); // the oldest 1,000

    const rest = await recover(s.apiKey, { endpointId: endpoint.id, since: first.nextSince, until: first.until });
    expect(rest).toMatchObject({ queued: 3, truncated: false, nextSince: null });
    // All 1,003 go out promptly, once each, signed.
    const requests = await waitForRequests(receiver, path, 1003, 60_000);
    await waitDeliveryIdle(t, 30_000);
    expect(requestsTo(receiver, path)).toHaveLength(1003);
    expect(new Set(requests.map((r) => r.headers['x-service-event-id'])).size).toBe(1003);
    verifyWebhook(requests[1002].body, requests[1002].headers['x-service-signature'] as string, [secret]);
    expect(await recover(s.apiKey, { endpointId: endpoint.id, since })).toMatchObject({ queued: 0, truncated: false });
  }, 120_000);
});

describe('get_webhook_delivery and the status filter', () => {
  let s: Session;

  beforeAll(async () => {
    s = await createSession(t.admin, { tier: 'POWER' });
  });

  interface Detail {
    delivery: Record<string, unknown> & { id: string; status: string; attempts: number; recoveredAt: string | null };
    envelope: { id: string; type: string; createdAt: string; endpointId: string; mode: string; data: object };
    envelopeLength: number;
    envelopeText: string | null;
    nextOffset: number | null;
    attempts: Array<{
      attemptNumber: number;
      attemptedAt: string;
      durationMs: number;
      statusCode: number | null;
      errorKind: string | null;
      responseBody: string | null;
    }>;
  }

  it('shows the envelope as sent and every attempt, response bodies cut to 2 KB', async () => {
    const path = '/detail';
    const long = 'é'.repeat(3000); // 6,000 bytes: cut to 2,048 bytes (1,024 characters)
    routes.set(path, (n) => (n === 1 ? { status: 503, body: long } : { status: 200, body: 'thanks' }));
    const { endpoint } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
    await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    const [, second] = await waitForRequests(receiver, path, 2);
    const [row] = await waitUntil(async () => {
      const rows: Array<{ id: string; status: string }> = await t.db.query(`SELECT id, status FROM webhook_deliveries WHERE endpoint_id = $1`, [endpoint.id]);
      return rows[0]?.status === 'succeeded' ? rows : undefined;
    }, 'the delivery to succeed');
    const detail = await toolOk<Detail>(t, s.apiKey, 'get_webhook_delivery', { deliveryId: row.id });
    const sent = JSON.parse(second.body);
    expect(detail.envelope).toEqual(sent); // contact.merged has no attachment links: exactly the bytes' content
    expect(Object.keys(detail.envelope)).toEqual(['id', 'type', 'createdAt', 'endpointId', 'mode', 'data']);
    expect(detail).toMatchObject({ envelopeLength: JSON.stringify(sent).length, envelopeText: null, nextOffset: null });
    expect(detail.delivery).toMatchObject({ id: row.id, eventId: sent.id, status: 'succeeded', attempts: 2, lastStatusCode: 200, recoveredAt: null });
    expect(detail.attempts).toEqual([
      { attemptNumber: 1, attemptedAt: expect.any(String), durationMs: expect.any(Number), statusCode: 503, errorKind: null, responseBody: 'é'.repeat(1024) },
      { attemptNumber: 2, attemptedAt: expect.any(String), durationMs: expect.any(Number), statusCode: 200, errorKind: null, responseBody: 'thanks' },
    ]);
    expect(Buffer.byteLength(detail.attempts[0].responseBody!)).toBe(2048);
    expect(detail.delivery.lastDurationMs).toBe(detail.attempts[1].durationMs); // the last attempt's, as the log shows it
    const { deliveries } = await toolOk<{ deliveries: Array<{ id: string; lastDurationMs: number | null }> }>(t, s.apiKey, 'list_webhook_deliveries', {
      endpointId: endpoint.id,
    });
    expect(deliveries).toEqual([expect.objectContaining({ id: row.id, lastDurationMs: detail.attempts[1].durationMs })]);
    expect(Date.parse(detail.attempts[1].attemptedAt)).toBeGreaterThan(Date.parse(detail.attempts[0].attemptedAt));
  });

  it('an attempt without an answer shows its error kind', async () => {
    const { endpoint } = await register(t, s.apiKey, { url: `http://127.0.0.1:${await freePort()}/nobody`, events: ['contact.merged'] });
    await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    const row = await waitUntil(
      async () => (await t.db.query(`SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'failed'`, [endpoint.id]))[0],
      'the delivery to fail',
    );
    const detail = await toolOk<Detail>(t, s.apiKey, 'get_webhook_delivery', { deliveryId: row.id });
    expect(detail.delivery.status).toBe('failed');
    expect(detail.attempts.map((a) => [a.attemptNumber, a.statusCode, a.errorKind, a.responseBody])).toEqual([
      [1, null, 'connection_refused', null],
      [2, null, 'connection_refused', null],
    ]);
  });

  it('a recovered delivery shows recoveredAt, and its copy resentFromId', async () => {
    const recovered = { contact: { id: randomUUID(), displayName: 'Recovered', identities: [] }, mergedContactIds: [randomUUID()] };
    routes.set('/recovered', () => ({ status: 200, body: 'ok' }));
    const { endpoint } = await register(t, s.apiKey, { url: `${base}/recovered`, events: ['contact.merged'] });
    const [original] = await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, attempt_count)
       VALUES ('evt_' || md5(random()::text), $1, $2, 'contact.merged', 'concise', $3, now() - interval '1 minute', 'failed', 2) RETURNING id`,
      [endpoint.id, s.userId, await storePayload(t.db, recovered)],
    );
    await toolOk(t, s.apiKey, 'recover_webhook_deliveries', { endpointId: endpoint.id, since: iso(Date.now() - HOUR) });
    const detail = await toolOk<Detail>(t, s.apiKey, 'get_webhook_delivery', { deliveryId: original.id });
    expect(detail.delivery.recoveredAt).toEqual(expect.any(String));
    expect(detail.envelope.data).toEqual(recovered);
    const [copy] = await t.db.query(`SELECT id FROM webhook_deliveries WHERE resent_from_id = $1`, [original.id]);
    const copyDetail = await toolOk<Detail>(t, s.apiKey, 'get_webhook_delivery', { deliveryId: copy.id });
    expect(copyDetail.delivery).toMatchObject({ resentFromId: original.id, recoveredAt: null });
    expect(copyDetail.envelope.data).toEqual(recovered);
    expect(copyDetail.envelope.id).not.toBe(detail.envelope.id);
    await waitForRequests(receiver, '/recovered', 1);
  });

  it("another user's delivery and one hidden from a LINES key answer as an unknown id", async () => {
    routes.set('/mine', () => ({ status: 200, body: 'ok' }));
    const { endpoint } = await register(t, s.apiKey, { url: `${base}/mine`, events: ['contact.merged'] });
    const [row] = await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, attempt_count)
       VALUES ('evt_' || md5(random()::text), $1, $2, 'contact.merged', 'concise', $3, now(), 'failed', 2) RETURNING id`,
      [endpoint.id, s.userId, await storePayload(t.db, { secretish: 'victim data' })],
    );
    const other = await createSession(t.admin);
    const linesKey = (
      await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'one line', channelAccess: { mode: 'LINES', lines: [s.lines[0].address] } }).expect(201)
    ).body.key;
    const ghost = randomUUID();
    for (const key of [other.apiKey, linesKey]) {
      expect(await toolError(t, key, 'get_webhook_delivery', { deliveryId: ghost })).toBe(`webhook delivery ${ghost} not found`);
      expect(await toolError(t, key, 'get_webhook_delivery', { deliveryId: row.id })).toBe(`webhook delivery ${row.id} not found`);
    }
    expect((await toolOk<Detail>(t, s.apiKey, 'get_webhook_delivery', { deliveryId: row.id })).envelope.data).toEqual({ secretish: 'victim data' });
    expect(await toolError(t, s.apiKey, 'get_webhook_delivery', { deliveryId: 'not-a-uuid' })).toBe('invalid arguments: deliveryId must match format "uuid"');
  });

  it('a long envelope comes as its JSON text, a window at a time, so the answer stays under 100,000 characters', async () => {
    const { endpoint } = await register(t, s.apiKey, { url: `${base}/long`, events: ['message.received'] });
    // As long as a verbose message.received can be (docs/webhooks.md, "Payload size"), with characters outside the BMP.
    const data = {
      message: { body: Array.from('🙂 long body. '.repeat(1_200)).slice(0, 16_384).join('') },
      thread: { recentMessages: Array.from({ length: 50 }, (_, i) => ({ body: `${i} ${'x'.repeat(1_020)}` })) },
      attachments: Array.from({ length: 100 }, (_, i) => ({ filename: `${i}.txt`.padStart(255, 'f'), mimeType: 'text/plain'.padEnd(255, ';') })),
    };
    const [row] = await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, attempt_count)
       VALUES ('evt_' || md5(random()::text), $1, $2, 'message.received', 'verbose', $3, now(), 'failed', 2) RETURNING id`,
      [endpoint.id, s.userId, await storePayload(t.db, data)],
    );
    const call = async (args: Record<string, unknown>) => {
      const res = await rpc(t, s.apiKey, 'tools/call', { name: 'get_webhook_delivery', arguments: { deliveryId: row.id, ...args } });
      expect(res.body.result.isError).toBeFalsy();
      return { text: res.body.result.content[0].text as string, result: res.body.result.structuredContent as Detail };
    };
    const first = await call({});
    expect(first.text.length).toBeLessThan(100_000);
    expect(first.result).toMatchObject({ envelope: null, nextOffset: 20_000 });
    expect(first.result.envelopeLength).toBeGreaterThan(100_000); // whole, it would not fit
    let text = first.result.envelopeText!;
    expect(Array.from(text)).toHaveLength(20_000);
    for (let offset = first.result.nextOffset; offset !== null;) {
      const next = await call({ offset, maxChars: 100_000 });
      text += next.result.envelopeText;
      offset = next.result.nextOffset;
    }
    expect(Array.from(text)).toHaveLength(first.result.envelopeLength);
    expect(JSON.parse(text)).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'message.received',
      createdAt: expect.any(String),
      endpointId: endpoint.id,
      mode: 'verbose',
      data,
    });

    // A short envelope comes as text too when a window is asked for; an offset past its end is refused.
    const short = await toolOk<Detail>(t, s.apiKey, 'get_webhook_delivery', { deliveryId: row.id, offset: first.result.envelopeLength });
    expect(short).toMatchObject({ envelope: null, envelopeText: '', nextOffset: null });
    expect(await toolError(t, s.apiKey, 'get_webhook_delivery', { deliveryId: row.id, offset: first.result.envelopeLength + 1 })).toBe(
      `offset ${first.result.envelopeLength + 1} is past the end of the envelope text (envelopeLength ${first.result.envelopeLength})`,
    );
  });

  it('list_webhook_deliveries takes a status filter and pages it with the same cursor', async () => {
    const { endpoint } = await register(t, s.apiKey, { url: `${base}/listed`, events: ['contact.merged'] });
    const payload = await storePayload(t.db, { listed: true });
    // 60 rows a second apart, newest first: every third one failed, the others succeeded.
    await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status, attempt_count, created_at)
       SELECT 'evt_' || md5(random()::text || i::text), $1, $2, 'contact.merged', 'concise', $3, now(),
              CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'succeeded' END, 2, now() - i * interval '1 second'
         FROM generate_series(0, 59) AS i`,
      [endpoint.id, s.userId, payload],
    );
    const expected: Array<{ id: string; status: string }> = await t.db.query(
      `SELECT id, status FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at DESC, id DESC`,
      [endpoint.id],
    );
    const page = (args: Record<string, unknown>) =>
      toolOk<{ deliveries: Array<{ id: string; status: string }>; nextCursor: string | null }>(t, s.apiKey, 'list_webhook_deliveries', {
        endpointId: endpoint.id,
        ...args,
      });

    const failedFirst = await page({ status: 'failed' });
    expect(failedFirst.deliveries.map((d) => d.id)).toEqual(expected.filter((d) => d.status === 'failed').map((d) => d.id));
    expect(failedFirst.nextCursor).toBeNull();

    const succeeded: string[] = [];
    let cursor: string | undefined;
    const sizes: number[] = [];
    do {
      const p = await page(cursor === undefined ? { status: 'succeeded' } : { status: 'succeeded', cursor });
      sizes.push(p.deliveries.length);
      succeeded.push(...p.deliveries.map((d) => d.id));
      cursor = p.nextCursor ?? undefined;
    } while (cursor);
    expect(sizes).toEqual([25, 15]);
    expect(succeeded).toEqual(expected.filter((d) => d.status === 'succeeded').map((d) => d.id));

    // Without the filter: as before, 25 a page of every status.
    const all = await page({});
    expect(all.deliveries.map((d) => d.id)).toEqual(expected.slice(0, 25).map((d) => d.id));
    expect((await page({ status: 'pending' })).deliveries).toEqual([]);
    expect(await toolError(t, s.apiKey, 'list_webhook_deliveries', { endpointId: endpoint.id, status: 'lost' })).toBe(
      'invalid arguments: status must be one of pending, retrying, succeeded, failed, cancelled',
    );
  });

  it('the log shows a recovery: the copy is a new row resent from the failed one', async () => {
    // The receiver answers 500 twice, so the delivery fails; recovered, its copy succeeds.
    const path = '/log';
    let failing = true;
    routes.set(path, () => (failing ? { status: 500, body: 'no' } : { status: 200, body: 'ok' }));
    const { endpoint } = await register(t, s.apiKey, { url: `${base}${path}`, events: ['contact.merged'] });
    await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    const failed = await waitUntil(
      async () => (await t.db.query(`SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'failed'`, [endpoint.id]))[0],
      'the delivery to fail',
    );
    failing = false;
    await toolOk(t, s.apiKey, 'recover_webhook_deliveries', { endpointId: endpoint.id, since: iso(Date.now() - HOUR) });
    await waitForRequests(receiver, path, 3);
    await waitUntil(async () => {
      const p = await toolOk<{ deliveries: Array<{ id: string; status: string; resentFromId: string | null }> }>(t, s.apiKey, 'list_webhook_deliveries', {
        endpointId: endpoint.id,
        status: 'succeeded',
      });
      return p.deliveries.length === 1 && p.deliveries[0].resentFromId === failed.id;
    }, 'the copy to show as succeeded, resent from the failed delivery');
  });
});
