import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { EventBus } from '../../src/events/event-bus';
import { verifyWebhook } from '../../src/sdk';
import { createTestApp, TestApp } from '../support/app';
import { TestReceiver } from '../support/receiver';
import { createSession } from '../support/session';

describe('delivery smoke', () => {
  let t: TestApp;
  const receiver = new TestReceiver();
  let url: string;
  beforeAll(async () => {
    url = await receiver.start();
    t = await createTestApp({
      env: {
        APP_ENV: 'development',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
        DELIVERY_RETRY_SCHEDULE: '1s,1s',
        // The relay's safety-net poll is out of reach: only the after-commit NOTIFY can wake it in time.
        OUTBOX_POLL_INTERVAL_MS: '60000',
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await receiver.stop();
  });

  it('publishes, fans out, signs and delivers', async () => {
    const s = await createSession(t.admin);
    const reg = await t
      .http()
      .post('/api/mcp')
      .set('Authorization', `Bearer ${s.apiKey}`)
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'register_webhook', arguments: { url: `${url}/hook`, events: ['contact.merged'] } },
      });
    const { secret, endpoint } = reg.body.result.structuredContent;
    const ds = t.app.get(DataSource);
    const started = Date.now();
    await ds.transaction((m) =>
      t.app.get(EventBus).publish(
        {
          type: 'contact.merged',
          orgId: s.orgId,
          lineId: null,
          data: { contact: { id: randomUUID(), displayName: 'Ann', identities: [] }, mergedContactIds: [randomUUID()] },
        },
        m,
      ),
    );
    await receiver.waitFor(1);
    expect(receiver.requests[0].receivedAt - started).toBeLessThan(2000);
    const req = receiver.requests[0];
    const env = verifyWebhook(req.body, req.headers['x-service-signature'] as string, [secret]);
    expect(env.type).toBe('contact.merged');
    expect(env.endpointId).toBe(endpoint.id);
    expect(req.headers['x-service-event-id']).toBe(env.id);
  });

  it('wakes the relay after each commit, not for a rolled-back publish', async () => {
    const s = await createSession(t.admin);
    await t
      .http()
      .post('/api/mcp')
      .set('Authorization', `Bearer ${s.apiKey}`)
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'register_webhook', arguments: { url: `${url}/second`, events: ['contact.merged'] } },
      });
    const ds = t.app.get(DataSource);
    const bus = t.app.get(EventBus);
    const merged = (id: string) => ({
      type: 'contact.merged' as const,
      orgId: s.orgId,
      lineId: null,
      data: { contact: { id, displayName: 'Ann', identities: [] }, mergedContactIds: [randomUUID()] },
    });
    await expect(
      ds.transaction(async (m) => {
        await bus.publish(merged(randomUUID()), m);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    const before = receiver.requests.length;
    const published = [randomUUID(), randomUUID(), randomUUID()];
    for (const [n, id] of published.entries()) {
      const started = Date.now();
      await ds.transaction((m) => bus.publish(merged(id), m));
      await receiver.waitFor(before + n + 1);
      expect(receiver.requests.at(-1)!.receivedAt - started).toBeLessThan(2000);
    }
    const ids = receiver.requests.slice(before).map((r) => JSON.parse(r.body.toString()).data.contact.id);
    expect(ids).toEqual(published);
  });
});
