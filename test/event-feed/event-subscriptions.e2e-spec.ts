import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { connectLegacy, connectModern, EventsClient, refusal, Result } from '../support/mcp-events-clients';
import { toolOk } from '../support/mcp';
import { Answer, challengeEcho, ReceivedRequest, TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';
import { FAN_OUT_LOCK_KEY } from '../../src/delivery/fan-out-lock.sql';
import { FanOutSubscriber } from '../../src/delivery/fan-out.subscriber';
import { PublishedEvent } from '../../src/events/domain-event';
import { OutboxRepository } from '../../src/events/outbox.repository';
import { REPLAY_MAX } from '../../src/event-feed/event-subscriptions.service';

const MAX_PER_KEY = 3;

function newSecret(bytes = 32): string {
  return `whsec_${randomBytes(bytes).toString('base64')}`;
}

/** The receiver's answer: the draft's verification challenge echoed (unless the path says otherwise), 200 to every delivery. */
function answer(req: ReceivedRequest): Answer {
  const json = { 'content-type': 'application/json' };
  if (!req.body.includes('"type":"verification"'))
    return req.url.startsWith('/flaky') ? { status: 500, body: 'nope', headers: json } : { status: 200, body: 'ok', headers: json };
  if (req.url.startsWith('/fails')) return { status: 503, body: 'down', headers: json };
  if (req.url.startsWith('/wrong')) return { status: 200, body: JSON.stringify({ challenge: 'not-it' }), headers: json };
  return challengeEcho(req)!;
}

/** How many of the subscription's deliveries are in `status` (any status when undefined), as the delivery log has them. */
async function deliveriesIn(t: MessagingTestApp, subscriptionId: string, status?: string): Promise<number> {
  const rows = await t.db.query(
    `SELECT 1 FROM webhook_deliveries d JOIN event_subscriptions s ON s.endpoint_id = d.endpoint_id WHERE s.id = $1 AND ($2::text IS NULL OR d.status = $2)`,
    [subscriptionId, status ?? null],
  );
  return rows.length;
}

/**
 * MCP Events webhook mode (events/subscribe, events/unsubscribe) end to end: a real app, a real
 * receiver, the official clients of both SDK lines sending raw requests. Deliveries go through the
 * delivery engine and are verified with the npm standardwebhooks package and the client's secret.
 */
describe('event subscriptions: events/subscribe and events/unsubscribe (webhook mode)', () => {
  let m: MessagingTestApp;
  let s: Session;
  let receiver: TestReceiver;
  let base: string;

  beforeAll(async () => {
    m = await createMessagingTestApp({
      EVENT_SUBSCRIPTIONS_PER_KEY: String(MAX_PER_KEY),
      EVENT_SUBSCRIPTION_MIN_TTL_MS: '1000',
      EVENT_SUBSCRIPTION_SWEEP_MS: '200',
      // These tests verify many URLs with one key; the budget has a test of its own below.
      EVENT_SUBSCRIPTION_VERIFICATIONS_LIMIT: '0',
      // Retries come soon, for the watermark's test.
      DELIVERY_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
    });
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    receiver = new TestReceiver();
    receiver.respond = answer;
    base = await receiver.start();
  });
  afterAll(async () => {
    await m?.close();
    await receiver?.stop();
  });

  const at = (path: string) => receiver.requests.filter((r) => r.url === path);
  const deliveriesAt = (path: string) => at(path).filter((r) => !r.body.includes('"type":"verification"'));
  const rows = async (id: string) => (await m.db.query(`SELECT id FROM event_subscriptions WHERE id = $1`, [id])).length;

  describe.each([
    ['v1 client (2025-11-25)', connectLegacy],
    ['v2 client (2026-07-28)', connectModern],
  ])('%s', (name, connect) => {
    let c: EventsClient;
    const path = `/sub-${name.slice(0, 2)}`;
    beforeAll(async () => {
      c = await connect(m.baseUrl, s.apiKey);
    });
    afterAll(async () => {
      await c?.close();
    });

    it('subscribes after the URL answers the challenge; an inbound SMS is delivered as an EventOccurrence, signed with the client secret', async () => {
      const { events } = await c.request('events/list');
      expect(events.every((e: Result) => e.delivery.includes('webhook'))).toBe(true);

      const secret = newSecret();
      const params = { name: 'message.received', arguments: { mode: 'concise' }, delivery: { mode: 'webhook', url: `${base}${path}`, secret }, ttlMs: 60_000 };
      const before = Date.now();
      const sub = await c.request('events/subscribe', params);
      expect(sub).toMatchObject({ id: expect.stringMatching(/^sub_[0-9a-f]{32}$/), truncated: false, cursor: expect.any(String) });
      expect(Date.parse(sub.refreshBefore)).toBeGreaterThanOrEqual(before + 60_000);
      expect(Date.parse(sub.refreshBefore)).toBeLessThanOrEqual(Date.now() + 60_000);
      const [challenge] = at(path);
      expect(JSON.parse(challenge.body)).toMatchObject({ type: 'verification', challenge: expect.any(String) });
      expect(challenge.headers['x-mcp-subscription-id']).toBe(sub.id);
      expect(() => new Webhook(secret).verify(challenge.body, challenge.headers as Record<string, string>)).not.toThrow();

      const sms = await inboundSms(m, s.lines[0].address, partnerPhone(), `to the subscription of ${name}`);
      await waitUntil(() => deliveriesAt(path).length >= 1, 'the event delivered to the subscription');
      const [delivery] = deliveriesAt(path);
      expect(delivery.headers['x-mcp-subscription-id']).toBe(sub.id);
      expect(delivery.headers['x-service-signature']).toBeUndefined();
      const verified = new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as Result;
      expect(verified).toMatchObject({ name: 'message.received', eventId: expect.stringMatching(/^evt_\d+$/), cursor: expect.any(String) });
      expect(verified.data).toMatchObject({ id: verified.eventId, type: 'message.received', mode: 'concise' });
      expect(verified.data.data.message).toMatchObject({ id: sms.messageId, direction: 'INBOUND' });
      expect(delivery.headers['webhook-id']).toBe(verified.eventId);
      expect(() => new Webhook(newSecret()).verify(delivery.body, delivery.headers as Record<string, string>)).toThrow();
      // The occurrence's cursor is the feed's: a poll from it resumes after this event.
      const after = await c.request('events/poll', { name: 'message.received', arguments: { mode: 'concise' }, cursor: verified.cursor, timeoutMs: 0 });
      expect(after.events).toEqual([]);
      // The delivery went through the engine's log, on the subscription's endpoint row (hidden from webhook tools).
      await waitUntil(async () => (await deliveriesIn(m, sub.id, 'succeeded')) === 1, 'the delivery logged as succeeded');

      // A refresh: same id, later refreshBefore, the delivery status; no second challenge.
      const challenges = at(path).length - deliveriesAt(path).length;
      const refreshed = await c.request('events/subscribe', { ...params, ttlMs: 120_000 });
      expect(refreshed.id).toBe(sub.id);
      expect(Date.parse(refreshed.refreshBefore)).toBeGreaterThan(Date.parse(sub.refreshBefore));
      expect(refreshed.deliveryStatus).toMatchObject({ active: true, consecutiveFailures: 0, lastError: null });
      expect(at(path).length - deliveriesAt(path).length).toBe(challenges);

      // Unsubscribe; then the same id is NotFound, and the row is gone.
      await c.request('events/unsubscribe', { id: sub.id });
      expect(await rows(sub.id)).toBe(0);
      expect(await refusal(c.request('events/unsubscribe', { id: sub.id }))).toMatchObject({ code: -32011, data: { kind: 'subscription' } });
    });

    it('answers each error code of the draft', async () => {
      const ok = { name: 'message.received', delivery: { mode: 'webhook', url: `${base}${path}-errors`, secret: newSecret() } };
      const bad = (delivery: object) => c.request('events/subscribe', { ...ok, delivery: { ...ok.delivery, ...delivery } });
      expect(await refusal(bad({ secret: 'not-a-secret' }))).toMatchObject({ code: -32602, data: { field: 'delivery.secret' } });
      expect(await refusal(bad({ secret: newSecret(16) }))).toMatchObject({ code: -32602, data: { field: 'delivery.secret' } });
      expect(await refusal(bad({ secret: newSecret(65) }))).toMatchObject({ code: -32602, data: { field: 'delivery.secret' } });
      expect(await refusal(bad({ url: 'ftp://example.com/hook' }))).toMatchObject({ code: -32602, data: { field: 'delivery.url' } });
      expect(await refusal(bad({ url: 'https://localhost/hook' }))).toMatchObject({ code: -32602, data: { field: 'delivery.url' } });
      expect(await refusal(bad({ mode: 'push' }))).toMatchObject({ code: -32014, data: { feature: 'delivery.mode', value: 'push' } });
      expect(await refusal(c.request('events/subscribe', { ...ok, name: 'message.nope' }))).toMatchObject({ code: -32011, data: { kind: 'event' } });
      expect(await refusal(bad({ url: `${base}/fails` }))).toMatchObject({ code: -32015, data: { reason: 'http_5xx' } });
      expect(await refusal(bad({ url: `${base}/wrong` }))).toMatchObject({ code: -32015, data: { reason: 'challenge_failed' } });
      const closed = await refusal(bad({ url: 'http://127.0.0.1:1/closed' }));
      expect(closed).toMatchObject({
        code: -32015,
        data: { reason: 'connection_refused', detail: 'the callback URL did not pass verification: the connection failed' },
      });
      // The network error's own words (address, port) are not handed back: the challenge is no probe.
      expect(JSON.stringify(closed)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
      expect(await refusal(c.request('events/unsubscribe', { id: 'sub_00000000000000000000000000000000' }))).toMatchObject({
        code: -32011,
        data: { kind: 'subscription' },
      });
    });
  });

  it('refuses a credential without the webhooks permission (-32012) and a subscription past the per-key limit (-32013)', async () => {
    const reader = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'no-webhooks', channelAccess: { mode: 'ALL' }, permissions: ['read'] }))
      .body;
    const r = await connectModern(m.baseUrl, reader.key);
    const capped = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'capped', channelAccess: { mode: 'ALL' }, permissions: ['webhooks'] }))
      .body;
    const c = await connectModern(m.baseUrl, capped.key);
    try {
      const params = (i: number) => ({ name: 'message.sent', delivery: { mode: 'webhook', url: `${base}/cap-${i}`, secret: newSecret() } });
      expect(await refusal(r.request('events/subscribe', params(0)))).toMatchObject({ code: -32012, data: { permission: 'webhooks' } });
      for (let i = 0; i < MAX_PER_KEY; i += 1) await c.request('events/subscribe', params(i));
      expect(await refusal(c.request('events/subscribe', params(MAX_PER_KEY)))).toMatchObject({
        code: -32013,
        data: { limit: 'subscriptions', max: MAX_PER_KEY },
      });
      // Refused before any request leaves: a key at its limit cannot make the service POST verification challenges to URLs of its choosing.
      expect(at(`/cap-${MAX_PER_KEY}`)).toEqual([]);
      // A refresh of one it holds is not a new one.
      expect((await c.request('events/subscribe', params(0))).deliveryStatus).toMatchObject({ active: true });
      // Hidden from the webhook tools: the rows exist, list_webhooks shows none of them.
      const stored = await m.db.query(`SELECT count(*)::int AS n FROM webhook_endpoints WHERE user_id = $1 AND url LIKE '%/cap-%'`, [s.userId]);
      expect(stored[0].n).toBe(MAX_PER_KEY);
      const { endpoints } = await toolOk(m, s.apiKey, 'list_webhooks', {});
      expect(endpoints.filter((e: Result) => e.url.includes('/cap-'))).toEqual([]);
    } finally {
      await r.close();
      await c.close();
    }
  });

  it('no event falls between subscribe and the first delivery: a subscribe waits for a fan-out under way, whose event is then before the answered cursor', async () => {
    const c = await connectModern(m.baseUrl, s.apiKey);
    const runner = m.db.createQueryRunner();
    await runner.connect();
    try {
      // A real event's data, to publish again as a new event in a relay transaction held open here.
      const seed = await inboundSms(m, s.lines[0].address, partnerPhone(), 'the data of the in-flight event');
      const [source] = await waitUntil(
        () =>
          m.db.query(`SELECT type, org_id, line_id, data FROM outbox_events WHERE type = 'message.received' AND data->'message'->>'id' = $1`, [seed.messageId]),
        'the seed event in the outbox',
      );
      // An in-flight relay: the event is written and claimed, fanned out (the shared lock taken,
      // the targets read: the subscription does not exist yet), not yet numbered nor committed.
      await runner.startTransaction();
      const [outboxId] = await m.app
        .get(OutboxRepository)
        .insert(runner.manager, [{ type: source.type, orgId: source.org_id, lineId: source.line_id, data: source.data }]);
      const event = {
        id: outboxId,
        type: source.type,
        orgId: source.org_id,
        lineId: source.line_id,
        data: source.data,
        occurredAt: new Date(),
        traceParent: null,
      };
      const enqueue = await m.app.get(FanOutSubscriber).handle([event as PublishedEvent], runner.manager);

      const params = { name: 'message.received', delivery: { mode: 'webhook', url: `${base}/race`, secret: newSecret() } };
      let settled = false;
      const subscribing = c.request('events/subscribe', params).finally(() => (settled = true));
      await waitUntil(
        async () =>
          (
            await m.db.query(
              `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND objid = $1 AND NOT granted`,
              [FAN_OUT_LOCK_KEY],
            )
          ).length > 0,
        'the subscribe waiting for the fan-out under way',
      );
      expect(settled).toBe(false);
      expect(
        await m.db.query(`SELECT 1 FROM event_subscriptions e JOIN webhook_endpoints w ON w.id = e.endpoint_id WHERE w.url = $1`, [`${base}/race`]),
      ).toEqual([]);

      // The relay numbers its event and commits; only then is the subscription created.
      await m.app.get(OutboxRepository).markRelayed(runner.manager, [outboxId]);
      await runner.commitTransaction();
      await enqueue();
      const sub = await subscribing;
      // The event is at or before the answered cursor (the client has it from before), and the
      // subscription was not among its targets; a poll from the cursor does not give it either.
      const poll = await c.request('events/poll', { name: 'message.received', cursor: sub.cursor, timeoutMs: 0 });
      expect(poll.events.map((e: Result) => e.eventId)).not.toContain(`evt_${outboxId}`);
      // The next event is delivered.
      const live = await inboundSms(m, s.lines[0].address, partnerPhone(), 'after the subscribe');
      await waitUntil(() => deliveriesAt('/race').some((r) => r.body.includes(live.messageId)), 'the live event delivered');
      expect(deliveriesAt('/race').some((r) => r.body.includes(`"evt_${outboxId}"`))).toBe(false);
      await c.request('events/unsubscribe', { id: sub.id });
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await runner.release();
      await c.close();
    }
  });

  it("a subscription made with a poll's cursor is delivered every event after it once, then live ones; made again after it lapsed, again", async () => {
    const r = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const c = await connectModern(m.baseUrl, r.apiKey);
    try {
      const feed = { name: 'message.received', arguments: { mode: 'concise' } };
      const start = await c.request('events/poll', { ...feed, cursor: null });
      const sent = [];
      for (const word of ['one', 'two', 'three']) sent.push(await inboundSms(m, r.lines[0].address, partnerPhone(), `before the subscribe: ${word}`));
      const before = await waitUntil(async () => {
        const page = await c.request('events/poll', { ...feed, cursor: start.cursor, timeoutMs: 0 });
        return page.events.length === sent.length && page;
      }, 'the three events in the feed');
      const ids = before.events.map((e: Result) => e.eventId);

      const secret = newSecret();
      const params = { ...feed, delivery: { mode: 'webhook', url: `${base}/replay`, secret }, cursor: start.cursor };
      const sub = await c.request('events/subscribe', params);
      expect(sub.truncated).toBe(false);
      // The answer's cursor is where deliveries start after: a poll from it gives the events replayed.
      const fromAnswer = await c.request('events/poll', { ...feed, cursor: sub.cursor, timeoutMs: 0 });
      expect(fromAnswer.events.map((e: Result) => e.eventId)).toEqual(ids);

      const occurrences = () => deliveriesAt('/replay').map((d) => new Webhook(secret).verify(d.body, d.headers as Record<string, string>) as Result);
      await waitUntil(() => occurrences().length >= ids.length, 'the replayed events delivered');
      expect(occurrences().map((o) => o.eventId)).toEqual(expect.arrayContaining(ids));
      // One row of the delivery engine per event, as fan-out makes them.
      const made = await m.db.query(
        `SELECT 'evt_' || d.source_event_id AS "eventId" FROM webhook_deliveries d JOIN event_subscriptions s ON s.endpoint_id = d.endpoint_id
          WHERE s.id = $1 ORDER BY d.source_event_id`,
        [sub.id],
      );
      expect(made.map((d: Result) => d.eventId)).toEqual(ids);

      // Then the live ones; a refresh with the same cursor replays nothing (its deliveries exist).
      const live = await inboundSms(m, r.lines[0].address, partnerPhone(), 'after the subscribe');
      await waitUntil(() => occurrences().some((o) => o.data.data.message.id === live.messageId), 'the live event delivered');
      const refreshed = await c.request('events/subscribe', params);
      expect(refreshed).toMatchObject({ id: sub.id, truncated: false, deliveryStatus: { active: true } });
      const all = [...ids, occurrences().find((o) => o.data.data.message.id === live.messageId)!.eventId];
      await waitUntil(
        async () =>
          (
            await m.db.query(
              `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN event_subscriptions s ON s.endpoint_id = d.endpoint_id WHERE s.id = $1 AND d.status = 'succeeded'`,
              [sub.id],
            )
          )[0].n === all.length,
        'every delivery succeeded',
      );
      expect(
        occurrences()
          .map((o) => o.eventId)
          .sort(),
      ).toEqual([...all].sort()); // each once

      // Lapsed (expired, not swept yet, or swept): subscribing again with the first cursor replays all four, once each.
      await m.db.query(`UPDATE event_subscriptions SET expires_at = now() - interval '1 second' WHERE id = $1`, [sub.id]);
      const again = await c.request('events/subscribe', params);
      expect(again).toMatchObject({ id: sub.id, truncated: false });
      expect(again.deliveryStatus).toBeUndefined();
      await waitUntil(() => occurrences().length >= 2 * all.length, 'the lapsed subscription replayed');
      const counts = new Map<string, number>();
      for (const o of occurrences()) counts.set(o.eventId, (counts.get(o.eventId) ?? 0) + 1);
      expect(Object.fromEntries(counts)).toEqual(Object.fromEntries(all.map((id) => [id, 2])));
      await c.request('events/unsubscribe', { id: sub.id });
    } finally {
      await c.close();
    }
  });

  it(`a cursor with more than ${REPLAY_MAX} events after it replays nothing by webhook and answers truncated, with the head`, async () => {
    const r = await createSession(m.admin, { lines: [] });
    const c = await connectModern(m.baseUrl, r.apiKey);
    try {
      const feed = { name: 'contact.merged', arguments: {} };
      const start = await c.request('events/poll', { ...feed, cursor: null });
      const merged = () => ({
        type: 'contact.merged' as const,
        orgId: r.orgId,
        lineId: null,
        data: { contact: { id: randomUUID(), displayName: null, identities: [] }, mergedContactIds: [randomUUID()] },
      });
      await m.db.transaction((manager) => m.app.get(OutboxRepository).insert(manager, Array.from({ length: REPLAY_MAX + 1 }, merged)));
      await m.app.get(OutboxRepository).notify();
      await waitUntil(
        async () =>
          (await m.db.query(`SELECT count(*)::int AS n FROM outbox_events WHERE org_id = $1 AND feed_position IS NOT NULL`, [r.orgId]))[0].n === REPLAY_MAX + 1,
        'the events relayed',
      );
      const sub = await c.request('events/subscribe', {
        ...feed,
        delivery: { mode: 'webhook', url: `${base}/too-many`, secret: newSecret() },
        cursor: start.cursor,
      });
      expect(sub.truncated).toBe(true);
      expect((await c.request('events/poll', { ...feed, cursor: sub.cursor, timeoutMs: 0 })).events).toEqual([]);
      expect(await deliveriesIn(m, sub.id)).toBe(0);
      // The client fetches them with events/poll from its own cursor.
      expect((await c.request('events/poll', { ...feed, cursor: start.cursor, timeoutMs: 0, maxEvents: 100 })).hasMore).toBe(true);
      await c.request('events/unsubscribe', { id: sub.id });
    } finally {
      await c.close();
    }
  });

  it("a delivery's cursor is a watermark: while an earlier event is retried it stays before that event; once it succeeds, past both", async () => {
    const r = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const c = await connectModern(m.baseUrl, r.apiKey);
    const tag = randomBytes(4).toString('hex');
    let holdFirst = true;
    const previous = receiver.respond;
    // Event 1 is answered 500 (retried) until told otherwise; everything else as usual.
    receiver.respond = (req) =>
      req.url === '/watermark' && holdFirst && req.body.includes(`${tag} one`) && !req.body.includes('"type":"verification"')
        ? { status: 500, body: 'not yet', headers: { 'content-type': 'text/plain' } }
        : answer(req);
    try {
      const feed = { name: 'message.received', arguments: { mode: 'concise' } };
      const secret = newSecret();
      const sub = await c.request('events/subscribe', { ...feed, delivery: { mode: 'webhook', url: `${base}/watermark`, secret } });
      const bodies = (word: string) =>
        deliveriesAt('/watermark')
          .filter((d) => d.body.includes(`${tag} ${word}`))
          .map((d) => new Webhook(secret).verify(d.body, d.headers as Record<string, string>) as Result);
      await inboundSms(m, r.lines[0].address, partnerPhone(), `${tag} one`);
      await waitUntil(async () => (await deliveriesIn(m, sub.id, 'retrying')) === 1, 'event 1 answered 500 and waiting for its retry');
      const first = bodies('one')[0].eventId;
      await inboundSms(m, r.lines[0].address, partnerPhone(), `${tag} two`);
      const [second] = await waitUntil(() => bodies('two').length > 0 && bodies('two'), 'event 2 delivered');
      // Event 2's cursor, given to events/poll, gives event 1 (then 2): persisting it skips nothing.
      const fromSecond = await c.request('events/poll', { ...feed, cursor: second.cursor, timeoutMs: 0 });
      expect(fromSecond.events.map((e: Result) => e.eventId)).toEqual([first, second.eventId]);
      // A refresh answers the same watermark.
      const refreshed = await c.request('events/subscribe', { ...feed, delivery: { mode: 'webhook', url: `${base}/watermark`, secret } });
      expect((await c.request('events/poll', { ...feed, cursor: refreshed.cursor, timeoutMs: 0 })).events.map((e: Result) => e.eventId)).toEqual([
        first,
        second.eventId,
      ]);

      // Event 1 succeeds on a retry: its cursor is past both.
      holdFirst = false;
      await waitUntil(async () => (await deliveriesIn(m, sub.id, 'succeeded')) === 2, 'event 1 succeeded on a retry');
      const retried = bodies('one').at(-1)!;
      expect(retried.eventId).toBe(first);
      expect((await c.request('events/poll', { ...feed, cursor: retried.cursor, timeoutMs: 0 })).events).toEqual([]);
      await c.request('events/unsubscribe', { id: sub.id });
    } finally {
      receiver.respond = previous;
      await c.close();
    }
  });

  it('a subscription whose TTL ran out receives nothing and its row goes; one still live receives', async () => {
    const c = await connectModern(m.baseUrl, s.apiKey);
    try {
      const short = await c.request('events/subscribe', {
        name: 'message.received',
        delivery: { mode: 'webhook', url: `${base}/short`, secret: newSecret() },
        ttlMs: 1,
      });
      const long = await c.request('events/subscribe', { name: 'message.received', delivery: { mode: 'webhook', url: `${base}/long`, secret: newSecret() } });
      // ttlMs 1 is raised to EVENT_SUBSCRIPTION_MIN_TTL_MS (1 s here); ttlMs absent gets the longest (7 days).
      expect(Date.parse(short.refreshBefore) - Date.now()).toBeLessThanOrEqual(1000);
      expect(Date.parse(long.refreshBefore) - Date.now()).toBeGreaterThan(6 * 86_400_000);
      await waitUntil(async () => (await rows(short.id)) === 0, 'the expired subscription swept');
      const sms = await inboundSms(m, s.lines[1].address, partnerPhone(), 'after the short one expired');
      await waitUntil(() => deliveriesAt('/long').some((r) => r.body.includes(sms.messageId)), 'the live subscription delivered');
      // Nothing at all after the challenge: an expired subscription gets no terminated notice (its client stopped refreshing).
      expect(at('/short').map((r) => (JSON.parse(r.body) as { type?: string }).type)).toEqual(['verification']);
      // Unsubscribe by what it was made with (name, arguments, delivery.url) instead of its id.
      await c.request('events/unsubscribe', { name: 'message.received', delivery: { url: `${base}/long` } });
      expect(await rows(long.id)).toBe(0);
    } finally {
      await c.close();
    }
  });

  it('a MEMBER who loses a line stops receiving its events at once; the other line still delivers', async () => {
    const member = await createSession(m.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    const c = await connectLegacy(m.baseUrl, member.apiKey);
    try {
      const sub = await c.request('events/subscribe', { name: 'message.received', delivery: { mode: 'webhook', url: `${base}/member`, secret: newSecret() } });
      expect(sub.id).toMatch(/^sub_/);
      expect((await m.admin.delete(`/admin/lines/${member.lines[0].id}/members/${member.userId}`)).status).toBeLessThan(300);
      const lost = await inboundSms(m, member.lines[0].address, partnerPhone(), 'lost line');
      const kept = await inboundSms(m, member.lines[1].address, partnerPhone(), 'kept line');
      await waitUntil(() => deliveriesAt('/member').some((r) => r.body.includes(kept.messageId)), 'the kept line delivered');
      expect(deliveriesAt('/member').some((r) => r.body.includes(lost.messageId))).toBe(false);
    } finally {
      await c.close();
    }
  });

  it('a credential narrowed to another line, or stripped of the webhooks permission, stops deliveries at once; a revoked one loses its subscription', async () => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'subscriber', channelAccess: { mode: 'ALL' }, permissions: ['webhooks'] }))
      .body;
    const c = await connectModern(m.baseUrl, key.key);
    const secret = newSecret();
    try {
      const sub = await c.request('events/subscribe', {
        name: 'message.received',
        delivery: { mode: 'webhook', url: `${base}/narrowed`, secret },
      });
      const first = await inboundSms(m, s.lines[0].address, partnerPhone(), 'before narrowing');
      await waitUntil(() => deliveriesAt('/narrowed').some((r) => r.body.includes(first.messageId)), 'delivered while the key allows the line');
      // Narrowed to line 1: line 0's events stop, line 1's still come.
      expect((await m.admin.patch(`/admin/api-keys/${key.id}`, { channelAccess: { mode: 'LINES', lines: [s.lines[1].address] } })).status).toBe(200);
      const hidden = await inboundSms(m, s.lines[0].address, partnerPhone(), 'outside the narrowed key');
      const shown = await inboundSms(m, s.lines[1].address, partnerPhone(), 'inside the narrowed key');
      await waitUntil(() => deliveriesAt('/narrowed').some((r) => r.body.includes(shown.messageId)), 'the allowed line delivered');
      expect(deliveriesAt('/narrowed').some((r) => r.body.includes(hidden.messageId))).toBe(false);
      // Without the webhooks permission nothing is delivered (the event still goes to another subscriber, which proves it was relayed).
      const witness = await connectModern(m.baseUrl, s.apiKey);
      const other = await witness.request('events/subscribe', {
        name: 'message.received',
        delivery: { mode: 'webhook', url: `${base}/witness`, secret: newSecret() },
      });
      expect((await m.admin.patch(`/admin/api-keys/${key.id}`, { permissions: ['read'] })).status).toBe(200);
      const stripped = await inboundSms(m, s.lines[1].address, partnerPhone(), 'after the permission went');
      await waitUntil(() => deliveriesAt('/witness').some((r) => r.body.includes(stripped.messageId)), 'the witness delivered');
      expect(deliveriesAt('/narrowed').some((r) => r.body.includes(stripped.messageId))).toBe(false);
      await witness.request('events/unsubscribe', { id: other.id });
      await witness.close();
      // Revoked: the sweep deletes the subscription.
      expect((await m.admin.delete(`/admin/api-keys/${key.id}`)).status).toBeLessThan(300);
      await waitUntil(async () => (await rows(sub.id)) === 0, "the revoked key's subscription swept");
      // And says so to the URL, once: the draft's terminated envelope, signed with the client's secret.
      const [notice] = await waitUntil(() => {
        const found = at('/narrowed').filter((r) => r.body.includes('"type":"terminated"'));
        return found.length > 0 && found;
      }, 'the terminated envelope');
      expect(new Webhook(secret).verify(notice.body, notice.headers as Record<string, string>)).toEqual({
        type: 'terminated',
        error: { code: -32012, message: expect.stringMatching(/^Forbidden: /), data: expect.objectContaining({ reason: 'access_revoked' }) },
      });
      expect(notice.headers['x-mcp-subscription-id']).toBe(sub.id);
      expect(notice.headers['webhook-id']).toMatch(/^msg_terminated_[0-9a-f]{24}$/);
      expect(at('/narrowed').filter((r) => r.body.includes('"type":"terminated"'))).toHaveLength(1);
    } finally {
      await c.close().catch(() => undefined);
    }
  });

  it('a failing subscription is disabled by the engine like an endpoint; a refresh reports it and turns it back on', async () => {
    const c = await connectModern(m.baseUrl, s.apiKey);
    try {
      const params = { name: 'message.received', delivery: { mode: 'webhook', url: `${base}/flaky`, secret: newSecret() } };
      const sub = await c.request('events/subscribe', params);
      const [{ endpoint_id: endpointId }] = await m.db.query(`SELECT endpoint_id FROM event_subscriptions WHERE id = $1`, [sub.id]);
      await m.db.query(`UPDATE webhook_endpoints SET consecutive_failures = 99, failing_since = now() WHERE id = $1`, [endpointId]);
      await inboundSms(m, s.lines[0].address, partnerPhone(), 'to a failing subscriber');
      await waitUntil(
        async () => (await m.db.query(`SELECT status FROM webhook_endpoints WHERE id = $1`, [endpointId]))[0].status === 'disabled',
        'the subscription disabled at 100 failures',
      );
      expect(deliveriesAt('/flaky')).toHaveLength(1);
      const refreshed = await c.request('events/subscribe', params);
      expect(refreshed.id).toBe(sub.id);
      expect(refreshed.deliveryStatus).toMatchObject({ active: false, consecutiveFailures: 100, disabledReason: expect.stringMatching(/100 consecutive/) });
      expect(refreshed.deliveryStatus.lastError).toMatch(/500/);
      const [row] = await m.db.query(`SELECT status, consecutive_failures, disabled_notice_due FROM webhook_endpoints WHERE id = $1`, [endpointId]);
      expect(row).toEqual({ status: 'active', consecutive_failures: 0, disabled_notice_due: false });
      await c.request('events/unsubscribe', { id: sub.id });
    } finally {
      await c.close();
    }
  });
});

