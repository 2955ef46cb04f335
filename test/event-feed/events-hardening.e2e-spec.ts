import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { getEvents } from '../support/event-feed';
import { rpc } from '../support/mcp';
import { modernRpc } from '../support/mcp-modern';
import { openEventStream } from '../support/mcp-events-clients';
import { challengeEcho, TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * Bad input on every way of receiving events (MCP Events in both revisions, the HTTP feed), as a
 * review found it answered: each case failed before its fix (an Internal error, a dropped stream,
 * a refresh that silently stopped deliveries, an echo altered), and must stay a clear refusal
 * naming the field.
 */

/** A `whsec_` secret of 32 random bytes whose base64 has its `=` padding dropped, as many tools print base64. */
function unpaddedSecret(): string {
  let encoded = '';
  while (!encoded.endsWith('=')) encoded = randomBytes(32).toString('base64'); // 32 bytes always pad with one `=`
  return `whsec_${encoded.replace(/=+$/, '')}`;
}

describe('events for agents: bad input is refused, naming the field', () => {
  let m: MessagingTestApp;
  let s: Session;
  let receiver: TestReceiver;
  let base: string;

  beforeAll(async () => {
    m = await createMessagingTestApp({ EVENT_SUBSCRIPTION_VERIFICATIONS_LIMIT: '0' });
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    receiver = new TestReceiver();
    receiver.respond = (req) => challengeEcho(req) ?? { status: 200, body: 'ok' };
    base = await receiver.start();
  });
  afterAll(async () => {
    await m?.close();
    await receiver?.stop();
  });

  const deliveriesAt = (path: string) => receiver.requests.filter((r) => r.url === path && !r.body.includes('"type":"verification"'));
  const subscribe = (path: string, secret: string, extra: Record<string, unknown> = {}) =>
    rpc(m, s.apiKey, 'events/subscribe', { name: 'message.received', delivery: { mode: 'webhook', url: `${base}${path}`, secret }, ...extra });

  it('events/subscribe refuses a whsec_ secret without its base64 padding, naming delivery.secret: the standardwebhooks libraries could not read it either', async () => {
    const res = await subscribe('/unpadded-new', unpaddedSecret());
    expect(res.body.error).toMatchObject({ code: -32602, data: { field: 'delivery.secret' } });
    expect(receiver.requests.filter((r) => r.url === '/unpadded-new')).toEqual([]);
  });

  it('a refresh with an unpadded secret is refused too, and the subscription goes on signing with the secret it had', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const first = await subscribe('/refreshed', secret);
    expect(first.body.result.id).toMatch(/^sub_/);
    const refreshed = await subscribe('/refreshed', unpaddedSecret());
    expect(refreshed.body.error).toMatchObject({ code: -32602, data: { field: 'delivery.secret' } });
    await inboundSms(m, s.lines[0].address, partnerPhone(), 'after a refused refresh');
    await waitUntil(() => deliveriesAt('/refreshed').length > 0, 'a delivery signed with the first secret');
    const [delivery] = deliveriesAt('/refreshed');
    expect(() => new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>)).not.toThrow();
  });

  describe.each([
    ['2025-11-25', (method: string, params: Record<string, unknown>) => rpc(m, s.apiKey, method, params)],
    ['2026-07-28', (method: string, params: Record<string, unknown>) => modernRpc(m, s.apiKey, method, params)],
  ])('U+0000 in a filter over MCP (%s)', (_era, call) => {
    it('events/poll refuses it with -32602 naming arguments.label, as GET /api/events refuses it with 400, never Internal error', async () => {
      const http = await getEvents(m, `Bearer ${s.apiKey}`, { label: 'vip\u0000' });
      expect(http.status).toBe(400);
      const res = await call('events/poll', { name: 'message.received', arguments: { label: 'vip\u0000' }, cursor: null });
      expect(res.body.error).toMatchObject({ code: -32602, data: { field: 'arguments.label' } });
    });

    it('events/subscribe refuses it with -32602 naming arguments.label', async () => {
      const res = await call('events/subscribe', {
        name: 'message.received',
        arguments: { label: 'vip\u0000' },
        delivery: { mode: 'webhook', url: `${base}/nul`, secret: `whsec_${randomBytes(32).toString('base64')}` },
      });
      expect(res.body.error).toMatchObject({ code: -32602, data: { field: 'arguments.label' } });
    });
  });

  it.each(['legacy', 'modern'] as const)(
    '%s events/stream with U+0000 in a filter is answered with the JSON-RPC error, not a stream that is dropped',
    async (era) => {
      const stream = await openEventStream(m.baseUrl, era, s.apiKey, 41, { name: 'message.received', arguments: { label: 'vip\u0000' }, cursor: null }).catch(
        (error: Error) => {
          throw new Error(`the server dropped the connection without answering: ${error.message}`);
        },
      );
      await waitUntil(() => stream.ended, 'the answer to end', { timeoutMs: 10_000 }).catch(() => stream.disconnect());
      expect(stream.response.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(stream.text)).toMatchObject({ id: 41, error: { code: -32602, data: { field: 'arguments.label' } } });
    },
  );

  it('events/subscribe refuses a maxAgeMs that is not a non-negative integer, naming it, even without a cursor', async () => {
    const res = await subscribe('/maxage', `whsec_${randomBytes(32).toString('base64')}`, { maxAgeMs: 'a week' });
    expect(res.body.error).toMatchObject({ code: -32602, data: { field: 'maxAgeMs' } });
  });

  it('GET /api/events?type=<unknown> names the value it was given, unaltered', async () => {
    const res = await getEvents(m, `Bearer ${s.apiKey}`, { type: 'username.changed' });
    expect(res.status).toBe(404);
    expect(res.body.field).toBe('type');
    expect(res.body.message).toContain('"username.changed"');
  });
});
