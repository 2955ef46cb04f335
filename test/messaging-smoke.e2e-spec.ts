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

  it('an inbound SMS to a number no live line has is 404 naming `to`, and stores nothing', async () => {
    const s = await createSession(t.admin);
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const ingest = (to: string, providerMessageId: string) =>
      t
        .http()
        .post('/ingest/sms/inbound')
        .set('Authorization', `Bearer ${INGEST_TOKEN}`)
        .send({ to, from: '+15550002222', body: 'anyone?', providerMessageId });
    const unknown = await ingest('+15550009999', 'nobody-1');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ field: 'to', message: expect.stringContaining('+15550009999') });
    const db = t.app.get(DataSource);
    await db.query('UPDATE lines SET deleted_at = now() WHERE id = $1', [phone.id]);
    const deleted = await ingest(phone.address, 'deleted-1');
    expect(deleted.status).toBe(404);
    const [counts] = await db.query(
      `SELECT (SELECT count(*)::int FROM identities WHERE value = '+15550002222' AND org_id = (SELECT org_id FROM lines WHERE id = $1)) AS identities,
              (SELECT count(*)::int FROM threads WHERE line_id = $1) AS threads`,
      [phone.id],
    );
    expect(counts).toEqual({ identities: 0, threads: 0 });
  });

  it("a partner's SMS share one thread, which counts each message once and moves to the latest", async () => {
    const s = await createSession(t.admin);
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const send = (providerMessageId: string) =>
      t
        .http()
        .post('/ingest/sms/inbound')
        .set('Authorization', `Bearer ${INGEST_TOKEN}`)
        .send({ to: phone.address, from: '+15550003333', body: `text ${providerMessageId}`, providerMessageId });
    const first = await send('count-1');
    const second = await send('count-2');
    const repeat = await send('count-2');
    expect([first.status, second.status, repeat.status]).toEqual([201, 201, 200]);
    expect(first.body.threadCreated).toBe(true);
    expect(second.body).toMatchObject({ threadId: first.body.threadId, threadCreated: false });
    const [thread] = await t.app
      .get(DataSource)
      .query(
        `SELECT t.message_count, t.last_message_at = (SELECT max(created_at) FROM messages WHERE thread_id = t.id) AS at_latest FROM threads t WHERE t.id = $1`,
        [first.body.threadId],
      );
    expect(thread).toEqual({ message_count: 2, at_latest: true });
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
