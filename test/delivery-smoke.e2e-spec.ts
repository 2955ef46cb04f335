import { DataSource } from 'typeorm';
import { EventBus } from '../src/events/event-bus';
import { verifyWebhook } from '../src/sdk';
import { createTestApp, TestApp } from './support/app';
import { TestReceiver } from './support/receiver';
import { createSession } from './support/session';

describe('delivery smoke', () => {
  let t: TestApp;
  const receiver = new TestReceiver();
  let url: string;
  const saved = { ...process.env };
  beforeAll(async () => {
    process.env.APP_ENV = 'development';
    process.env.WEBHOOK_ALLOWED_CIDRS = '127.0.0.0/8';
    process.env.DELIVERY_RETRY_SCHEDULE = '1s,1s';
    url = await receiver.start();
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
    await receiver.stop();
    process.env = saved;
  });

  it('publishes, fans out, signs and delivers', async () => {
    const s = await createSession(t.admin);
    const reg = await t.http().post('/api/mcp').set('Authorization', `Bearer ${s.apiKey}`).send({
      jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { name: 'register_webhook', arguments: { url: `${url}/hook`, events: ['contact.merged'] } },
    });
    const { secret, endpoint } = reg.body.result.structuredContent;
    const ds = t.app.get(DataSource);
    const started = Date.now();
    await ds.transaction((m) => t.app.get(EventBus).publish({
      type: 'contact.merged', orgId: s.orgId, lineId: null,
      data: { contact: { id: 'c1', displayName: 'Ann', identities: [] }, mergedContactIds: ['c2'] },
    }, m));
    await receiver.waitFor(1);
    console.log('latency ms', receiver.requests[0].receivedAt - started);
    const req = receiver.requests[0];
    const env = verifyWebhook(req.body, req.headers['x-service-signature'] as string, [secret]);
    expect(env.type).toBe('contact.merged');
    expect(env.endpointId).toBe(endpoint.id);
    expect(req.headers['x-service-event-id']).toBe(env.id);
  });
});
