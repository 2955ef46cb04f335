import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { EventBus } from '../../src/events/event-bus';
import { MessageDataBuilder } from '../../src/conversations/message-data.builder';
import { verifyWebhook } from '../../src/sdk';
import { createTestApp, TestApp } from '../support/app';
import { TestReceiver } from '../support/receiver';
import { createSession } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';

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

  it('concurrent inbound SMS share transactions yet each is answered and recorded as if alone', async () => {
    const s = await createSession(t.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    const [a, b] = s.lines;
    const partners = Array.from({ length: 12 }, (_, i) => `+1555010${String(i).padStart(4, '0')}`);
    // Three messages from each partner to line a, one to line b, two to no line, and a repeat.
    const sms = [
      ...partners.flatMap((from, i) => [1, 2, 3].map((k) => ({ to: a.address, from, body: `a ${i}.${k}`, providerMessageId: `batch-a-${i}-${k}` }))),
      ...partners.map((from, i) => ({ to: b.address, from, body: `b ${i}`, providerMessageId: `batch-b-${i}` })),
      { to: '+15550019998', from: partners[0], body: 'nobody', providerMessageId: 'batch-none-1' },
      { to: '+15550019999', from: partners[1], body: 'nobody', providerMessageId: 'batch-none-2' },
      { to: a.address, from: partners[2], body: 'a 2.1', providerMessageId: 'batch-a-2-1' },
    ];
    const answers = await Promise.all(sms.map((body) => t.http().post('/ingest/sms/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).send(body)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.slice(0, 48)).toEqual(Array(48).fill(201));
    expect(answers[48].body).toMatchObject({ field: 'to', message: expect.stringContaining('+15550019998') });
    expect(statuses.slice(48, 50)).toEqual([404, 404]);
    // The repeat of batch-a-2-1 raced the first delivery: one of the two is 201, the other 200, same ids.
    const first = answers[2 * 3];
    const repeat = answers[50];
    expect([first.status, repeat.status].sort()).toEqual([200, 201]);
    expect(repeat.body).toMatchObject({ messageId: first.body.messageId, threadId: first.body.threadId });

    const db = t.app.get(DataSource);
    const threads: Array<{ line_id: string; message_count: number; messages: number }> = await db.query(
      `SELECT t.line_id, t.message_count, (SELECT count(*)::int FROM messages m WHERE m.thread_id = t.id) AS messages
         FROM threads t WHERE t.line_id = ANY ($1::uuid[])`,
      [[a.id, b.id]],
    );
    expect(threads.length).toBe(24);
    for (const thread of threads) expect(thread.message_count).toBe(thread.line_id === a.id ? 3 : 1);
    for (const thread of threads) expect(thread.messages).toBe(thread.message_count);

    // Each message.received carries its own message, and its thread as that message left it.
    const events: Array<{ type: string; line_id: string; data: any; tx: string }> = await db.query(
      `SELECT type, line_id, data, xmin::text AS tx FROM outbox_events WHERE line_id = ANY ($1::uuid[]) ORDER BY id`,
      [[a.id, b.id]],
    );
    const received = events.filter((e) => e.type === 'message.received');
    expect(received.length).toBe(48);
    expect(events.filter((e) => e.type === 'thread.created').length).toBe(24);
    const byId = new Map(answers.slice(0, 48).map((r, i) => [r.body.messageId, sms[i]]));
    // Events written together keep their order and their own rows: each thread.created before its message's message.received.
    // (Not next to it: concurrent transactions draw outbox ids in between, and xmin changes once the relay marks a row.)
    events.forEach((e, i) => {
      if (e.type !== 'thread.created') return;
      const j = events.findIndex((r) => r.type === 'message.received' && r.data.message.id === e.data.message.id);
      expect(j).toBeGreaterThan(i);
      expect(events[j]).toMatchObject({ line_id: e.line_id, data: { thread: { id: e.data.thread.id } } });
    });
    for (const e of received) {
      expect(e.line_id).toBe(byId.get(e.data.message.id)!.to === a.address ? a.id : b.id);
      expect(e.data.message.body).toBe(byId.get(e.data.message.id)!.body);
      expect(e.data.thread.recentMessages.at(-1).id).toBe(e.data.message.id);
      expect(e.data.thread.messageCount).toBe(e.data.thread.recentMessages.length);
    }
    const countsOfThread = new Map<string, number[]>();
    for (const e of received) countsOfThread.set(e.data.thread.id, [...(countsOfThread.get(e.data.thread.id) ?? []), e.data.thread.messageCount]);
    for (const counts of countsOfThread.values()) expect(counts.sort()).toEqual(counts.length === 3 ? [1, 2, 3] : [1]);
    // They shared commits: fewer transactions wrote these events than there are messages.
    expect(new Set(received.map((e) => e.tx)).size).toBeLessThan(48);
  });
  it('events whose data the database builds are written in order with that data, and none when one has no data row', async () => {
    const s = await createSession(t.admin);
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const inbound = { to: phone.address, from: '+15550002222', body: 'built in the database', providerMessageId: 'from-sql-1' };
    const { body: recorded } = await t.http().post('/ingest/sms/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).send(inbound).expect(201);
    const db = t.app.get(DataSource);
    const bus = t.app.get(EventBus);
    const data = t.app.get(MessageDataBuilder);
    const [{ org_id: orgId }] = await db.query('SELECT org_id FROM messages WHERE id = $1', [recorded.messageId]);
    const event = { type: 'message.received' as const, orgId, lineId: phone.id };

    const ids = await db.transaction((tx) =>
      bus.publishAllFrom(
        [
          { ...event, dataKey: recorded.messageId },
          { ...event, type: 'thread.created' as const, dataKey: recorded.messageId },
        ],
        data.source([recorded.messageId]),
        tx,
      ),
    );
    expect(ids.map(Number)[1]).toBeGreaterThan(ids.map(Number)[0]);
    const rows = await db.query('SELECT id::text, type, data FROM outbox_events WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids]);
    const expected = await db.transaction((tx) => data.build(recorded.messageId, tx));
    expect(rows.map((r: { id: string }) => r.id)).toEqual(ids);
    expect(rows.map((r: { type: string }) => r.type)).toEqual(['message.received', 'thread.created']);
    for (const row of rows) expect(row.data).toEqual(expected);

    const before = await db.query('SELECT count(*)::int AS n FROM outbox_events');
    await expect(
      db.transaction((tx) =>
        bus.publishAllFrom(
          [
            { ...event, dataKey: recorded.messageId },
            { ...event, dataKey: randomUUID() },
          ],
          data.source([recorded.messageId]),
          tx,
        ),
      ),
    ).rejects.toThrow('no event data for some of');
    expect(await db.query('SELECT count(*)::int AS n FROM outbox_events')).toEqual(before);
  });
});
