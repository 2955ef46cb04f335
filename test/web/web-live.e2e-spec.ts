import { request } from 'node:http';
import { AddressInfo } from 'node:net';
import { LiveStreams } from '../../src/live/live-streams';
import { createTestApp, TestApp } from '../support/app';
import { hangUpWhileLocked, settled } from '../support/hang-up';
import { inboundSms, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { SseClient } from '../support/sse';
import { waitUntil } from '../support/wait';
import { PageBrowser, postForm, signInBrowser } from '../support/web';

/** GET /live/events: server-sent events of committed events, scoped like webhooks (docs/web.md, "Live updates"). */
describe('web: live updates', () => {
  let t: TestApp;
  let baseUrl: string;
  const streams: SseClient[] = [];

  beforeAll(async () => {
    t = await createTestApp({ env: { LIVE_HEARTBEAT_MS: '1000', LIVE_STREAMS_PER_PERSON: '2' } });
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterEach(() => {
    for (const stream of streams.splice(0)) stream.disconnect();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function open(b: PageBrowser | null, path = '/live/events'): Promise<SseClient> {
    const stream = await SseClient.open(baseUrl, path, b?.cookie);
    streams.push(stream);
    return stream;
  }

  const data = (stream: SseClient): Array<Record<string, unknown>> =>
    stream.events.map((e) => ({ event: e.event, ...(JSON.parse(e.data) as Record<string, unknown>) }));

  it('an inbound SMS reaches the stream of a person who may see its line, as ids only, with the page headers', async () => {
    const owner = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const b = await signInBrowser(t, owner.userId);
    const stream = await open(b);
    expect(stream.status).toBe(200);
    expect(stream.response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.response.headers['cache-control']).toBe('no-store');
    expect(stream.response.headers['content-security-policy']).toContain("default-src 'self'");
    expect(stream.response.headers['x-frame-options']).toBe('DENY');
    await waitUntil(() => stream.retry, 'the retry: field');
    expect(stream.retry).toBe(5000);

    const sms = await inboundSms(t, owner.lines[0].address, partnerPhone(), 'secret words <script>');
    const received = await waitUntil(() => stream.find('message.received', (d) => d.messageId === sms.messageId), 'message.received on the stream');
    expect(JSON.parse(received.data)).toEqual({
      type: 'message.received',
      threadId: sms.threadId,
      messageId: sms.messageId,
      agentTurnId: null,
      lineId: owner.lines[0].id,
      status: 'RECEIVED',
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(received.id).toMatch(/^\d+$/);
    expect(stream.events.map((e) => e.data).join('')).not.toContain('secret words');
    // the thread it started too
    await waitUntil(() => stream.find('thread.created', (d) => d.threadId === sms.threadId), 'thread.created');
    // heartbeats keep it open
    await waitUntil(() => stream.comments.includes('heartbeat'), 'a heartbeat comment');
  });

  it('a MEMBER is never told of a line they are not a member of; removing a membership stops it at once', async () => {
    const owner = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const member: Session = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const memberStream = await open(await signInBrowser(t, member.userId));
    const ownerStream = await open(await signInBrowser(t, owner.userId));
    await waitUntil(() => memberStream.retry && ownerStream.retry, 'both streams started');

    const hidden = await inboundSms(t, owner.lines[0].address, partnerPhone(), 'for the owner only');
    await waitUntil(() => ownerStream.find('message.received', (d) => d.messageId === hidden.messageId), 'the owner told');
    // a later event on the member's own line proves the earlier one was not on its way
    const own = await inboundSms(t, member.lines[0].address, partnerPhone(), 'for the member');
    await waitUntil(() => memberStream.find('message.received', (d) => d.messageId === own.messageId), 'the member told of their own line');
    expect(data(memberStream).filter((e) => e.lineId === owner.lines[0].id || e.threadId === hidden.threadId)).toEqual([]);
    // the owner is not a member of the member's line either
    expect(ownerStream.find('message.received', (d) => d.messageId === own.messageId)).toBeUndefined();

    // the owner loses the membership: the next message on that line is not told (the check is made when telling)
    await t.admin.delete(`/admin/lines/${owner.lines[0].id}/members/${owner.userId}`).expect(204);
    const after = await inboundSms(t, owner.lines[0].address, partnerPhone(), 'after the membership ended');
    await t.admin.put(`/admin/lines/${member.lines[0].id}/members/${owner.userId}`).expect((res) => expect(res.status).toBeLessThan(300));
    const sentinel = await inboundSms(t, member.lines[0].address, partnerPhone(), 'sentinel');
    await waitUntil(() => ownerStream.find('message.received', (d) => d.messageId === sentinel.messageId), 'the owner told of the line now theirs');
    expect(ownerStream.find('message.received', (d) => d.messageId === after.messageId)).toBeUndefined();
  });

  it('threadId narrows the stream to one thread; a malformed one is a 400 naming it', async () => {
    const owner = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const b = await signInBrowser(t, owner.userId);
    const partner = partnerPhone();
    const first = await inboundSms(t, owner.lines[0].address, partner, 'one');
    const stream = await open(b, `/live/events?threadId=${first.threadId}`);
    await waitUntil(() => stream.retry, 'stream started');
    const other = await inboundSms(t, owner.lines[0].address, partnerPhone(), 'another thread');
    const again = await inboundSms(t, owner.lines[0].address, partner, 'same thread');
    expect([other.threadId !== first.threadId, again.threadId]).toEqual([true, first.threadId]);
    await waitUntil(() => stream.find('message.received', (d) => d.messageId === again.messageId), 'the thread’s next message');
    expect(data(stream).every((e) => e.threadId === first.threadId)).toBe(true);

    const bad = await t.http().get('/live/events?threadId=nope').set('Cookie', b.cookie).expect(400);
    expect(bad.text).toContain('ThreadId must be the id of a thread (a UUID).');
  });

  it('refuses without a session (303 to sign-in), and past LIVE_STREAMS_PER_PERSON with 429; closed streams are forgotten', async () => {
    const anonymous = await t.http().get('/live/events').set('Accept', 'text/event-stream').expect(303);
    expect(anonymous.headers.location).toBe('/sign-in');

    const live = t.app.get(LiveStreams);
    const before = live.size;
    const owner = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const b = await signInBrowser(t, owner.userId);
    const one = await open(b);
    const two = await open(b);
    await waitUntil(() => one.retry && two.retry, 'two streams started');
    const three = await t.http().get('/live/events').set('Cookie', b.cookie).expect(429);
    expect(three.headers['retry-after']).toBe('5');
    expect(three.text).toContain('At most 2 live streams per person are open at once');
    expect(live.size).toBe(before + 2);

    one.disconnect();
    await waitUntil(() => live.size === before + 1, 'the closed stream forgotten');
    const again = await open(b);
    await waitUntil(() => again.retry, 'a stream opened again in the freed slot');
    two.disconnect();
    again.disconnect();
    await waitUntil(() => live.size === before, 'every stream forgotten');
  });

  it('forgets a stream whose client left while its session was looked up (the response closed before the stream opened)', async () => {
    const live = t.app.get(LiveStreams);
    const owner = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const b = await signInBrowser(t, owner.userId);
    const before = live.size;
    const opening = jest.spyOn(live, 'open');
    try {
      // The session lookup waits on a lock, the client hangs up meanwhile, then the lookup goes on.
      await hangUpWhileLocked(t.app, 'web_sessions', '%s.token_hash = %', () => {
        const req = request(new URL('/live/events', baseUrl), { agent: false, headers: { accept: 'text/event-stream', cookie: b.cookie } });
        req.on('error', () => undefined);
        req.end();
        return () => req.destroy();
      });
      await settled(opening, 1, 'the stream opened after the lookup');
    } finally {
      opening.mockRestore();
    }
    // the person still has both their streams (LIVE_STREAMS_PER_PERSON = 2), and only those are held
    const [one, two] = [await open(b), await open(b)];
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(live.size).toBe(before + 2);
  });

  it('ends the stream when its session ends (sign-out)', async () => {
    const owner = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const b = await signInBrowser(t, owner.userId);
    const stream = await open(b);
    await waitUntil(() => stream.retry, 'stream started');
    await postForm(t, b, '/sign-out').expect(303);
    await waitUntil(() => stream.ended, 'the stream ended');
    expect(stream.find('session_ended')).toBeDefined();
    await t.http().get('/live/events').set('Cookie', b.cookie).expect(303);
  });
});
