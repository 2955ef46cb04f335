import { Clock } from '../../src/common/clock';
import { USER_AGENT } from '../../src/delivery/delivery-attempts.service';
import { verifyWebhook } from '../../src/sdk';
import { fixtureEvent } from '../fixtures/events';
import {
  closeDeliveryTestApp,
  createDeliveryTestApp,
  DeliveryTestApp,
  EVT_ID,
  FakeClock,
  hmacHex,
  parseSignature,
  publish,
  register,
  waitForRequests,
} from '../support/delivery';
import { ISO_MS, toolOk } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';

const HOUR_MS = 3_600_000;

jest.setTimeout(30_000);

describe('webhook signing, headers and envelope', () => {
  let t: DeliveryTestApp;
  const clock = new FakeClock();
  const receiver = new TestReceiver();
  let base: string;
  let s: Session;

  beforeAll(async () => {
    base = await receiver.start();
    t = await createDeliveryTestApp({ queueTag: 'signing', overrides: (b) => b.overrideProvider(Clock).useValue(clock) });
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });
  beforeEach(() => {
    clock.offsetMs = 0;
  });

  const emailLine = () => s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.id;

  it('signs the exact raw body: v1 = HMAC-SHA256(secret, `${t}.${body}`), t close to now', async () => {
    const { secret } = await register(t, s.apiKey, { url: `${base}/sig`, events: ['message.received'] });
    await publish(t, fixtureEvent('message.received', { orgId: s.orgId, lineId: emailLine() }));
    const [req] = await waitForRequests(receiver, '/sig', 1);

    const header = req.headers['x-service-signature'];
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const { t: ts, v1 } = parseSignature(header);
    expect(v1).toEqual([hmacHex(secret, ts, req.body)]);
    expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(5);
    // The body carries non-ASCII text (é, ¿, ☕): the digest is over its UTF-8 bytes, as sent.
    expect(Buffer.byteLength(req.body, 'utf8')).toBeGreaterThan(req.body.length);
    expect(Number(req.headers['content-length'])).toBe(Buffer.byteLength(req.body, 'utf8'));
    // Any change to the bytes or to t breaks it; another secret does not verify.
    expect(hmacHex(secret, ts, `${req.body} `)).not.toBe(v1[0]);
    expect(hmacHex(secret, String(Number(ts) + 1), req.body)).not.toBe(v1[0]);
    expect(hmacHex('0'.repeat(64), ts, req.body)).not.toBe(v1[0]);
    // The receiver helper agrees.
    expect(verifyWebhook(req.body, header as string, [secret]).id).toBe(JSON.parse(req.body).id);
  });

  it('sends Content-Type application/json, the service User-Agent and the event id and type headers', async () => {
    await register(t, s.apiKey, { url: `${base}/headers?src=test`, events: ['contact.merged'] });
    await publish(t, fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null }));
    const [req] = await waitForRequests(receiver, '/headers?src=test', 1);
    const envelope = JSON.parse(req.body);

    expect(req.method).toBe('POST');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toBe(USER_AGENT);
    expect(req.headers['user-agent']).toMatch(/^MessagingSync-Webhooks\/\d/);
    expect(req.headers['x-service-event-id']).toBe(envelope.id);
    expect(req.headers['x-service-event-type']).toBe('contact.merged');
    expect(req.headers['host']).toBe(new URL(base).host);
  });

  it('wraps data in the envelope {id, type, createdAt, endpointId, mode, data}', async () => {
    const concise = await register(t, s.apiKey, { url: `${base}/env-concise`, events: ['message.received'] });
    const verbose = await register(t, s.apiKey, { url: `${base}/env-verbose`, events: ['message.received'], mode: 'verbose' });
    const outboxId = await publish(t, fixtureEvent('message.received', { orgId: s.orgId, lineId: emailLine() }));
    const [c] = await waitForRequests(receiver, '/env-concise', 1);
    const [v] = await waitForRequests(receiver, '/env-verbose', 1);
    const [{ occurred_at: occurredAt }] = await t.db.query('SELECT occurred_at FROM outbox_events WHERE id = $1', [outboxId]);

    for (const [req, reg, mode] of [
      [c, concise, 'concise'],
      [v, verbose, 'verbose'],
    ] as const) {
      const envelope = JSON.parse(req.body);
      expect(Object.keys(envelope).sort()).toEqual(['createdAt', 'data', 'endpointId', 'id', 'mode', 'type']);
      expect(envelope.id).toMatch(EVT_ID);
      expect(envelope.type).toBe('message.received');
      expect(envelope.createdAt).toMatch(ISO_MS);
      expect(envelope.createdAt).toBe(new Date(occurredAt).toISOString());
      expect(envelope.endpointId).toBe(reg.endpoint.id);
      expect(envelope.mode).toBe(mode);
      expect(typeof envelope.data).toBe('object');
    }
    // One id per (event, endpoint).
    expect(JSON.parse(c.body).id).not.toBe(JSON.parse(v.body).id);
  });

  it('after rotate_webhook_secret signs with both secrets (current first) for 24 h, then with the new one only', async () => {
    const { endpoint, secret: oldSecret } = await register(t, s.apiKey, { url: `${base}/rotate`, events: ['contact.merged'] });
    const event = fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null });

    await publish(t, event);
    const [before] = await waitForRequests(receiver, '/rotate', 1);
    const sigBefore = parseSignature(before.headers['x-service-signature']);
    expect(sigBefore.v1).toEqual([hmacHex(oldSecret, sigBefore.t, before.body)]);

    const rotated = await toolOk<{ secret: string; endpoint: { id: string } }>(t, s.apiKey, 'rotate_webhook_secret', { endpointId: endpoint.id });
    const newSecret = rotated.secret;
    expect(newSecret).toMatch(/^[0-9a-f]{64}$/);
    expect(newSecret).not.toBe(oldSecret);

    await publish(t, event);
    const [, during] = await waitForRequests(receiver, '/rotate', 2);
    const sigDuring = parseSignature(during.headers['x-service-signature']);
    expect(during.headers['x-service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(sigDuring.v1).toEqual([hmacHex(newSecret, sigDuring.t, during.body), hmacHex(oldSecret, sigDuring.t, during.body)]);
    // A receiver holding either secret verifies.
    expect(verifyWebhook(during.body, during.headers['x-service-signature'] as string, [newSecret]).id).toBe(JSON.parse(during.body).id);
    expect(verifyWebhook(during.body, during.headers['x-service-signature'] as string, [oldSecret]).id).toBe(JSON.parse(during.body).id);

    // Still inside the 24 h overlap: both.
    clock.offsetMs = 23 * HOUR_MS + 50 * 60_000;
    await publish(t, event);
    const [, , late] = await waitForRequests(receiver, '/rotate', 3);
    const sigLate = parseSignature(late.headers['x-service-signature']);
    expect(sigLate.v1).toEqual([hmacHex(newSecret, sigLate.t, late.body), hmacHex(oldSecret, sigLate.t, late.body)]);
    expect(Math.abs(Number(sigLate.t) - clock.now().getTime() / 1000)).toBeLessThan(5);

    // Past 24 h: the new secret only.
    clock.offsetMs = 24 * HOUR_MS + 60_000;
    await publish(t, event);
    const [, , , after] = await waitForRequests(receiver, '/rotate', 4);
    const header = after.headers['x-service-signature'] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const sigAfter = parseSignature(header);
    expect(sigAfter.v1).toEqual([hmacHex(newSecret, sigAfter.t, after.body)]);
    expect(sigAfter.v1).not.toContain(hmacHex(oldSecret, sigAfter.t, after.body));
    // t follows the service clock.
    expect(Math.abs(Number(sigAfter.t) - clock.now().getTime() / 1000)).toBeLessThan(5);
  });
});
