import { createHash, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { FeedWakes } from '../../src/event-feed/feed-wakes';
import { OutboxRepository } from '../../src/events/outbox.repository';
import { cursorPosition, getEvents } from '../support/event-feed';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { rpc } from '../support/mcp';
import { modernRpc } from '../support/mcp-modern';
import { connectApp } from '../support/oauth';
import { signInBrowser } from '../support/web';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';
import { connectLegacy, connectModern, EventsClient, refusal, Result } from '../support/mcp-events-clients';

/**
 * MCP Events (the working group's draft) and the HTTP feed over the committed event log, through
 * the official clients of both SDK lines: the catalog, poll from a cursor, a long poll woken by an
 * inbound SMS, scope decided at read time, the permission, the draft's error codes, resume across
 * a restart of the service, truncation behind retention.
 */
describe('event feed: events/list, events/poll and GET /api/events', () => {
  let m: MessagingTestApp;
  let s: Session;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
  });
  afterAll(async () => {
    await m?.close();
  });

  const phone = (i: number) => s.lines[i].address;

  describe.each([
    ['v1 client (2025-11-25)', connectLegacy],
    ['v2 client (2026-07-28)', connectModern],
  ])('%s', (_name, connect) => {
    let c: EventsClient;
    beforeAll(async () => {
      c = await connect(m.baseUrl, s.apiKey);
    });
    afterAll(async () => {
      await c?.close();
    });

    it('sees the extension in the capabilities and the thirteen kinds in events/list', async () => {
      // The SDKs keep only the capabilities their schema knows: the 2026-07-28 `extensions` map (server/discover below shows the draft's `events` too).
      expect(c.capabilities()).toMatchObject({ extensions: { 'io.modelcontextprotocol/events': { listChanged: false } } });
      const { events } = await c.request('events/list');
      expect(events.map((e: Result) => e.name)).toEqual([
        'message.received',
        'message.sent',
        'message.status_changed',
        'thread.created',
        'email.opened',
        'attachment.extracted',
        'contact.merged',
        'email_account.health_changed',
        'agent_turn.awaiting_approval',
        'agent_turn.sent',
        'sms.opted_out',
        'sms.opted_in',
        'agent_turn.rejected',
      ]);
      const received = events[0];
      expect(received.delivery).toEqual(['poll', 'push', 'webhook']);
      expect(Object.keys(received.inputSchema.properties)).toEqual(['line', 'thread', 'direction', 'label', 'mode', 'messageHistoryCount']);
      expect(Object.keys(events[6].inputSchema.properties)).toEqual(['mode', 'messageHistoryCount']);
      // The catalog's envelope of each mode, told apart by `mode` (the client's helper checked it is EventCatalog's, and compiles).
      expect(received.payloadSchema.oneOf.map((branch: Result) => [branch.properties.mode.const, branch.properties.data.$ref])).toEqual([
        ['concise', '#/$defs/conciseData'],
        ['verbose', '#/$defs/verboseData'],
      ]);
    });

    it('polls from now, gets an inbound SMS once, in the webhook envelope of the asked mode', async () => {
      const start = await c.request('events/poll', { name: 'message.received', arguments: {}, cursor: null });
      expect(start).toMatchObject({ events: [], truncated: false, hasMore: false });
      expect(typeof start.cursor).toBe('string');
      const from = partnerPhone();
      const sms = await inboundSms(m, phone(0), from, 'first of the feed');
      const got = await c.request('events/poll', {
        name: 'message.received',
        arguments: { mode: 'verbose', messageHistoryCount: 1 },
        cursor: start.cursor,
        timeoutMs: 10_000,
      });
      expect(got.events).toHaveLength(1);
      const [event] = got.events;
      expect(event).toMatchObject({ name: 'message.received', eventId: expect.stringMatching(/^evt_\d+$/), timestamp: expect.any(String) });
      expect(event.data).toMatchObject({ id: event.eventId, type: 'message.received', mode: 'verbose', createdAt: event.timestamp });
      expect(event.data.data.message).toMatchObject({ id: sms.messageId, body: 'first of the feed', direction: 'INBOUND' });
      expect(event.data.data.thread.recentMessages).toHaveLength(1);
      expect(event.data.data).toHaveProperty('attachments');
      const again = await c.request('events/poll', { name: 'message.received', cursor: got.cursor, timeoutMs: 0 });
      expect(again.events).toEqual([]);
      expect(again.nextPollMs).toBeGreaterThan(0);
    });
  });

  it('a long poll waiting for an event returns as soon as an inbound SMS commits, woken over Redis', async () => {
    const c = await connectModern(m.baseUrl, s.apiKey);
    try {
      const { cursor } = await c.request('events/poll', { name: 'message.received', arguments: { line: s.lines[1].id }, cursor: null });
      const wakes = m.app.get(FeedWakes);
      const waiting = wakes.waitingFor(s.orgId);
      const polled = c.request('events/poll', { name: 'message.received', arguments: { line: s.lines[1].id }, cursor, timeoutMs: 30_000 });
      await waitUntil(() => wakes.waitingFor(s.orgId) > waiting, 'the poll to wait');
      const sentAt = Date.now();
      const sms = await inboundSms(m, phone(1), partnerPhone(), 'wake up');
      const answer = await polled;
      // Well under the recheck: the wake, not the timer, ended the wait.
      expect(Date.now() - sentAt).toBeLessThan(m.config.eventFeed.recheckMs);
      expect(answer.events.map((e: Result) => e.data.data.message.id)).toEqual([sms.messageId]);
    } finally {
      await c.close();
    }
  });

  it('a waiting poll whose key is revoked is refused at once, and so is the next request', async () => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'revoked mid-wait', channelAccess: { mode: 'ALL' } })).body;
    const c = await connectLegacy(m.baseUrl, key.key);
    try {
      const { cursor } = await c.request('events/poll', { name: 'thread.created', cursor: null });
      const wakes = m.app.get(FeedWakes);
      const waiting = wakes.waitingFor(s.orgId);
      const polled = c.request('events/poll', { name: 'thread.created', cursor, timeoutMs: 30_000 });
      await waitUntil(() => wakes.waitingFor(s.orgId) > waiting, 'the poll to wait');
      const revokedAt = Date.now();
      expect((await m.admin.delete(`/admin/api-keys/${key.id}`)).status).toBeLessThan(300);
      // The draft's termination of a poll: Forbidden, at once (the credential change is heard over Redis), not at the timeout.
      expect(await refusal(polled)).toEqual({ code: -32012, data: expect.objectContaining({ reason: 'access_revoked' }) });
      expect(Date.now() - revokedAt).toBeLessThan(m.config.eventFeed.recheckMs);
      const next = await m
        .http()
        .post('/api/mcp')
        .set('Authorization', `Bearer ${key.key}`)
        .send({ jsonrpc: '2.0', id: 1, method: 'events/poll', params: { name: 'thread.created', cursor } });
      expect(next.status).toBe(401);
    } finally {
      await c.close().catch(() => undefined);
    }
  });

  it('a client that hangs up ends its waiting poll, over MCP and over HTTP: its place among the waiting polls is given back', async () => {
    const wakes = m.app.get(FeedWakes);
    const before = wakes.waitingFor(s.orgId);
    /** Starts a request on its own connection and answers how to hang it up. */
    const start = (method: string, path: string, body?: object) => {
      const req = httpRequest(`${m.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      });
      req.on('error', () => undefined);
      req.end(body === undefined ? undefined : JSON.stringify(body));
      return () => req.destroy();
    };
    const { cursor } = (await rpc(m, s.apiKey, 'events/poll', { name: 'agent_turn.awaiting_approval', cursor: null })).body.result;
    const hangUpMcp = start('POST', '/api/mcp', {
      jsonrpc: '2.0',
      id: 'wait',
      method: 'events/poll',
      params: { name: 'agent_turn.awaiting_approval', cursor, timeoutMs: 30_000 },
    });
    await waitUntil(() => wakes.waitingFor(s.orgId) === before + 1, 'the MCP poll to wait');
    hangUpMcp();
    await waitUntil(() => wakes.waitingFor(s.orgId) === before, 'the MCP poll to stop waiting');
    const feedCursor = (await getEvents(m, `Bearer ${s.apiKey}`)).body.cursor as string;
    const hangUpHttp = start('GET', `/api/events?cursor=${encodeURIComponent(feedCursor)}&wait=30`);
    await waitUntil(() => wakes.waitingFor(s.orgId) === before + 1, 'the HTTP poll to wait');
    hangUpHttp();
    await waitUntil(() => wakes.waitingFor(s.orgId) === before, 'the HTTP poll to stop waiting');
  });

  it('GET /api/events with wait holds the request until an event commits', async () => {
    const wakes = m.app.get(FeedWakes);
    const before = wakes.waitingFor(s.orgId);
    const auth = `Bearer ${s.apiKey}`;
    const { cursor } = (await getEvents(m, auth, { line: s.lines[1].id })).body;
    const held = getEvents(m, auth, { line: s.lines[1].id, cursor, wait: '30' }).then((res) => res);
    await waitUntil(() => wakes.waitingFor(s.orgId) > before, 'the HTTP poll to wait');
    const sms = await inboundSms(m, phone(1), partnerPhone(), 'held request');
    const res = await held;
    expect(res.status).toBe(200);
    // thread.created may come first when the partner is new: the message is among the events.
    expect(res.body.events.map((e: Result) => e.data.data.message?.id)).toContain(sms.messageId);
  });

  it('filters by line, direction and thread; a cursor of another subscription is refused', async () => {
    const c = await connectLegacy(m.baseUrl, s.apiKey);
    try {
      const onLine0 = { name: 'message.received', arguments: { line: s.lines[0].id, direction: 'INBOUND' } };
      const { cursor } = await c.request('events/poll', { ...onLine0, cursor: null });
      await inboundSms(m, phone(1), partnerPhone(), 'other line');
      const mine = await inboundSms(m, phone(0), partnerPhone(), 'this line');
      const got = await c.request('events/poll', { ...onLine0, cursor, timeoutMs: 10_000 });
      expect(got.events.map((e: Result) => e.data.data.message.id)).toEqual([mine.messageId]);
      const byThread = await c.request('events/poll', { name: 'message.received', arguments: { thread: mine.threadId }, cursor: null });
      const foreign = await refusal(c.request('events/poll', { name: 'message.received', cursor: byThread.cursor }));
      expect(foreign).toEqual({ code: -32602, data: expect.objectContaining({ field: 'cursor' }) });
    } finally {
      await c.close();
    }
  });

  it("answers the draft's error codes with their data", async () => {
    const c = await connectModern(m.baseUrl, s.apiKey);
    const reader = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'reader', channelAccess: { mode: 'ALL' }, permissions: ['read', 'send'] }))
      .body.key as string;
    const r = await connectModern(m.baseUrl, reader);
    try {
      expect(await refusal(c.request('events/poll', { name: 'message.deleted', cursor: null }))).toEqual({
        code: -32011,
        data: expect.objectContaining({ kind: 'event', field: 'name' }),
      });
      expect(await refusal(c.request('events/poll', { name: 'message.received', arguments: { direction: 'SIDEWAYS' }, cursor: null }))).toEqual({
        code: -32602,
        data: expect.objectContaining({ field: 'arguments.direction' }),
      });
      expect(await refusal(c.request('events/poll', { name: 'contact.merged', arguments: { line: s.lines[0].id }, cursor: null }))).toEqual({
        code: -32602,
        data: expect.objectContaining({ field: 'arguments.line' }),
      });
      expect(await refusal(c.request('events/poll', { name: 'message.received', cursor: 'hist_99842' }))).toEqual({
        code: -32602,
        data: expect.objectContaining({ field: 'cursor' }),
      });
      expect(await refusal(c.request('events/poll', { name: 'message.received', cursor: null, maxEvents: 0 }))).toEqual({
        code: -32602,
        data: expect.objectContaining({ field: 'maxEvents' }),
      });
      expect(await refusal(r.request('events/poll', { name: 'message.received', cursor: null }))).toEqual({
        code: -32012,
        data: expect.objectContaining({ permission: 'webhooks', reason: 'missing_permission' }),
      });
      // One more waiting poll than a key may hold: ResourceExhausted naming the limit.
      const { cursor } = await c.request('events/poll', { name: 'agent_turn.sent', cursor: null });
      const wakes = m.app.get(FeedWakes);
      const before = wakes.waitingFor(s.orgId);
      const waiting = Array.from({ length: m.config.eventFeed.longPollsPerKey }, () =>
        c.request('events/poll', { name: 'agent_turn.sent', cursor, timeoutMs: 5_000 }),
      );
      await waitUntil(() => wakes.waitingFor(s.orgId) >= before + m.config.eventFeed.longPollsPerKey, 'the polls to wait');
      expect(await refusal(c.request('events/poll', { name: 'agent_turn.sent', cursor, timeoutMs: 5_000 }))).toEqual({
        code: -32013,
        data: expect.objectContaining({ limit: 'concurrentLongPolls', max: m.config.eventFeed.longPollsPerKey }),
      });
      for (const answer of await Promise.all(waiting)) expect(answer.events).toEqual([]);
    } finally {
      await c.close();
      await r.close();
    }
  });

  it('a MEMBER who loses a line no longer sees its events, checked when the events are read', async () => {
    const member = await createSession(m.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    const c = await connectModern(m.baseUrl, member.apiKey);
    try {
      const { cursor } = await c.request('events/poll', { name: 'message.received', cursor: null });
      const kept = await inboundSms(m, member.lines[1].address, partnerPhone(), 'kept line');
      const lost = await inboundSms(m, member.lines[0].address, partnerPhone(), 'lost line, before');
      await waitUntil(
        async () =>
          (
            await m.db.query(`SELECT count(*)::int AS n FROM outbox_events WHERE org_id = $1 AND feed_position IS NOT NULL AND type = 'message.received'`, [
              member.orgId,
            ])
          )[0].n >= 2,
        'both events relayed',
      );
      expect((await m.admin.delete(`/admin/lines/${member.lines[0].id}/members/${member.userId}`)).status).toBeLessThan(300);
      const after = await inboundSms(m, member.lines[0].address, partnerPhone(), 'lost line, after');
      const kept2 = await inboundSms(m, member.lines[1].address, partnerPhone(), 'kept line, after');
      const got = await c.request('events/poll', { name: 'message.received', cursor, timeoutMs: 10_000 });
      let ids = got.events.map((e: Result) => e.data.data.message.id);
      let next = got.cursor;
      while (!ids.includes(kept2.messageId)) {
        const more = await c.request('events/poll', { name: 'message.received', cursor: next, timeoutMs: 10_000 });
        ids = [...ids, ...more.events.map((e: Result) => e.data.data.message.id)];
        next = more.cursor;
      }
      expect(ids).toEqual([kept.messageId, kept2.messageId]);
      expect(ids).not.toContain(lost.messageId);
      expect(ids).not.toContain(after.messageId);
    } finally {
      await c.close();
    }
  });

  it('a cursor reveals no position: a scoped caller cannot read the org head from it, and a cursor written by hand is refused', async () => {
    // A MEMBER of the same org holding only its own line; an SMS arrives on a line it does not hold.
    const member = await createSession(m.admin, { orgId: s.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    await inboundSms(m, phone(0), partnerPhone(), 'not for the member');
    const headOf = async () =>
      (await m.db.query(`SELECT max(feed_position)::text AS head FROM outbox_events WHERE org_id = $1 AND feed_position IS NOT NULL`, [s.orgId]))[0].head as
        string | null;
    await waitUntil(async () => {
      const [row] = await m.db.query(
        `SELECT count(*) FILTER (WHERE feed_position IS NULL)::int AS pending, count(*) FILTER (WHERE line_id = $2)::int AS n FROM outbox_events WHERE org_id = $1`,
        [s.orgId, s.lines[0].id],
      );
      return row.pending === 0 && row.n > 0;
    }, 'every event of the org relayed, the hidden one included');
    const head = await headOf();
    const start = await getEvents(m, `Bearer ${member.apiKey}`);
    expect(start.status).toBe(200);
    const text = Buffer.from(String(start.body.cursor).slice('ecur2_'.length), 'base64url').toString('latin1');
    expect(text).not.toMatch(new RegExp(`^${head}\\.`));
    // The documented scope of the all-kinds feed without filters, and a position chosen by hand.
    const scope = createHash('sha256')
      .update(JSON.stringify(['*', null, null, null, null]))
      .digest('hex')
      .slice(0, 16);
    const forged = 'ecur2_' + Buffer.from(`1.${scope}`, 'utf8').toString('base64url');
    const refused = await getEvents(m, `Bearer ${member.apiKey}`, { cursor: forged });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ field: 'cursor' });
    // The real cursor still works.
    const quiet = await getEvents(m, `Bearer ${member.apiKey}`, { cursor: start.body.cursor });
    expect(quiet.status).toBe(200);
    expect(quiet.body.events).toEqual([]);
    // Nothing the member may see happens, but the org's head moves (an SMS on the line it does not
    // hold): its next cursor cannot tell it so. Each answer mints a fresh cursor of one length,
    // whether the org was quiet or not.
    const before = await headOf();
    await inboundSms(m, phone(0), partnerPhone(), 'again not for the member');
    await waitUntil(async () => (await headOf()) !== before, 'the hidden event relayed');
    const moved = await getEvents(m, `Bearer ${member.apiKey}`, { cursor: quiet.body.cursor });
    const still = await getEvents(m, `Bearer ${member.apiKey}`, { cursor: quiet.body.cursor });
    expect(moved.body.events).toEqual([]);
    const cursors = [start.body.cursor, quiet.body.cursor, moved.body.cursor, still.body.cursor] as string[];
    expect(new Set(cursors).size).toBe(cursors.length);
    expect(new Set(cursors.map((c) => c.length)).size).toBe(1);
  });

  it('the HTTP feed: same reads, same auth, errors naming the parameter', async () => {
    const start = await getEvents(m, `Bearer ${s.apiKey}`);
    expect(start.status).toBe(200);
    expect(start.body).toMatchObject({ events: [], truncated: false, hasMore: false });
    const sms = await inboundSms(m, phone(0), partnerPhone(), 'over plain HTTP');
    const got = await getEvents(m, `Bearer ${s.apiKey}`, { cursor: start.body.cursor, type: 'message.received', wait: '10' });
    // A cursor of the all-kinds feed is not one of message.received's: refused, naming it.
    expect(got.status).toBe(400);
    expect(got.body).toMatchObject({ field: 'cursor' });
    const all = await getEvents(m, `Bearer ${s.apiKey}`, { cursor: start.body.cursor, wait: '10', limit: '100' });
    expect(all.status).toBe(200);
    expect(all.body.events.map((e: Result) => e.data.data.message?.id)).toContain(sms.messageId);
    const bad = (query: Record<string, string>) => getEvents(m, `Bearer ${s.apiKey}`, query);
    expect((await bad({ limit: 'lots' })).body).toMatchObject({ statusCode: 400, field: 'limit' });
    expect((await bad({ limit: '1000' })).body).toMatchObject({ statusCode: 400, field: 'limit' });
    expect((await bad({ wait: '31' })).body).toMatchObject({ statusCode: 400, field: 'wait' });
    expect((await bad({ type: 'message.deleted' })).body).toMatchObject({ statusCode: 404, field: 'type' });
    expect((await bad({ direction: 'UP' })).body).toMatchObject({ statusCode: 400, field: 'direction' });
    // A misspelt filter is refused, naming it, rather than answering every event unfiltered.
    expect((await bad({ lines: s.lines[0].id })).body).toMatchObject({ statusCode: 400, field: 'lines' });
    expect((await bad({ 'type[]': 'message.received' })).body).toMatchObject({ statusCode: 400, field: 'type[]' });
    expect((await getEvents(m, null)).status).toBe(401);
    const reader = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'reader2', channelAccess: { mode: 'ALL' }, permissions: ['read'] })).body
      .key as string;
    expect((await getEvents(m, `Bearer ${reader}`)).status).toBe(403);
  });

  it('an OAuth app with the webhooks permission polls over MCP, one without it is refused; its token is bound to /api/mcp, not the HTTP feed', async () => {
    const browser = await signInBrowser(m, s.userId);
    const app = await connectApp(m, browser, { choice: { access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on', 'permission-webhooks': 'on' } });
    const c = await connectModern(m.baseUrl, app.accessToken);
    const reader = await connectApp(m, browser, { clientName: 'reader app' }); // read only
    const r = await connectLegacy(m.baseUrl, reader.accessToken);
    try {
      expect(await c.request('events/poll', { name: 'message.received', cursor: null })).toMatchObject({ events: [], truncated: false });
      expect(await refusal(r.request('events/poll', { name: 'message.received', cursor: null }))).toEqual({
        code: -32012,
        data: expect.objectContaining({ permission: 'webhooks' }),
      });
    } finally {
      await c.close();
      await r.close();
    }
    // An access token's audience is the MCP endpoint (RFC 8707): the HTTP feed takes API keys.
    expect((await getEvents(m, `Bearer ${app.accessToken}`)).status).toBe(401);
  });

  it('maxAgeMs skips older events and says so (truncated), moving the cursor past them', async () => {
    const c = await connectLegacy(m.baseUrl, s.apiKey);
    try {
      const subscription = { name: 'message.received', arguments: { line: s.lines[0].id } };
      const { cursor } = await c.request('events/poll', { ...subscription, cursor: null });
      await inboundSms(m, phone(0), partnerPhone(), 'old news');
      const whole = await c.request('events/poll', { ...subscription, cursor, timeoutMs: 10_000 });
      expect(whole.events).toHaveLength(1);
      const floored = await c.request('events/poll', { ...subscription, cursor, maxAgeMs: 0, timeoutMs: 0 });
      expect(floored).toMatchObject({ events: [], truncated: true });
      expect(cursorPosition(m, floored.cursor, subscription)).toBe(cursorPosition(m, whole.cursor, subscription));
    } finally {
      await c.close();
    }
  });

  it('resumes from a cursor after a restart of the service: every event once, in order', async () => {
    const c = await connectLegacy(m.baseUrl, s.apiKey);
    const { cursor } = await c.request('events/poll', { name: 'message.received', arguments: { line: s.lines[1].id }, cursor: null });
    const sent = [];
    for (const body of ['one', 'two', 'three']) sent.push((await inboundSms(m, phone(1), partnerPhone(), body)).messageId);
    const first = await c.request('events/poll', { name: 'message.received', arguments: { line: s.lines[1].id }, cursor, maxEvents: 1, timeoutMs: 10_000 });
    expect(first.events.map((e: Result) => e.data.data.message.id)).toEqual([sent[0]]);
    await c.close();
    await m.close();
    m = await createMessagingTestApp();
    const c2 = await connectModern(m.baseUrl, s.apiKey);
    try {
      const seen = [...first.events.map((e: Result) => e.data.data.message.id)];
      let next = first.cursor;
      while (seen.length < 3) {
        const page = await c2.request('events/poll', { name: 'message.received', arguments: { line: s.lines[1].id }, cursor: next, timeoutMs: 10_000 });
        seen.push(...page.events.map((e: Result) => e.data.data.message.id));
        next = page.cursor;
      }
      expect(seen).toEqual(sent);
      const last = await c2.request('events/poll', { name: 'message.received', arguments: { line: s.lines[1].id }, cursor: next, timeoutMs: 0 });
      expect(last.events).toEqual([]);
    } finally {
      await c2.close();
    }
  });

  it('a cursor behind what retention deleted answers truncated, with a fresh cursor, never an error', async () => {
    const c = await connectModern(m.baseUrl, s.apiKey);
    try {
      const { cursor } = await c.request('events/poll', { name: 'message.received', cursor: null });
      await inboundSms(m, phone(0), partnerPhone(), 'to be deleted');
      const seen = await c.request('events/poll', { name: 'message.received', cursor, timeoutMs: 10_000 });
      expect(seen.events).toHaveLength(1);
      const deleted = await m.app.get(OutboxRepository).deleteRelayedBefore(0, { batchSize: 1000, pauseMs: 0 });
      expect(deleted).toBeGreaterThan(0);
      const stale = await c.request('events/poll', { name: 'message.received', cursor, timeoutMs: 0 });
      expect(stale).toMatchObject({ events: [], truncated: true });
      const fresh = await c.request('events/poll', { name: 'message.received', cursor: stale.cursor, timeoutMs: 0 });
      expect(fresh).toMatchObject({ events: [], truncated: false });
      // A cursor at the horizon or after it is not truncated.
      expect(await c.request('events/poll', { name: 'message.received', cursor: seen.cursor, timeoutMs: 0 })).toMatchObject({ truncated: false });
    } finally {
      await c.close();
    }
  });

  it('gives events in position order where positions gain a digit (99, 100): in order and none twice across pages', async () => {
    const r = await createSession(m.admin, { lines: [] });
    const c = await connectModern(m.baseUrl, r.apiKey);
    try {
      const feed = { name: 'contact.merged', arguments: {} };
      const start = await c.request('events/poll', { ...feed, cursor: null });
      // The next positions drawn are just below a power of ten (the sequence only moves forward: a gap, as a rollback leaves).
      const [{ p }] = await m.db.query(`SELECT GREATEST(last_value, 1)::text AS p FROM outbox_feed_position_seq`);
      await m.db.query(`SELECT setval('outbox_feed_position_seq', $1::bigint)`, [`${10n ** BigInt(p.length + 1) - 3n}`]);
      const merged = () => ({
        type: 'contact.merged' as const,
        orgId: r.orgId,
        lineId: null,
        data: { contact: { id: randomUUID(), displayName: null, identities: [] }, mergedContactIds: [randomUUID()] },
      });
      const written = await m.db.transaction((manager) => m.app.get(OutboxRepository).insert(manager, Array.from({ length: 5 }, merged)));
      await m.app.get(OutboxRepository).notify();
      const positions: Array<{ id: string; p: string }> = await waitUntil(async () => {
        const rows = await m.db.query(
          `SELECT id::text AS id, feed_position::text AS p FROM outbox_events WHERE org_id = $1 AND feed_position IS NOT NULL ORDER BY feed_position`,
          [r.orgId],
        );
        return rows.length === written.length && rows;
      }, 'the events relayed');
      expect(positions.map((x) => x.p.length)).toContain(p.length + 1);
      expect(new Set(positions.map((x) => x.p.length)).size).toBe(2);
      const got: string[] = [];
      let cursor = start.cursor;
      for (let more = true; more;) {
        const page = await c.request('events/poll', { ...feed, cursor, maxEvents: 2, timeoutMs: 0 });
        got.push(...page.events.map((e: Result) => e.eventId));
        ({ cursor, hasMore: more } = page);
      }
      expect(got).toEqual(positions.map((x) => `evt_${x.id}`));
    } finally {
      await c.close();
    }
  });
});

describe('discover', () => {
  it('server/discover advertises the events extension', async () => {
    const m = await createMessagingTestApp();
    try {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      const res = await modernRpc(m, s.apiKey, 'server/discover');
      expect(res.body.result.capabilities).toMatchObject({
        events: { listChanged: false },
        extensions: { 'io.modelcontextprotocol/events': { listChanged: false } },
      });
    } finally {
      await m.close();
    }
  });
});

describe('event feed without its Redis wakes', () => {
  it('a lost wake costs a waiting poll latency (up to EVENT_FEED_RECHECK_MS), never the event', async () => {
    const m = await createMessagingTestApp({ EVENT_FEED_RECHECK_MS: '300' });
    const c = await (async () => {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      return { s, client: await connectModern(m.baseUrl, s.apiKey) };
    })();
    try {
      const wakes = m.app.get(FeedWakes);
      const { cursor } = await c.client.request('events/poll', { name: 'message.received', cursor: null });
      const first = c.client.request('events/poll', { name: 'message.received', cursor, timeoutMs: 1_000 });
      await waitUntil(() => wakes.waitingFor(c.s.orgId) === 1, 'the poll to wait (and the process to subscribe)');
      await first;
      // This process hears no more wakes: its subscriber connection is gone, as in a Redis outage.
      wakes.onModuleDestroy();
      const polled = c.client.request('events/poll', { name: 'message.received', cursor, timeoutMs: 20_000 });
      await waitUntil(() => wakes.waitingFor(c.s.orgId) === 1, 'the poll to wait');
      const sentAt = Date.now();
      const sms = await inboundSms(m, c.s.lines[0].address, partnerPhone(), 'no wake for this one');
      const answer = await polled;
      // Found by a recheck, long before the poll's 20 s would have run out.
      expect(Date.now() - sentAt).toBeLessThan(5_000);
      expect(answer.events.map((e: Result) => e.data.data.message.id)).toEqual([sms.messageId]);
    } finally {
      await c.client.close();
      await m.close();
    }
  });
});
