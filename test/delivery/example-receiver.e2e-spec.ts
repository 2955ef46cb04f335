import { Server } from 'node:http';
import { AddressInfo } from 'node:net';
import express from 'express';
import { createReceiverApp, JwksKeys } from '../../examples/receiver';
import type { WebhookEnvelope } from '../../src/sdk';
import { fixtureEvent } from '../fixtures/events';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, publish, register, waitForStatus } from '../support/delivery';
import { toolOk } from '../support/mcp';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

jest.setTimeout(60_000);

/** A request as the example receiver got it, and what it answered. */
interface Seen {
  headers: Record<string, string>;
  body: Buffer;
  status: number;
}

/**
 * examples/receiver.ts, run as a subscriber runs it, receiving real deliveries: one receiver per
 * signature form, each given only what its owner holds (the whsec_ secret, the JWK Set URL, the
 * hex secret of a v1a endpoint that kept the legacy header).
 */
describe('examples/receiver.ts against real deliveries', () => {
  let t: DeliveryTestApp;
  let s: Session;
  let serviceUrl: string;
  const servers: Server[] = [];

  beforeAll(async () => {
    t = await createDeliveryTestApp({ queueTag: 'example-receiver' });
    await t.app.listen(0, '127.0.0.1');
    serviceUrl = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    await closeDeliveryTestApp(t);
  });

  /** Starts the example's app on 127.0.0.1, recording each request and its answer; answers its URL, the events it handled and the requests. */
  async function startReceiver(options: { secrets: string[]; jwks?: JwksKeys }) {
    const handled: WebhookEnvelope[] = [];
    const seen: Seen[] = [];
    const outer = express();
    outer.use(express.raw({ type: 'application/json' }), (req, res, next) => {
      const entry: Seen = { headers: req.headers as Record<string, string>, body: req.body as Buffer, status: 0 };
      seen.push(entry);
      res.on('finish', () => (entry.status = res.statusCode));
      next();
    });
    outer.use(createReceiverApp({ ...options, handleEvent: (event) => void handled.push(event) }));
    const server = await new Promise<Server>((resolve) => {
      const listening = outer.listen(0, '127.0.0.1', () => resolve(listening));
    });
    servers.push(server);
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, handled, seen };
  }

  const event = () => fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null });
  const resend = (url: string, req: Seen, body = req.body) =>
    fetch(url, {
      method: 'POST',
      headers: Object.fromEntries(Object.entries(req.headers).filter(([name]) => !['host', 'content-length', 'connection'].includes(name))),
      body: new Uint8Array(body),
    });

  it('v1 with the whsec_ secret: handles a delivery once, acknowledges a replay without handling it, refuses a tampered body', async () => {
    const reg = await register(t, s.apiKey, { url: 'http://127.0.0.1:9/placeholder', events: ['contact.merged'], legacySignature: false });
    const receiverWithKey = await startReceiver({ secrets: [reg.signingSecret] });
    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: reg.endpoint.id, url: receiverWithKey.url });
    await publish(t, event());
    await waitUntil(() => receiverWithKey.handled.length === 1, 'the example to handle the delivery');
    const [delivered] = receiverWithKey.seen;
    expect(delivered.status).toBe(200);
    expect(delivered.headers['x-service-signature']).toBeUndefined();
    expect(receiverWithKey.handled[0].id).toBe(delivered.headers['webhook-id']);

    const replay = await resend(receiverWithKey.url, delivered);
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual({ received: true, duplicate: true });
    const tampered = await resend(receiverWithKey.url, delivered, Buffer.concat([delivered.body, Buffer.from(' ')]));
    expect(tampered.status).toBe(400);
    expect(await tampered.json()).toEqual({ error: 'SIGNATURE_MISMATCH' });
    expect(receiverWithKey.handled).toHaveLength(1);
  });

  it('v1a with the JWK Set URL: fetches the keys, and fetches them again when the endpoint gets a new key pair', async () => {
    const reg = await register(t, s.apiKey, {
      url: 'http://127.0.0.1:9/placeholder',
      events: ['contact.merged'],
      signatureVersion: 'v1a',
      legacySignature: false,
    });
    const jwks = new JwksKeys(`${serviceUrl}/webhooks/${reg.endpoint.id}/jwks.json`, 0);
    expect(await jwks.refresh()).toBe(true);
    const receiver = await startReceiver({ secrets: [], jwks });
    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: reg.endpoint.id, url: receiver.url });
    await publish(t, event());
    await waitUntil(() => receiver.handled.length === 1, 'the example to handle the v1a delivery');
    expect(receiver.seen[0].headers['webhook-signature']).toMatch(/^v1a,/);

    // Back to v1 and to v1a again: a new key pair and no previous one; the receiver's cached set is stale.
    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: reg.endpoint.id, signatureVersion: 'v1' });
    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: reg.endpoint.id, signatureVersion: 'v1a' });
    await publish(t, event());
    await waitUntil(() => receiver.handled.length === 2, 'the example to handle the delivery signed with the new key');
    expect(receiver.seen.map((r) => r.status)).toEqual([200, 200]);
  });

  it('the hex secret alone verifies a v1a endpoint that kept the legacy header; a wrong secret is refused and the delivery retried', async () => {
    const reg = await register(t, s.apiKey, { url: 'http://127.0.0.1:9/placeholder', events: ['contact.merged'], signatureVersion: 'v1a' });
    const receiver = await startReceiver({ secrets: [reg.secret] });
    const wrong = await startReceiver({ secrets: ['0'.repeat(64)] });
    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: reg.endpoint.id, url: receiver.url });
    await publish(t, event());
    await waitUntil(() => receiver.handled.length === 1, 'the example to handle the delivery through the legacy header');

    await toolOk(t, s.apiKey, 'update_webhook', { endpointId: reg.endpoint.id, url: wrong.url });
    await publish(t, event());
    await waitUntil(() => wrong.seen.length >= 1 && wrong.seen[0].status !== 0, 'the wrong receiver to answer');
    expect(wrong.seen[0].status).toBe(400);
    expect(wrong.handled).toEqual([]);
    await waitForStatus(t, reg.endpoint.id, ['retrying', 'failed']);
  });
});
