import { createPublicKey, KeyObject, verify as cryptoVerify } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { Clock } from '../../src/common/clock';
import { rememberedIds, verifyWebhookRequest, WebhookVerificationError } from '../../src/sdk';
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
  waitForStatus,
} from '../support/delivery';
import { toolOk } from '../support/mcp';
import { Answer, ReceivedRequest, TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';

jest.setTimeout(30_000);

type Headers = Record<string, string>;

/** The Standard Webhooks headers of a received request, as a library's verify takes them. */
function standardHeaders(req: ReceivedRequest): Headers {
  return {
    'webhook-id': req.headers['webhook-id'] as string,
    'webhook-timestamp': req.headers['webhook-timestamp'] as string,
    'webhook-signature': req.headers['webhook-signature'] as string,
  };
}

/** Written out with node:crypto, independent of src/: an ed25519 check of `${id}.${timestamp}.${body}` against each v1a entry. */
function v1aVerifies(req: ReceivedRequest, publicKey: KeyObject, body = req.body): boolean {
  const h = standardHeaders(req);
  const content = Buffer.from(`${h['webhook-id']}.${h['webhook-timestamp']}.${body}`, 'utf8');
  return h['webhook-signature']
    .split(' ')
    .filter((entry) => entry.startsWith('v1a,'))
    .some((entry) => cryptoVerify(null, content, publicKey, Buffer.from(entry.slice(4), 'base64')));
}

/** A JWK from the JWK Set as a node:crypto key. */
function keyOf(jwk: { kty: string; crv: string; x: string }): KeyObject {
  return createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' });
}

function whpkKey(whpk: string): KeyObject {
  return keyOf({ kty: 'OKP', crv: 'Ed25519', x: Buffer.from(whpk.slice('whpk_'.length), 'base64').toString('base64url') });
}

describe('Standard Webhooks signing of deliveries', () => {
  let t: DeliveryTestApp;
  const clock = new FakeClock();
  const receiver = new TestReceiver();
  let base: string;
  let s: Session;
  /** Per path: how the receiver judges a request (default 200). */
  const judges = new Map<string, (req: ReceivedRequest) => Answer>();

  beforeAll(async () => {
    base = await receiver.start();
    receiver.respond = (req) => judges.get(req.url)?.(req) ?? { status: 200, body: 'ok' };
    t = await createDeliveryTestApp({ queueTag: 'stdwebhooks', overrides: (b) => b.overrideProvider(Clock).useValue(clock) });
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await receiver.stop();
  });
  beforeEach(() => {
    clock.offsetMs = 0;
  });

  const event = () => fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null });
  const jwks = (endpointId: string) => t.http().get(`/webhooks/${endpointId}/jwks.json`);
  /** Ends the 24 h overlap of the endpoint's last rotation now (as if a day had passed). */
  const endOverlap = (endpointId: string) =>
    t.db.query(`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, [endpointId]);

  it('v1: webhook-id, webhook-timestamp and webhook-signature beside X-Service-Signature; the standardwebhooks package verifies with signingSecret', async () => {
    const { endpoint, secret, signingSecret } = await register(t, s.apiKey, { url: `${base}/v1`, events: ['contact.merged'] });
    await publish(t, event());
    const [req] = await waitForRequests(receiver, '/v1', 1);
    const envelope = JSON.parse(req.body);

    expect(req.headers['webhook-id']).toBe(envelope.id);
    expect(req.headers['webhook-id']).toMatch(EVT_ID);
    const legacy = parseSignature(req.headers['x-service-signature']);
    expect(req.headers['webhook-timestamp']).toBe(legacy.t);
    expect(legacy.v1).toEqual([hmacHex(secret, legacy.t, req.body)]);
    expect(req.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);

    expect(new Webhook(signingSecret).verify(req.body, standardHeaders(req))).toEqual(envelope);
    // Refused: a tampered body, another key, a changed id.
    expect(() => new Webhook(signingSecret).verify(req.body.replace('"contact.merged"', '"contact.mergeX"'), standardHeaders(req))).toThrow();
    const other = await register(t, s.apiKey, { url: `${base}/v1-other`, events: ['message.sent'] });
    expect(() => new Webhook(other.signingSecret).verify(req.body, standardHeaders(req))).toThrow();
    expect(() => new Webhook(signingSecret).verify(req.body, { ...standardHeaders(req), 'webhook-id': 'evt_0' })).toThrow();
    // The SDK takes the whsec_ form and the hex secret alike.
    expect(verifyWebhookRequest(req.body, req.headers as Headers, [secret]).version).toBe('v1');
    expect(endpoint.id).toBe(envelope.endpointId);
  });

  it('v1: a delivery signed 10 minutes ago is refused by the standardwebhooks package', async () => {
    const { signingSecret } = await register(t, s.apiKey, { url: `${base}/v1-old`, events: ['contact.merged'] });
    clock.offsetMs = -10 * 60_000;
    await publish(t, event());
    const [req] = await waitForRequests(receiver, '/v1-old', 1);
    expect(Number(req.headers['webhook-timestamp'])).toBeLessThan(Date.now() / 1000 - 590);
    expect(() => new Webhook(signingSecret).verify(req.body, standardHeaders(req))).toThrow(/too old/i);
  });

  it('v1: a receiver that remembers accepted ids refuses the same request sent again', async () => {
    const reg = await register(t, s.apiKey, { url: `${base}/v1-replay`, events: ['contact.merged'] });
    const { signingSecret } = reg;
    const isNewId = rememberedIds();
    judges.set('/v1-replay', (req) => {
      try {
        new Webhook(signingSecret).verify(req.body, standardHeaders(req));
        verifyWebhookRequest(req.body, req.headers as Headers, [signingSecret], { isNewId });
        return { status: 204 };
      } catch (error) {
        return { status: 400, body: error instanceof WebhookVerificationError ? error.code : 'BAD_SIGNATURE' };
      }
    });
    await publish(t, event());
    const [delivered] = await waitForRequests(receiver, '/v1-replay', 1);
    // The receiver accepted the delivery itself (a 2xx: the delivery succeeded).
    expect((await waitForStatus(t, reg.endpoint.id, ['succeeded', 'retrying', 'failed'])).status).toBe('succeeded');

    // Someone who captured the request posts it again, byte for byte.
    const replay = await fetch(`${base}/v1-replay`, { method: 'POST', headers: standardHeaders(delivered), body: delivered.body });
    expect(replay.status).toBe(400);
    expect(await replay.text()).toBe('REPLAYED_ID');
    const tampered = await fetch(`${base}/v1-replay`, { method: 'POST', headers: standardHeaders(delivered), body: `${delivered.body} ` });
    expect(tampered.status).toBe(400);
    expect(await tampered.text()).toBe('BAD_SIGNATURE');
  });

  it('v1: after a rotation both secrets sign (current first) until the overlap ends, then the new one only', async () => {
    const reg = await register(t, s.apiKey, { url: `${base}/v1-rotate`, events: ['contact.merged'] });
    const rotated = await toolOk<{ signingSecret: string }>(t, s.apiKey, 'rotate_webhook_secret', { endpointId: reg.endpoint.id });
    await publish(t, event());
    const [during] = await waitForRequests(receiver, '/v1-rotate', 1);
    const entries = (during.headers['webhook-signature'] as string).split(' ');
    expect(entries).toHaveLength(2);
    expect(new Webhook(rotated.signingSecret).verify(during.body, standardHeaders(during))).toEqual(JSON.parse(during.body));
    expect(new Webhook(reg.signingSecret).verify(during.body, standardHeaders(during))).toEqual(JSON.parse(during.body));
    // Current first: the first entry alone verifies with the new secret.
    expect(() => new Webhook(rotated.signingSecret).verify(during.body, { ...standardHeaders(during), 'webhook-signature': entries[0] })).not.toThrow();

    await endOverlap(reg.endpoint.id);
    await publish(t, event());
    const [, after] = await waitForRequests(receiver, '/v1-rotate', 2);
    expect((after.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
    expect(new Webhook(rotated.signingSecret).verify(after.body, standardHeaders(after))).toEqual(JSON.parse(after.body));
    expect(() => new Webhook(reg.signingSecret).verify(after.body, standardHeaders(after))).toThrow();
  });

  it('v1a: only ed25519 entries, verified by node:crypto with the key from the JWK Set; tampered body, another key, old timestamp and replay refused', async () => {
    const reg = await register(t, s.apiKey, { url: `${base}/v1a`, events: ['contact.merged'], signatureVersion: 'v1a' });
    const set = await jwks(reg.endpoint.id).expect(200);
    expect(set.headers['content-type']).toBe('application/jwk-set+json; charset=utf-8');
    expect(set.headers['cache-control']).toBe('public, max-age=300');
    expect(set.body.keys).toHaveLength(1);
    const [jwk] = set.body.keys;
    expect(jwk).toEqual({ kty: 'OKP', crv: 'Ed25519', x: expect.any(String), kid: expect.any(String), use: 'sig', alg: 'EdDSA' });
    expect(Buffer.from(jwk.x, 'base64url').toString('base64')).toBe(reg.endpoint.publicKey!.slice('whpk_'.length));

    await publish(t, event());
    const [req] = await waitForRequests(receiver, '/v1a', 1);
    expect(req.headers['webhook-signature']).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(v1aVerifies(req, keyOf(jwk))).toBe(true);
    expect(v1aVerifies(req, keyOf(jwk), `${req.body} `)).toBe(false);
    const other = await register(t, s.apiKey, { url: `${base}/v1a-other`, events: ['message.sent'], signatureVersion: 'v1a' });
    expect(v1aVerifies(req, whpkKey(other.endpoint.publicKey!))).toBe(false);
    // No v1 entry rides along: a receiver holding only the secret cannot verify webhook-signature.
    expect(() => new Webhook(reg.signingSecret).verify(req.body, standardHeaders(req))).toThrow();
    // The legacy header is still on by default.
    expect(parseSignature(req.headers['x-service-signature']).v1).toHaveLength(1);

    // The SDK: whpk_ key verifies; a replay and an old timestamp are refused.
    const isNewId = rememberedIds();
    expect(verifyWebhookRequest(req.body, standardHeaders(req), [reg.endpoint.publicKey!], { isNewId }).version).toBe('v1a');
    expect(() => verifyWebhookRequest(req.body, standardHeaders(req), [reg.endpoint.publicKey!], { isNewId })).toThrow(
      expect.objectContaining({ code: 'REPLAYED_ID' }),
    );
    expect(() => verifyWebhookRequest(req.body, standardHeaders(req), [reg.endpoint.publicKey!], { now: Date.now() + 10 * 60_000 })).toThrow(
      expect.objectContaining({ code: 'TIMESTAMP_OUT_OF_TOLERANCE' }),
    );
  });

  it('v1a: after a rotation both keys sign and both are in the JWK Set (current first) until the overlap ends', async () => {
    const reg = await register(t, s.apiKey, { url: `${base}/v1a-rotate`, events: ['contact.merged'], signatureVersion: 'v1a' });
    const rotated = await toolOk<{ endpoint: { publicKey: string } }>(t, s.apiKey, 'rotate_webhook_secret', { endpointId: reg.endpoint.id });
    const set = (await jwks(reg.endpoint.id).expect(200)).body.keys as Array<{ kty: string; crv: string; x: string }>;
    expect(set.map((k) => `whpk_${Buffer.from(k.x, 'base64url').toString('base64')}`)).toEqual([rotated.endpoint.publicKey, reg.endpoint.publicKey]);

    await publish(t, event());
    const [during] = await waitForRequests(receiver, '/v1a-rotate', 1);
    const entries = (during.headers['webhook-signature'] as string).split(' ');
    expect(entries.map((e) => e.split(',')[0])).toEqual(['v1a', 'v1a']);
    expect(v1aVerifies(during, keyOf(set[0]))).toBe(true);
    expect(v1aVerifies(during, keyOf(set[1]))).toBe(true);
    expect(v1aVerifies({ ...during, headers: { ...during.headers, 'webhook-signature': entries[0] } }, keyOf(set[0]))).toBe(true);

    await endOverlap(reg.endpoint.id);
    const after = (await jwks(reg.endpoint.id).expect(200)).body.keys;
    expect(after).toEqual([set[0]]);
    await publish(t, event());
    const [, later] = await waitForRequests(receiver, '/v1a-rotate', 2);
    expect((later.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
    expect(v1aVerifies(later, keyOf(set[0]))).toBe(true);
    expect(v1aVerifies(later, keyOf(set[1]))).toBe(false);
  });

  it('the JWK Set URL answers 404 alike for an unknown id, a malformed id and a v1 endpoint, without an API key', async () => {
    const v1 = await register(t, s.apiKey, { url: `${base}/v1-nokeys`, events: ['message.sent'] });
    const ids = ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', v1.endpoint.id];
    const answers = await Promise.all(ids.map((id) => jwks(id)));
    expect(answers.map((a) => a.status)).toEqual([404, 404, 404]);
    // The same answer whatever the id, which it does not repeat: nothing tells a v1 endpoint from none.
    expect(new Set(answers.map((a) => JSON.stringify(a.body))).size).toBe(1);
    expect(answers.every((a, i) => !a.text.includes(ids[i]))).toBe(true);
  });

  it('legacySignature false drops X-Service-Signature and keeps the Standard Webhooks headers; true brings it back', async () => {
    const reg = await register(t, s.apiKey, { url: `${base}/no-legacy`, events: ['contact.merged'], legacySignature: false });
    await publish(t, event());
    const [off] = await waitForRequests(receiver, '/no-legacy', 1);
    expect(off.headers['x-service-signature']).toBeUndefined();
    expect(new Webhook(reg.signingSecret).verify(off.body, standardHeaders(off))).toEqual(JSON.parse(off.body));

    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: reg.endpoint.id, legacySignature: true });
    await publish(t, event());
    const [, on] = await waitForRequests(receiver, '/no-legacy', 2);
    expect(parseSignature(on.headers['x-service-signature']).t).toBe(on.headers['webhook-timestamp']);
  });
});
