import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { verifyWebhook } from '../src/sdk';
import { createTestApp, TestApp } from './support/app';
import { TestReceiver } from './support/receiver';
import { createSession } from './support/session';
import { INGEST_TOKEN } from './support/test-env';

describe('messaging smoke', () => {
  let t: TestApp;
  const receiver = new TestReceiver();
  let url: string;
  const carrier = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ providerMessageId: `prov-${Date.now()}` }));
  });
  beforeAll(async () => {
    await new Promise<void>((r) => carrier.listen(0, '127.0.0.1', r));
    url = await receiver.start();
    t = await createTestApp({
      env: {
        SMS_CARRIER_URL: `http://127.0.0.1:${(carrier.address() as AddressInfo).port}/sms`,
        APP_ENV: 'development',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await receiver.stop();
    carrier.close();
  });

  it('inbound sms raises thread.created + message.received; send_sms raises sent + status_changed', async () => {
    const s = await createSession(t.admin);
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const reg = await t
      .http()
      .post('/api/mcp')
      .set('Authorization', `Bearer ${s.apiKey}`)
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'register_webhook',
          arguments: { url: `${url}/hook`, events: ['message.received', 'thread.created', 'message.sent', 'message.status_changed'], mode: 'verbose' },
        },
      });
    const { secret } = reg.body.result.structuredContent;
    const inbound = { to: phone.address, from: '+15557654321', body: 'hello there', providerMessageId: 'p-1' };
    const first = await t.http().post('/ingest/sms/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).send(inbound);
    expect(first.status).toBe(201);
    const again = await t.http().post('/ingest/sms/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).send(inbound);
    expect(again.status).toBe(200);
    expect(again.body.messageId).toBe(first.body.messageId);
    await receiver.waitFor(2);
    const events = receiver.requests.map((r) => verifyWebhook<any>(r.body, r.headers['x-service-signature'] as string, [secret]));
    expect(events.map((e) => e.type).sort()).toEqual(['message.received', 'thread.created']);
    const received = events.find((e) => e.type === 'message.received')!;
    const identityId = received.data.person.identities[0].id;
    const send = await t
      .http()
      .post('/api/mcp')
      .set('Authorization', `Bearer ${s.apiKey}`)
      .send({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'send_sms', arguments: { threadId: first.body.threadId, identityId, smsBody: 'hi back' } },
      });
    expect(send.body.result.structuredContent.message.status).toBe('QUEUED');
    await receiver.waitFor(4);
    const later = receiver.requests.slice(2).map((r) => verifyWebhook<any>(r.body, r.headers['x-service-signature'] as string, [secret]));
    expect(later.map((e) => e.type).sort()).toEqual(['message.sent', 'message.status_changed']);
    const changed = later.find((e) => e.type === 'message.status_changed')!;
    expect(changed.data.previousStatus).toBe('QUEUED');
    expect(changed.data.currentStatus).toBe('SENT');
  });

  it('eight concurrent deliveries of one inbound SMS store it once: one 201, seven 200 with the same ids, one event', async () => {
    const s = await createSession(t.admin);
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const inbound = { to: phone.address, from: '+15550001111', body: 'said once, sent eight times', providerMessageId: 'race-1' };
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => t.http().post('/ingest/sms/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).send(inbound)),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    const created = answers.find((a) => a.status === 201)!.body;
    for (const a of answers) expect(a.body).toMatchObject({ messageId: created.messageId, threadId: created.threadId, attachmentIds: [] });
    expect(answers.filter((a) => a.body.duplicate).length).toBe(7);
    const [counts] = await t.app.get(DataSource).query(
      `SELECT (SELECT count(*)::int FROM messages WHERE line_id = $1) AS messages,
              (SELECT message_count FROM threads WHERE id = $2) AS thread_count,
              (SELECT count(*)::int FROM outbox_events WHERE line_id = $1 AND type = 'message.received') AS received`,
      [phone.id, created.threadId],
    );
    expect(counts).toEqual({ messages: 1, thread_count: 1, received: 1 });
  });
});