describe('event subscriptions: the budget of new callback URLs per credential', () => {
  it('verifies at most EVENT_SUBSCRIPTION_VERIFICATIONS_LIMIT new URLs per window, passed or failed; past it -32013 and nothing is sent, while refreshes go on', async () => {
    const m = await createMessagingTestApp({ EVENT_SUBSCRIPTION_VERIFICATIONS_LIMIT: '3', EVENT_SUBSCRIPTION_VERIFICATIONS_WINDOW_SECONDS: '3600' });
    const receiver = new TestReceiver();
    receiver.respond = answer;
    const base = await receiver.start();
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const other = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'other', channelAccess: { mode: 'ALL' } })).body;
    const c = await connectModern(m.baseUrl, s.apiKey);
    const o = await connectModern(m.baseUrl, other.key);
    try {
      const params = (path: string) => ({ name: 'message.received', delivery: { mode: 'webhook', url: `${base}${path}`, secret: newSecret() } });
      await c.request('events/subscribe', params('/budget-1'));
      // A failed verification spends the budget too: it is the probe the budget is about.
      expect(await refusal(c.request('events/subscribe', params('/fails-budget')))).toMatchObject({ code: -32015 });
      await c.request('events/subscribe', params('/budget-2'));
      const past = await refusal(c.request('events/subscribe', params('/budget-3')));
      expect(past).toMatchObject({
        code: -32013,
        data: { limit: 'callbackVerifications', max: 3, windowSeconds: 3600, retryAfterSeconds: expect.any(Number) },
      });
      expect(receiver.requests.filter((r) => r.url === '/budget-3')).toEqual([]);
      // A refresh verifies nothing and is not refused; another credential has a budget of its own.
      expect((await c.request('events/subscribe', params('/budget-1'))).deliveryStatus).toMatchObject({ active: true });
      expect((await o.request('events/subscribe', params('/budget-3'))).id).toMatch(/^sub_/);
    } finally {
      await c.close();
      await o.close();
      await m.close();
      await receiver.stop();
    }
  });
});
