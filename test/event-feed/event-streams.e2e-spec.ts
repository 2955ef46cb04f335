import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomBytes } from 'node:crypto';
import { Server } from 'node:http';
import { Socket } from 'node:net';
import { request } from 'undici';
import { EventStreams } from '../../src/event-feed/event-streams';
import { OutboxRepository } from '../../src/events/outbox.repository';
import { cursorPosition } from '../support/event-feed';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { MCP_URL, rpc } from '../support/mcp';
import { sample, scrapeMetrics } from '../support/metrics';
import { openEventStream } from '../support/mcp-events-clients';
import { SERVER_IDENTITY, SERVER_INFO, SUBSCRIPTION_ID } from '../support/mcp-modern';
import { connectApp } from '../support/oauth';
import { createSession, Session } from '../support/session';
import { SseClient } from '../support/sse';
import { TwilioStandIn, twilioSignature } from '../support/twilio';
import { waitUntil } from '../support/wait';
import { signInBrowser } from '../support/web';
import { z } from 'zod';

type Result = Record<string, any>;
type Era = 'legacy' | 'modern';
const ANY_RESULT = z.object({}).passthrough();

const ACCOUNT = `AC${randomBytes(16).toString('hex')}`;
const TOKEN = randomBytes(16).toString('hex');
/** PUBLIC_BASE_URL of the test environment: what Twilio signs over. */
const PUBLIC = 'http://127.0.0.1:3000';
/** Small, so a test waits for heartbeats (and the credential checks they bring) in a fraction of a second. */
const HEARTBEAT_MS = 250;
const STREAMS_PER_KEY = 3;
const ENV = {
  EVENT_FEED_HEARTBEAT_MS: String(HEARTBEAT_MS),
  EVENT_FEED_STREAMS_PER_KEY: String(STREAMS_PER_KEY),
  // Fewer running calls than a key's streams: a stream must hold none of them.
  MCP_KEY_CONCURRENCY: '2',
};

let nextId = 1;

/** One events/stream request read as raw server-sent events over its own connection, as a client of either era sends it. */
class EventStream {
  private constructor(
    readonly id: number,
    readonly sse: SseClient,
  ) {}

  static async open(m: MessagingTestApp, token: string, params: Record<string, unknown>, era: Era): Promise<EventStream> {
    const id = nextId++;
    return new EventStream(id, await openEventStream(m.baseUrl, era, token, id, params));
  }

  /** The JSON-RPC messages of the stream, in order. */
  messages(): Result[] {
    return this.sse.events.map((e) => JSON.parse(e.data) as Result);
  }

  notifications(method: string): Result[] {
    return this.messages()
      .filter((msg) => msg.method === `notifications/events/${method}`)
      .map((msg) => msg.params);
  }

  /** The message ids of the events delivered, in order. */
  messageIds(): string[] {
    return this.notifications('event').map((e) => e.data.data.message.id);
  }

  async active(): Promise<Result> {
    return (await waitUntil(() => this.notifications('active')[0], `stream ${this.id} to be active`)) as Result;
  }

  async ended(): Promise<void> {
    await waitUntil(() => this.sse.ended, `stream ${this.id} to end`);
  }

  close(): void {
    this.sse.disconnect();
  }
}

/**
 * MCP Events push mode (the working group's draft, "Push-Based Delivery"): events/stream answered
 * with a server-sent event stream in both protocol eras, read as raw frames: active first, events
 * as they commit with their cursors, heartbeats carrying the cursor, resume from a cursor (after a
 * disconnect, after a restart) with no loss and no duplicate, termination when access ends, the
 * bounds, the draft's error codes, and the graceful end on shutdown.
 */
