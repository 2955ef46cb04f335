import { toolError, toolOk } from '../support/mcp';
import { createMessagingTestApp, Hook, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

describe('send_sms to a number: a new conversation from a line', () => {
  let m: MessagingTestApp;
  let s: Session;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    await m?.close();
  });

  /** Waits until the message has left QUEUED, and answers its status. */
  async function statusOf(messageId: string): Promise<string> {
    return waitUntil(async () => {
      const [row] = await m.db.query(`SELECT status FROM messages WHERE id = $1`, [messageId]);
      return row.status !== 'QUEUED' && (row.status as string);
    }, `message ${messageId} to leave QUEUED`);
  }

  it('texts a new number: the thread is made (thread.created), the SMS goes QUEUED → SENT through the carrier, and later SMS share the thread', async () => {
    const line = s.lines[0];
    const to = partnerPhone();
    const hook = await Hook.register(m, s.apiKey, { events: ['thread.created'] });
    const { message } = await toolOk(m, s.apiKey, 'send_sms', { to, body: 'Your table is ready.' });
    expect(message).toMatchObject({
      channel: 'SMS',
      direction: 'OUTBOUND',
      status: 'QUEUED',
      body: 'Your table is ready.',
      fromIdentity: { value: line.address, kind: 'PHONE' },
      toIdentity: { value: to, kind: 'PHONE' },
    });
    expect(await statusOf(message.id)).toBe('SENT');
    expect(m.carried).toContainEqual({ from: line.address, to, body: 'Your table is ready.' });
    const [created] = await hook.waitFor(1, 'thread.created');
    expect(created.data).toMatchObject({ thread: { id: message.threadId, messageCount: 1 }, message: { id: message.id } });

    // The spec's argument name and `from` find the same thread; so does an inbound SMS from the number.
    const second = (await toolOk(m, s.apiKey, 'send_sms', { to, from: line.address, smsBody: 'Table 4.' })).message;
    expect(second.threadId).toBe(message.threadId);
    const inbound = await inboundSms(m, line.address, to, 'On my way');
    expect(inbound).toMatchObject({ threadId: message.threadId, threadCreated: false });
    const thread = await toolOk(m, s.apiKey, 'get_thread', { threadId: message.threadId });
    expect(thread.messages.map((x: { body: string }) => x.body)).toEqual(['On my way', 'Table 4.', 'Your table is ready.']);
    expect(thread.thread).toMatchObject({ channel: 'SMS', lineId: line.id, messageCount: 3 });
    expect(hook.events('thread.created')).toHaveLength(1);
  });

  it("refuses a text to one of the org's own lines (it would loop back in), naming the rule, and records who sent what it sends", async () => {
    const line = s.lines[0];
    const before = m.carried.length;
    expect(await toolError(m, s.apiKey, 'send_sms', { to: line.address, body: 'hello me' })).toBe(
      `${line.address} is one of this org's own lines: a message to it would come back in on that line (and an agent there would answer it), so it is not sent (rule own_line)`,
    );
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE to_value = $1 AND direction = 'OUTBOUND'`, [line.address]);
    expect(count).toBe(0);
    expect(m.carried.length).toBe(before);

    const { message } = await toolOk(m, s.apiKey, 'send_sms', { to: partnerPhone(), body: 'who sent me' });
    const [row] = await m.db.query(`SELECT sent_by_user_id, sent_by_key_id FROM messages WHERE id = $1`, [message.id]);
    expect(row).toEqual({ sent_by_user_id: s.userId, sent_by_key_id: s.apiKeyId });
  });

  it('an idempotencyKey sends once, as on a thread', async () => {
    const to = partnerPhone();
    const args = { to, body: 'only once', idempotencyKey: `new-number-${to}` };
    const first = await toolOk(m, s.apiKey, 'send_sms', args);
    expect(first.replayed).toBe(false);
    const again = await toolOk(m, s.apiKey, 'send_sms', args);
    expect(again).toEqual({ message: expect.objectContaining({ id: first.message.id }), replayed: true });
    await statusOf(first.message.id);
    expect(m.carried.filter((x) => x.to === to)).toHaveLength(1);
    expect(await toolError(m, s.apiKey, 'send_sms', { ...args, body: 'something else' })).toMatch(
      /idempotencyKey "new-number-.*" was used in the last 24 hours with other arguments/,
    );
  });

  it('refuses unclear or out-of-reach arguments, naming the field', async () => {
    const to = partnerPhone();
    const [{ threadId }] = [await inboundSms(m, s.lines[0].address, partnerPhone(), 'hi')];
    expect(await toolError(m, s.apiKey, 'send_sms', { threadId, to, body: 'x' })).toBe('give exactly one of threadId (send on a thread) or to (text a number)');
    expect(await toolError(m, s.apiKey, 'send_sms', { body: 'x' })).toBe('give exactly one of threadId (send on a thread) or to (text a number)');
    expect(await toolError(m, s.apiKey, 'send_sms', { to, body: 'x', smsBody: 'x' })).toBe(
      'give the text as exactly one of body or smsBody (the same argument by two names)',
    );
    expect(await toolError(m, s.apiKey, 'send_sms', { threadId, lineId: s.lines[0].id, body: 'x' })).toBe(
      "an SMS on a thread goes from the thread's own line; leave lineId out",
    );
    expect(await toolError(m, s.apiKey, 'send_sms', { to, from: '+15550000000', body: 'x' })).toBe(
      'phone line +15550000000 not found among the lines this API key may use',
    );

    // Two lines, a key limited to one of them: the other is out of reach, and the one needs no naming.
    const two = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    expect(await toolError(m, two.apiKey, 'send_sms', { to, body: 'x' })).toBe(
      'lineId is required: this API key may use 2 phone lines (list_phone_numbers gives their ids)',
    );
    const scoped = await m.admin.post(`/admin/users/${two.userId}/api-keys`, {
      name: 'one line',
      channelAccess: { mode: 'LINES', lines: [two.lines[0].address] },
    });
    const key = scoped.body.key as string;
    expect(await toolError(m, key, 'send_sms', { to, lineId: two.lines[1].id, body: 'x' })).toBe(`phone line ${two.lines[1].id} not found`);
    const { message } = await toolOk(m, key, 'send_sms', { to, body: 'from the only line I may use' });
    expect(message.fromIdentity.value).toBe(two.lines[0].address);
  });
});
