import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';
import { toolOk } from '../support/mcp';
import { createMessagingTestApp, Hook, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { privateQueuePrefix } from '../support/test-env';
import { waitUntil } from '../support/wait';
import { signInBrowser } from '../support/web';

/** Waits until get_thread shows the message in `status`, and answers that message as get_thread shows it. */
async function threadMessageIn(t: TestApp, apiKey: string, threadId: string, messageId: string, status: string): Promise<Record<string, any>> {
  return waitUntil(
    async () => {
      const { messages } = await toolOk(t, apiKey, 'get_thread', { threadId });
      const found = (messages as Array<Record<string, any>>).find((m) => m.id === messageId);
      return found?.status === status && found;
    },
    () => `message ${messageId} to be ${status}`,
  );
}

describe('development: the development carrier and mailer take what no carrier or mail server would, and the outbox lists it', () => {
  let m: MessagingTestApp;
  let s: Session;

  beforeAll(async () => {
    m = await createMessagingTestApp({ SMS_CARRIER_URL: undefined, SMTP_URL: undefined });
    s = await createSession(m.admin);
  });
  afterAll(async () => {
    await m?.close();
  });

  it('an SMS reply goes QUEUED → SENT → DELIVERED through the development carrier, with both events', async () => {
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const partner = partnerPhone();
    const hook = await Hook.register(m, s.apiKey, { events: ['message.status_changed'] });
    const { threadId } = await inboundSms(m, phone.address, partner, 'are you open?');
    const { message } = await toolOk(m, s.apiKey, 'reply_to_thread', { threadId, body: 'Yes, until six.' });
    expect(message.status).toBe('QUEUED');
    const delivered = await threadMessageIn(m, s.apiKey, threadId, message.id, 'DELIVERED');
    expect(delivered).toMatchObject({ error: null, sentAt: expect.any(String), toIdentity: { value: partner, kind: 'PHONE' } });
    const changes = await hook.waitFor(2, 'message.status_changed');
    expect(changes.map((e) => [e.data.previousStatus, e.data.currentStatus, e.data.error])).toEqual(
      expect.arrayContaining([
        ['QUEUED', 'SENT', null],
        ['SENT', 'DELIVERED', null],
      ]),
    );
    expect(m.carried).toEqual([]);
  });

  it('an email to a new address goes QUEUED → SENT through the development mailer', async () => {
    const { message } = await toolOk(m, s.apiKey, 'send_email', { to: 'erin@partner.example', subject: 'Hello from dev', body: 'First words.' });
    const sent = await threadMessageIn(m, s.apiKey, message.threadId, message.id, 'SENT');
    expect(sent).toMatchObject({ error: null, toIdentity: { value: 'erin@partner.example', kind: 'EMAIL' } });
  });

  it('/dev/outbox shows what was sent from the person’s lines, newest first, as a page and as JSON; nobody else’s', async () => {
    const browser = await signInBrowser(m, s.userId);
    const json = await m.http().get('/dev/outbox.json').set('Cookie', browser.cookie).expect(200);
    const messages = json.body.messages as Array<Record<string, any>>;
    expect(messages.map((x) => [x.channel, x.status, x.subject, x.error])).toEqual([
      ['EMAIL', 'SENT', 'Hello from dev', null],
      ['SMS', 'DELIVERED', null, null],
    ]);
    const page = await m.http().get('/dev/outbox').set('Cookie', browser.cookie).expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('Outbox (development)');
    expect(page.text).toContain('erin@partner.example');
    expect(page.text).toContain('Yes, until six.');

    const other = await createSession(m.admin);
    const otherBrowser = await signInBrowser(m, other.userId);
    const theirs = await m.http().get('/dev/outbox.json').set('Cookie', otherBrowser.cookie).expect(200);
    expect(theirs.body).toEqual({ messages: [] });
    // Signed out: the page asks to sign in first.
    await m.http().get('/dev/outbox').expect(303).expect('Location', '/sign-in');
  });
});

describe('production without SMS_CARRIER_URL: the SMS FAILED, and the reason is wherever the message is', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { SMS_CARRIER_URL: undefined, QUEUE_PREFIX: privateQueuePrefix('no-carrier') } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('get_thread, list_threads, get_message and message.status_changed carry the reason; there is no outbox', async () => {
    const s = await createSession(t.admin);
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const { threadId } = await inboundSms(t, phone.address, partnerPhone(), 'hello?');
    const { message } = await toolOk(t, s.apiKey, 'reply_to_thread', { threadId, body: 'hi' });
    const reason = 'no SMS carrier is configured (SMS_CARRIER_URL)';
    expect(await threadMessageIn(t, s.apiKey, threadId, message.id, 'FAILED')).toMatchObject({ error: reason, sentAt: null });
    const { threads } = await toolOk(t, s.apiKey, 'list_threads', { lineId: phone.id });
    expect(threads.find((x: any) => x.thread.id === threadId).lastMessage).toMatchObject({ id: message.id, status: 'FAILED', error: reason });
    expect((await toolOk(t, s.apiKey, 'get_message', { messageId: message.id })).message).toMatchObject({ error: reason });
    const [changed] = await t.app
      .get(DataSource)
      .query(`SELECT data FROM outbox_events WHERE type = 'message.status_changed' AND data->'message'->>'id' = $1`, [message.id]);
    expect(changed.data).toMatchObject({ previousStatus: 'QUEUED', currentStatus: 'FAILED', error: reason });

    const browser = await signInBrowser(t, s.userId);
    await t.http().get('/dev/outbox.json').set('Cookie', browser.cookie).expect(404);
    const page = await t.http().get('/dev/outbox').set('Cookie', browser.cookie).expect(404);
    expect(page.text).toContain('the development outbox exists only when APP_ENV=development'.replace(/^t/, 'T'));
  });
});