describe('event feed: events/stream', () => {
  let twilio: TwilioStandIn;
  let m: MessagingTestApp;
  let s: Session;
  const open: EventStream[] = [];

  const start = async (token: string, params: Record<string, unknown>, era: Era = 'modern') => {
    const stream = await EventStream.open(m, token, params, era);
    open.push(stream);
    return stream;
  };

  beforeAll(async () => {
    twilio = await new TwilioStandIn({ [ACCOUNT]: TOKEN }).start();
    m = await createMessagingTestApp({ ...ENV, TWILIO_API_BASE_URL: twilio.baseUrl });
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    twilio.own(ACCOUNT, s.lines[0].address);
    expect((await m.admin.put(`/admin/lines/${s.lines[0].id}/sms-provider`, { provider: 'twilio', accountSid: ACCOUNT, authToken: TOKEN })).status).toBe(200);
  });
  afterEach(() => {
    for (const stream of open.splice(0)) stream.close();
  });
  afterAll(async () => {
    await m?.close();
    await twilio?.close();
  });

  /** An SMS Twilio delivers to line 0, signed with the account's token as Twilio signs it. */
  async function twilioInbound(body: string): Promise<string> {
    const sid = `SM${randomBytes(16).toString('hex')}`;
    const params = { MessageSid: sid, SmsSid: sid, AccountSid: ACCOUNT, From: partnerPhone(), To: s.lines[0].address, Body: body, NumMedia: '0' };
    const res = await request(`${m.baseUrl}/ingest/twilio/sms`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}/ingest/twilio/sms`, params) },
      body: new URLSearchParams(params).toString(),
    });
    await res.body.text();
    expect(res.statusCode).toBe(200);
    return sid;
  }

  describe.each<Era>(['legacy', 'modern'])('%s era', (era) => {
    it('answers with a stream: active first, then an inbound SMS from Twilio as it commits, then heartbeats with the cursor; every frame tagged', async () => {
      const subscription = { name: 'message.received', arguments: { line: s.lines[0].id, mode: 'verbose' }, cursor: null };
      const stream = await start(s.apiKey, subscription, era);
      expect(stream.sse.status).toBe(200);
      expect(stream.sse.response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      const active = await stream.active();
      expect(active).toEqual({ cursor: expect.stringMatching(/^ecur2_/), truncated: false, _meta: { [SUBSCRIPTION_ID]: stream.id } });
      const body = `from Twilio (${era})`;
      await twilioInbound(body);
      const [event] = await waitUntil(() => stream.notifications('event').length > 0 && stream.notifications('event'), 'the event');
      expect(event).toMatchObject({
        eventId: expect.stringMatching(/^evt_\d+$/),
        name: 'message.received',
        cursor: expect.stringMatching(/^ecur2_/),
        _meta: { [SUBSCRIPTION_ID]: stream.id },
      });
      expect(event.data).toMatchObject({ id: event.eventId, type: 'message.received', mode: 'verbose' });
      expect(event.data.data.message).toMatchObject({ body, direction: 'INBOUND', channel: 'SMS' });
      // A heartbeat after the event: a data frame carrying the cursor checked up to, tagged too.
      const beatsBefore = stream.notifications('heartbeat').length;
      const beat = await waitUntil(() => stream.notifications('heartbeat')[beatsBefore], 'a heartbeat after the event');
      expect(beat).toEqual({ cursor: expect.stringMatching(/^ecur2_/), _meta: { [SUBSCRIPTION_ID]: stream.id } });
      expect(stream.sse.comments).toEqual([]);
      expect(stream.messages().every((msg) => msg.jsonrpc === '2.0' && msg.id === undefined)).toBe(true);
      // The heartbeat's cursor is safe to persist: a stream opened from it gets the next event only, not the one delivered.
      stream.close();
      const resumed = await start(s.apiKey, { ...subscription, cursor: beat.cursor }, era);
      expect(await resumed.active()).toMatchObject({ cursor: beat.cursor, truncated: false });
      const next = await inboundSms(m, s.lines[0].address, partnerPhone(), 'after the heartbeat');
      await waitUntil(() => resumed.messageIds().length > 0, 'the next event');
      expect(resumed.messageIds()).toEqual([next.messageId]);
    });

    it('resumes from the cursor of the last event after a disconnect: every event once, in order', async () => {
      const subscription = { name: 'message.received', arguments: { line: s.lines[1].id } };
      const first = await start(s.apiKey, { ...subscription, cursor: null }, era);
      await first.active();
      const one = await inboundSms(m, s.lines[1].address, partnerPhone(), 'one');
      await waitUntil(() => first.messageIds().length === 1, 'the first event');
      const { cursor } = first.notifications('event')[0];
      first.close();
      const two = await inboundSms(m, s.lines[1].address, partnerPhone(), 'two');
      const three = await inboundSms(m, s.lines[1].address, partnerPhone(), 'three');
      const again = await start(s.apiKey, { ...subscription, cursor }, era);
      expect(await again.active()).toEqual({ cursor, truncated: false, _meta: { [SUBSCRIPTION_ID]: again.id } });
      await waitUntil(() => again.messageIds().length >= 2, 'the two events missed');
      // A heartbeat after them: nothing more was coming.
      const beats = again.notifications('heartbeat').length;
      await waitUntil(() => again.notifications('heartbeat').length > beats, 'a heartbeat');
      expect([...first.messageIds(), ...again.messageIds()]).toEqual([one.messageId, two.messageId, three.messageId]);
      const cursors = again.notifications('event').map((e) => e.cursor);
      expect(new Set(cursors).size).toBe(2);
    });

    it('refuses an invalid subscription at once with the draft error and opens no stream', async () => {
      const refused = async (token: string, params: Record<string, unknown>) => {
        const stream = await start(token, params, era);
        await stream.ended();
        expect(stream.sse.status).toBe(200);
        expect(stream.sse.response.headers['content-type']).toMatch(/^application\/json/);
        const answer = JSON.parse(stream.sse.text) as Result;
        expect(answer.id).toBe(stream.id);
        return { code: answer.error.code, data: answer.error.data };
      };
      expect(await refused(s.apiKey, { name: 'message.deleted', cursor: null })).toEqual({
        code: -32011,
        data: expect.objectContaining({ kind: 'event', field: 'name' }),
      });
      expect(await refused(s.apiKey, { name: 'message.received', arguments: { direction: 'SIDEWAYS' } })).toEqual({
        code: -32602,
        data: expect.objectContaining({ field: 'arguments.direction' }),
      });
      expect(await refused(s.apiKey, { name: 'message.received', cursor: 'hist_1' })).toEqual({
        code: -32602,
        data: expect.objectContaining({ field: 'cursor' }),
      });
      expect(await refused(s.apiKey, { name: 'message.received', cursor: null, maxAgeMs: -1 })).toEqual({
        code: -32602,
        data: expect.objectContaining({ field: 'maxAgeMs' }),
      });
      const reader = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: `reader ${era}`, channelAccess: { mode: 'ALL' }, permissions: ['read'] }))
        .body;
      expect(await refused(reader.key, { name: 'message.received', cursor: null })).toEqual({
        code: -32012,
        data: expect.objectContaining({ reason: 'missing_permission', permission: 'webhooks' }),
      });
      expect(m.app.get(EventStreams).size).toBe(0);
    });

    it('a revoked key ends its stream at once: terminated (Forbidden), then the final frame', async () => {
      const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: `revoked ${era}`, channelAccess: { mode: 'ALL' } })).body;
      const stream = await start(key.key, { name: 'thread.created', cursor: null }, era);
      await stream.active();
      expect((await m.admin.delete(`/admin/api-keys/${key.id}`)).status).toBe(204);
      await stream.ended();
      const messages = stream.messages();
      expect(messages.at(-2)).toEqual({
        jsonrpc: '2.0',
        method: 'notifications/events/terminated',
        params: {
          error: { code: -32012, message: expect.stringMatching(/^Forbidden: /), data: expect.objectContaining({ reason: 'access_revoked' }) },
          _meta: { [SUBSCRIPTION_ID]: stream.id },
        },
      });
      const result = era === 'modern' ? { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: stream.id, [SERVER_INFO]: SERVER_IDENTITY } } : { _meta: {} };
      expect(messages.at(-1)).toEqual({ jsonrpc: '2.0', id: stream.id, result });
    });
  });

  it('a key that loses the webhooks permission mid-stream is terminated', async () => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'narrowed', channelAccess: { mode: 'ALL' } })).body;
    const stream = await start(key.key, { name: 'message.sent', cursor: null });
    await stream.active();
    expect((await m.admin.patch(`/admin/api-keys/${key.id}`, { permissions: ['read', 'send'] })).status).toBe(200);
    await stream.ended();
    expect(stream.notifications('terminated')).toEqual([
      expect.objectContaining({ error: expect.objectContaining({ code: -32012, data: expect.objectContaining({ reason: 'missing_permission' }) }) }),
    ]);
  });

  it('a MEMBER who loses a line mid-stream is terminated and never sees a later event of that line', async () => {
    const member = await createSession(m.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    const stream = await start(member.apiKey, { name: 'message.received', cursor: null }, 'legacy');
    await stream.active();
    const before = await inboundSms(m, member.lines[0].address, partnerPhone(), 'before the loss');
    await waitUntil(() => stream.messageIds().includes(before.messageId), 'the event before the loss');
    expect((await m.admin.delete(`/admin/lines/${member.lines[0].id}/members/${member.userId}`)).status).toBeLessThan(300);
    // Sent before the stream can have heard of the loss: it commits while the stream may still be open.
    const after = await inboundSms(m, member.lines[0].address, partnerPhone(), 'after the loss');
    await stream.ended();
    expect(stream.messageIds()).toEqual([before.messageId]);
    expect(stream.messageIds()).not.toContain(after.messageId);
    expect(stream.notifications('terminated')).toEqual([
      {
        error: expect.objectContaining({ code: -32012, data: expect.objectContaining({ reason: 'access_narrowed' }) }),
        _meta: { [SUBSCRIPTION_ID]: stream.id },
      },
    ]);
    expect(stream.messages().at(-1)).toEqual({ jsonrpc: '2.0', id: stream.id, result: { _meta: {} } });
  });

  it(`bounds streams per key (${STREAMS_PER_KEY}): one more is 429 with ResourceExhausted; streams hold no running-call slot`, async () => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'bounded', channelAccess: { mode: 'ALL' } })).body;
    const streams = [];
    for (let i = 0; i < STREAMS_PER_KEY; i += 1) {
      const stream = await start(key.key, { name: 'agent_turn.sent', cursor: null }, i % 2 ? 'legacy' : 'modern');
      await stream.active();
      streams.push(stream);
    }
    // More streams than MCP_KEY_CONCURRENCY (2) are open, and the key still runs calls.
    const listed = await m.http().post(MCP_URL).set('Authorization', `Bearer ${key.key}`).send({ jsonrpc: '2.0', id: 1, method: 'events/list' });
    expect(listed.status).toBe(200);
    expect(listed.body.result.events[0].delivery).toEqual(['poll', 'push', 'webhook']);
    const extra = await start(key.key, { name: 'agent_turn.sent', cursor: null }, 'legacy');
    await extra.ended();
    expect(extra.sse.status).toBe(429);
    expect(extra.sse.response.headers['retry-after']).toBe('5');
    expect(JSON.parse(extra.sse.text)).toEqual({
      jsonrpc: '2.0',
      id: extra.id,
      error: {
        code: -32013,
        message: expect.stringMatching(/^ResourceExhausted: /),
        data: expect.objectContaining({ limit: 'streamsPerKey', max: STREAMS_PER_KEY }),
      },
    });
    // A stream closed by its client gives its place back.
    streams[0].close();
    await waitUntil(async () => {
      const again = await start(key.key, { name: 'agent_turn.sent', cursor: null });
      await waitUntil(() => again.sse.status !== 0, 'an answer');
      return again.sse.status === 200;
    }, 'a place among the streams');
  });

  it('events/stream in a legacy batch is refused: it opens a stream of its own', async () => {
    const res = await m
      .http()
      .post(MCP_URL)
      .set('Authorization', `Bearer ${s.apiKey}`)
      .send([{ jsonrpc: '2.0', id: 1, method: 'events/stream', params: { name: 'message.received', cursor: null } }]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([{ jsonrpc: '2.0', id: 1, error: { code: -32600, message: expect.stringContaining('send it alone') } }]);
  });

  it('a cursor behind what retention deleted: active says truncated with a fresh cursor, and the stream goes on', async () => {
    const subscription = { name: 'message.received', arguments: { line: s.lines[1].id } };
    const first = await start(s.apiKey, { ...subscription, cursor: null });
    const { cursor } = await first.active();
    await inboundSms(m, s.lines[1].address, partnerPhone(), 'to be deleted');
    await waitUntil(() => first.messageIds().length === 1, 'the event');
    first.close();
    expect(await m.app.get(OutboxRepository).deleteRelayedBefore(0, { batchSize: 1000, pauseMs: 0 })).toBeGreaterThan(0);
    const stale = await start(s.apiKey, { ...subscription, cursor });
    const active = await stale.active();
    expect(active).toMatchObject({ truncated: true });
    expect(active.cursor).not.toBe(cursor);
    const next = await inboundSms(m, s.lines[1].address, partnerPhone(), 'after the gap');
    await waitUntil(() => stale.messageIds().length > 0, 'the next event');
    expect(stale.messageIds()).toEqual([next.messageId]);
  });

  it('/metrics counts streams: open now, opened, ended by reason; and the long polls waiting', async () => {
    const streams = m.app.get(EventStreams);
    await waitUntil(() => streams.size === 0, 'no stream open');
    const before = await scrapeMetrics(m);
    expect(sample(before, 'event_streams_open')).toBe(0);
    for (const reason of ['client_closed', 'access_ended', 'slow_reader', 'shutdown', 'error']) {
      expect(sample(before, 'event_streams_ended_total', { reason })).toEqual(expect.any(Number));
    }
    const delta = (text: string, name: string, labels: Record<string, string> = {}) => sample(text, name, labels)! - sample(before, name, labels)!;

    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'metrics', channelAccess: { mode: 'ALL' } })).body;
    const closed = await start(s.apiKey, { name: 'message.sent', cursor: null });
    const revoked = await start(key.key, { name: 'message.sent', cursor: null }, 'legacy');
    await closed.active();
    await revoked.active();
    const opened = await scrapeMetrics(m);
    expect(sample(opened, 'event_streams_open')).toBe(2);
    expect(delta(opened, 'event_streams_opened_total')).toBe(2);

    closed.close();
    const afterClose = await waitUntil(async () => {
      const text = await scrapeMetrics(m);
      return sample(text, 'event_streams_open') === 1 && text;
    }, 'the closed stream to be gone from event_streams_open');
    expect(delta(afterClose, 'event_streams_ended_total', { reason: 'client_closed' })).toBe(1);
    expect(delta(afterClose, 'event_streams_ended_total', { reason: 'access_ended' })).toBe(0);

    expect((await m.admin.delete(`/admin/api-keys/${key.id}`)).status).toBe(204);
    await revoked.ended();
    const afterRevoke = await waitUntil(async () => {
      const text = await scrapeMetrics(m);
      return sample(text, 'event_streams_open') === 0 && text;
    }, 'the terminated stream to be gone from event_streams_open');
    expect(delta(afterRevoke, 'event_streams_ended_total', { reason: 'access_ended' })).toBe(1);
    expect(delta(afterRevoke, 'event_streams_ended_total', { reason: 'client_closed' })).toBe(1);
    expect(delta(afterRevoke, 'event_streams_opened_total')).toBe(2);
    // A refused request opens no stream and counts none.
    const refused = await start(s.apiKey, { name: 'message.deleted', cursor: null });
    await refused.ended();
    expect(delta(await scrapeMetrics(m), 'event_streams_opened_total')).toBe(2);

    // A long poll waiting for an event holds a slot: counted while it waits, no longer once answered.
    expect(sample(before, 'event_feed_long_polls_waiting')).toBe(0);
    const poll = { name: 'message.received', arguments: { line: s.lines[0].id } };
    const { cursor } = (await rpc(m, s.apiKey, 'events/poll', { ...poll, cursor: null }).expect(200)).body.result;
    // Sent now (then() sends it), answered once an event commits.
    const waiting = rpc(m, s.apiKey, 'events/poll', { ...poll, cursor, timeoutMs: 20_000 }).then((res) => res.body.result as Result);
    await waitUntil(async () => sample(await scrapeMetrics(m), 'event_feed_long_polls_waiting') === 1, 'the poll to be counted as waiting');
    const sms = await inboundSms(m, s.lines[0].address, partnerPhone(), 'ends the long poll');
    const answered = await waiting;
    expect(answered.events.map((e: Result) => e.data.data.message.id)).toEqual([sms.messageId]);
    expect(sample(await scrapeMetrics(m), 'event_feed_long_polls_waiting')).toBe(0);
  });

  it('a client that stops reading is cut off once more than 64 KB sit unread past a heartbeat; it reads what came, and its last cursor resumes the rest, each event once', async () => {
    const streams = m.app.get(EventStreams);
    // The earlier tests' streams, closed by their clients, are gone first: the count below is this stream's.
    await waitUntil(() => streams.size === 0, 'no stream open');
    const reader = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const line = reader.lines[0];
    const partner = partnerPhone();
    // Verbose, with the thread's last 50 messages: each event is tens of KB, so a few hundred
    // fill the loopback socket's buffers (several MB) and the 64 KB the process holds on top.
    const subscription = { name: 'message.received', arguments: { line: line.id, mode: 'verbose', messageHistoryCount: 50 } };
    const serverSockets: Socket[] = [];
    const server = m.app.getHttpServer() as Server;
    const onConnection = (socket: Socket) => serverSockets.push(socket);
    server.on('connection', onConnection);
    const stream = await start(reader.apiKey, { ...subscription, cursor: null });
    server.off('connection', onConnection);
    await stream.active();
    const clientPort = stream.sse.response.socket.localPort;
    const serverSide = serverSockets.find((socket) => socket.remotePort === clientPort)!;
    expect(serverSide).toBeDefined();
    const sent = [(await inboundSms(m, line.address, partner, 'read before the stall')).messageId];
    await waitUntil(() => stream.messageIds().length === 1, 'the first event');
    expect(streams.size).toBe(1);
    stream.sse.pause();
    const cutBefore = sample(await scrapeMetrics(m), 'event_streams_ended_total', { reason: 'slow_reader' })!;
    const body = (n: number) => `${n} `.padEnd(10_000, 'lorem ipsum dolor sit amet ');
    while (streams.size === 1) {
      if (sent.length > 400) throw new Error(`${sent.length} events sent and the stalled stream is still open`);
      sent.push((await inboundSms(m, line.address, partner, body(sent.length))).messageId);
    }
    const cut = await scrapeMetrics(m);
    expect(sample(cut, 'event_streams_ended_total', { reason: 'slow_reader' })).toBe(cutBefore + 1);
    expect(sample(cut, 'event_streams_open')).toBe(0);
    // Cut, not ended: the server let go of the connection while the client still does not read
    // (an ended response would hold its socket and the unread bytes until the client went away).
    await waitUntil(() => serverSide.destroyed, 'the server to close the stalled connection');
    // Events that commit once the stream is gone: the resumed stream must bring them too.
    for (let i = 0; i < 3; i += 1) sent.push((await inboundSms(m, line.address, partner, `after the cut ${i}`)).messageId);
    // The client reads again: what the server wrote before it gave up comes in, whole frames, then the end (no final frame).
    stream.sse.resume();
    await stream.ended();
    const read = stream.messageIds();
    expect(read.length).toBeGreaterThan(1);
    expect(read.length).toBeLessThan(sent.length);
    expect(sent).toEqual(expect.arrayContaining(read));
    // The last whole frame is an event or a heartbeat written while the unread bytes were still
    // under the bound (the frames after it were in the process's buffer when it cut the
    // connection): never an ending frame or an answer.
    expect(['notifications/events/event', 'notifications/events/heartbeat']).toContain(stream.messages().at(-1)!.method);
    expect(stream.messages().filter((msg) => msg.id !== undefined)).toEqual([]);
    // Opened again from the cursor of the last event it read: the rest, each once, in order.
    const { cursor } = stream.notifications('event').at(-1)!;
    const resumed = await start(reader.apiKey, { ...subscription, cursor });
    await waitUntil(() => resumed.messageIds().length >= sent.length - read.length, 'the events after the cut', { timeoutMs: 30_000 });
    const beats = resumed.notifications('heartbeat').length;
    await waitUntil(() => resumed.notifications('heartbeat').length > beats, 'a heartbeat after them');
    // Every event once. Compared as sets: the feed's order is the one the relay numbered them in,
    // not promised to be the order the ingest requests were answered in (a run saw two swapped).
    const all = [...read, ...resumed.messageIds()];
    expect(all).toHaveLength(sent.length);
    expect(new Set(all)).toEqual(new Set(sent));
  }, 120_000);

  it('shutting down ends each stream with its final frame; after a restart the stream resumes from its cursor, no loss, no duplicate', async () => {
    const subscription = { name: 'message.received', arguments: { line: s.lines[1].id } };
    const stream = await start(s.apiKey, { ...subscription, cursor: null });
    await stream.active();
    const one = await inboundSms(m, s.lines[1].address, partnerPhone(), 'before the restart');
    await waitUntil(() => stream.messageIds().length === 1, 'the event');
    const { cursor } = stream.notifications('event')[0];
    const two = await inboundSms(m, s.lines[1].address, partnerPhone(), 'as the service stops');
    await waitUntil(() => stream.messageIds().length === 2, 'the second event');
    const cursorTwo = stream.notifications('event')[1].cursor;
    await m.close();
    await stream.ended();
    expect(stream.messages().at(-1)).toEqual({
      jsonrpc: '2.0',
      id: stream.id,
      result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: stream.id, [SERVER_INFO]: SERVER_IDENTITY } },
    });
    m = await createMessagingTestApp({ ...ENV, TWILIO_API_BASE_URL: twilio.baseUrl });
    const three = await inboundSms(m, s.lines[1].address, partnerPhone(), 'after the restart');
    // Resumed from the first event's cursor: the second and the third, once each.
    const resumed = await start(s.apiKey, { ...subscription, cursor }, 'legacy');
    await waitUntil(() => resumed.messageIds().length >= 2, 'the events after the cursor');
    const beats = resumed.notifications('heartbeat').length;
    await waitUntil(() => resumed.notifications('heartbeat').length > beats, 'a heartbeat');
    expect([one.messageId, ...resumed.messageIds()]).toEqual([one.messageId, two.messageId, three.messageId]);
    // The same position as the second event's cursor before the restart (cursors are minted afresh each time).
    expect(cursorPosition(m, resumed.notifications('event')[0].cursor, subscription)).toBe(cursorPosition(m, cursorTwo, subscription));
  });
});

/**
 * With the heartbeat at its longest (30 s), what happens within a few seconds is not the
 * heartbeat's doing: events come on the relay's wake, a revocation is heard over Redis. And the
 * official SDK clients, which have no helper for events/stream, receive its notifications when
 * they send it as a raw request.
 */
describe('event feed: events/stream woken over Redis, through the official SDK clients', () => {
  let m: MessagingTestApp;
  let s: Session;

  beforeAll(async () => {
    m = await createMessagingTestApp({ EVENT_FEED_HEARTBEAT_MS: '30000' });
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    await m?.close();
  });

  it.each<Era>(['legacy', 'modern'])('%s SDK client: active, then the inbound SMS as it commits; a revoked key is terminated at once', async (era) => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: `sdk ${era}`, channelAccess: { mode: 'ALL' } })).body;
    const notifications: Result[] = [];
    const transportOptions = { requestInit: { headers: { Authorization: `Bearer ${key.key}` } } };
    const url = new URL(`${m.baseUrl}/api/mcp`);
    let client: LegacyClient | ModernClient;
    if (era === 'legacy') {
      client = new LegacyClient({ name: 'e2e-stream-v1', version: '1.0.0' });
      client.fallbackNotificationHandler = async (notification) => void notifications.push(notification);
      await client.connect(new LegacyTransport(url, transportOptions));
    } else {
      client = new ModernClient({ name: 'e2e-stream-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      client.fallbackNotificationHandler = async (notification) => void notifications.push(notification);
      await client.connect(new ModernTransport(url, transportOptions));
    }
    try {
      const ofMethod = (method: string) => notifications.filter((n) => n.method === `notifications/events/${method}`).map((n) => n.params);
      const request = { method: 'events/stream', params: { name: 'message.received', cursor: null } };
      const answered = (client as LegacyClient).request(request as never, ANY_RESULT as never, { timeout: 60_000 }) as Promise<Result>;
      await waitUntil(() => ofMethod('active')[0], 'the stream to be active');
      const sentAt = Date.now();
      const sms = await inboundSms(m, s.lines[0].address, partnerPhone(), `to the ${era} SDK`);
      const [event] = await waitUntil(() => ofMethod('event').length > 0 && ofMethod('event'), 'the event');
      expect(Date.now() - sentAt).toBeLessThan(m.config.eventFeed.recheckMs);
      expect(event.data.data.message.id).toBe(sms.messageId);
      expect(event._meta).toEqual({ [SUBSCRIPTION_ID]: expect.anything() });
      const revokedAt = Date.now();
      expect((await m.admin.delete(`/admin/api-keys/${key.id}`)).status).toBe(204);
      // The request is answered with the stream's final frame, after terminated.
      await answered;
      expect(Date.now() - revokedAt).toBeLessThan(5_000);
      expect(ofMethod('terminated')).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: -32012 }) })]);
      expect(ofMethod('heartbeat')).toEqual([]);
    } finally {
      await client.close();
    }
  });
  it('an OAuth app with the webhooks permission streams; revoking its grant terminates the stream at once', async () => {
    const browser = await signInBrowser(m, s.userId);
    const app = await connectApp(m, browser, {
      clientName: 'Stream Agent',
      choice: { access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on', 'permission-webhooks': 'on' },
    });
    const stream = await EventStream.open(m, app.accessToken, { name: 'message.received', cursor: null }, 'modern');
    try {
      await stream.active();
      const sms = await inboundSms(m, s.lines[0].address, partnerPhone(), 'to the app');
      await waitUntil(() => stream.messageIds().includes(sms.messageId), 'the event');
      const grants: Array<{ id: string; client: { name: string } }> = (await m.admin.get(`/admin/users/${s.userId}/oauth-grants`)).body;
      const grant = grants.find((g) => g.client.name === 'Stream Agent')!;
      const revokedAt = Date.now();
      expect((await m.admin.delete(`/admin/oauth-grants/${grant.id}`)).status).toBe(204);
      await stream.ended();
      expect(Date.now() - revokedAt).toBeLessThan(5_000);
      expect(stream.notifications('terminated')).toEqual([
        expect.objectContaining({ error: expect.objectContaining({ code: -32012, data: expect.objectContaining({ reason: 'access_revoked' }) }) }),
      ]);
    } finally {
      stream.close();
    }
  });

  it.each([
    ['removed from one of its lines', (t: MessagingTestApp, member: Session) => t.admin.delete(`/admin/lines/${member.lines[0].id}/members/${member.userId}`)],
    ['whose line is deleted', (t: MessagingTestApp, member: Session) => t.admin.delete(`/admin/lines/${member.lines[0].id}`)],
  ])('a MEMBER %s is terminated at once, with no event needed to notice (heartbeat 30 s)', async (_how, narrow) => {
    const member = await createSession(m.admin, { orgId: s.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    const stream = await EventStream.open(m, member.apiKey, { name: 'message.received', cursor: null }, 'modern');
    try {
      await stream.active();
      const narrowedAt = Date.now();
      expect((await narrow(m, member)).status).toBeLessThan(300);
      await stream.ended();
      // Far sooner than the next heartbeat: the change was heard over Redis.
      expect(Date.now() - narrowedAt).toBeLessThan(5_000);
      expect(stream.notifications('terminated')).toEqual([
        expect.objectContaining({ error: expect.objectContaining({ code: -32012, data: expect.objectContaining({ reason: 'access_narrowed' }) }) }),
      ]);
    } finally {
      stream.close();
    }
  });
});

describe('event feed: events/stream per process', () => {
  it('one stream more than EVENT_FEED_STREAMS_PER_PROCESS, whatever the key, is 429 with ResourceExhausted naming the limit', async () => {
    const m = await createMessagingTestApp({ EVENT_FEED_STREAMS_PER_PROCESS: '2' });
    const streams: EventStream[] = [];
    try {
      const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      const keys = [];
      for (const name of ['a', 'b', 'c'])
        keys.push((await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name, channelAccess: { mode: 'ALL' } })).body.key);
      for (const key of keys.slice(0, 2)) {
        const stream = await EventStream.open(m, key, { name: 'message.sent', cursor: null }, 'modern');
        streams.push(stream);
        await stream.active();
      }
      const extra = await EventStream.open(m, keys[2], { name: 'message.sent', cursor: null }, 'modern');
      streams.push(extra);
      await extra.ended();
      expect(extra.sse.status).toBe(429);
      expect(JSON.parse(extra.sse.text).error).toEqual({
        code: -32013,
        message: expect.stringMatching(/^ResourceExhausted: /),
        data: expect.objectContaining({ limit: 'streamsPerProcess', max: 2 }),
      });
      expect(m.app.get(EventStreams).size).toBe(2);
    } finally {
      for (const stream of streams) stream.close();
      await m.close();
    }
  });
});
