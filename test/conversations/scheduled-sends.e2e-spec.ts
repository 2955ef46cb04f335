import { ScheduledSends } from '../../src/conversations/outbound/scheduled-sends';
import { callTool, toolError, toolOk } from '../support/mcp';
import { modernRpc } from '../support/mcp-modern';
import { createMessagingTestApp, Hook, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';
import { postForm, signInBrowser } from '../support/web';

/** A sendAt `ms` from now, as an agent writes it (RFC 3339 with an offset). */
function inMs(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

describe('scheduled sends: sendAt, SCHEDULED until its time, then sent once; cancellable', () => {
  let m: MessagingTestApp;
  let s: Session;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
  });
  afterAll(async () => {
    await m?.close();
  });

  /** The first `count` message.status_changed moves of the message the hook received, as [previousStatus, currentStatus]. */
  async function movesOf(hook: Hook, messageId: string, count: number): Promise<Array<[string | null, string]>> {
    const mine = await waitUntil(() => {
      const events = hook.events('message.status_changed').filter((e) => e.data.message.id === messageId);
      return events.length >= count && events;
    }, `${count} status moves of ${messageId}`);
    return mine.map((e) => [e.data.previousStatus, e.data.currentStatus]);
  }

  async function statusOf(messageId: string): Promise<{ status: string; error: string | null }> {
    const [row] = await m.db.query(`SELECT status, error FROM messages WHERE id = $1`, [messageId]);
    return row;
  }

  it('send_sms with sendAt is SCHEDULED and listed with its time, goes out at its time exactly once, with its status moves', async () => {
    const to = partnerPhone();
    const hook = await Hook.register(m, s.apiKey, { events: ['message.status_changed', 'thread.created'] });
    const sendAt = inMs(3000);
    const { message } = await toolOk(m, s.apiKey, 'send_sms', { to, body: 'Reminder: your table at 8.', sendAt });
    expect(message).toMatchObject({ status: 'SCHEDULED', sendAt: new Date(sendAt).toISOString(), sentAt: null });
    expect(m.carried.filter((x) => x.to === to)).toHaveLength(0);

    // Listed: get_thread and get_message show it SCHEDULED with its time.
    const thread = await toolOk(m, s.apiKey, 'get_thread', { threadId: message.threadId });
    expect(thread.messages).toEqual([expect.objectContaining({ id: message.id, status: 'SCHEDULED', sendAt: new Date(sendAt).toISOString() })]);
    const got = await toolOk(m, s.apiKey, 'get_message', { messageId: message.id });
    expect(got.message).toMatchObject({ status: 'SCHEDULED', sendAt: new Date(sendAt).toISOString() });

    await waitUntil(() => m.carried.some((x) => x.to === to), 'the scheduled SMS to reach the carrier', { timeoutMs: 20_000 });
    expect(Date.now()).toBeGreaterThanOrEqual(new Date(sendAt).getTime());
    await waitUntil(async () => (await statusOf(message.id)).status === 'SENT', 'the scheduled SMS to be SENT');
    // A sweep now finds nothing due: still once.
    await m.app.get(ScheduledSends).releaseDue();
    expect(m.carried.filter((x) => x.to === to)).toEqual([{ from: s.lines[0].address, to, body: 'Reminder: your table at 8.' }]);

    expect(await movesOf(hook, message.id, 3)).toEqual([
      [null, 'SCHEDULED'],
      ['SCHEDULED', 'QUEUED'],
      ['QUEUED', 'SENT'],
    ]);
    expect(hook.events('thread.created').filter((e) => e.data.thread.id === message.threadId)).toHaveLength(1);
  });

  it('the due sweep reads scheduled_messages: a row while a message is SCHEDULED, none once it is released or cancelled; no index of messages names status', async () => {
    const due = async (id: string) => (await m.db.query(`SELECT send_at FROM scheduled_messages WHERE message_id = $1`, [id])).length;
    const later = await toolOk(m, s.apiKey, 'send_sms', { to: partnerPhone(), body: 'later', sendAt: inMs(3600_000) });
    const soon = await toolOk(m, s.apiKey, 'send_sms', { to: partnerPhone(), body: 'soon', sendAt: inMs(3600_000) });
    expect([await due(later.message.id), await due(soon.message.id)]).toEqual([1, 1]);
    await toolOk(m, s.apiKey, 'cancel_scheduled_message', { messageId: later.message.id });
    expect(await due(later.message.id)).toBe(0);
    // Come due (its delayed job as if lost): the sweep finds it there and releases it.
    await m.db.query(`UPDATE messages SET send_at = now() - interval '1 second' WHERE id = $1`, [soon.message.id]);
    expect(await due(soon.message.id)).toBe(1);
    await m.app.get(ScheduledSends).releaseDue();
    expect((await statusOf(soon.message.id)).status).not.toBe('SCHEDULED');
    expect(await due(soon.message.id)).toBe(0);
    // So a status change (SENT → DELIVERED) may be a HOT update, writing no index entry.
    const indexes: Array<{ indexdef: string }> = await m.db.query(`SELECT indexdef FROM pg_indexes WHERE tablename = 'messages'`);
    expect(indexes.filter((i) => /\bstatus\b/.test(i.indexdef))).toEqual([]);
  });

  it('send_email and reply_to_thread take sendAt too; the idempotency key counts sendAt among the arguments', async () => {
    const address = `partner-${Date.now()}@example.org`;
    const sendAt = inMs(60 * 60 * 1000);
    const email = await toolOk(m, s.apiKey, 'send_email', { to: address, subject: 'Later', body: 'see you', sendAt, idempotencyKey: `sched-${address}` });
    expect(email.message).toMatchObject({ channel: 'EMAIL', status: 'SCHEDULED', sendAt: new Date(sendAt).toISOString() });
    const again = await toolOk(m, s.apiKey, 'send_email', { to: address, subject: 'Later', body: 'see you', sendAt, idempotencyKey: `sched-${address}` });
    expect(again).toEqual({ message: expect.objectContaining({ id: email.message.id }), replayed: true });
    expect(
      await toolError(m, s.apiKey, 'send_email', {
        to: address,
        subject: 'Later',
        body: 'see you',
        sendAt: inMs(2 * 60 * 60 * 1000),
        idempotencyKey: `sched-${address}`,
      }),
    ).toMatch(/was used in the last 24 hours with other arguments/);

    // A due job run early (a clock ahead of the database's) releases nothing and fails, so Bull runs it again later.
    await expect(m.app.get(ScheduledSends).release(email.message.id)).rejects.toThrow(/is not due yet by the database's clock/);
    expect((await statusOf(email.message.id)).status).toBe('SCHEDULED');

    const reply = await toolOk(m, s.apiKey, 'reply_to_thread', { threadId: email.message.threadId, body: 'and again', sendAt });
    expect(reply.message).toMatchObject({ status: 'SCHEDULED', sendAt: new Date(sendAt).toISOString() });
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE thread_id = $1 AND status = 'SCHEDULED'`, [email.message.threadId]);
    expect(count).toBe(2);
  });

  it('a repeat of a scheduled send whose sendAt has passed since (a lost answer, retried later) answers the first message, sends nothing more', async () => {
    const to = partnerPhone();
    const args = { to, body: 'Soon.', sendAt: inMs(2000), idempotencyKey: `late-${to}` };
    const first = await toolOk(m, s.apiKey, 'send_sms', args);
    expect(first).toEqual({ message: expect.objectContaining({ status: 'SCHEDULED' }), replayed: false });
    await waitUntil(async () => (await statusOf(first.message.id)).status === 'SENT', 'the scheduled SMS to be SENT', { timeoutMs: 20_000 });
    const again = await toolOk(m, s.apiKey, 'send_sms', args);
    expect(again).toEqual({ message: expect.objectContaining({ id: first.message.id, status: 'SENT' }), replayed: true });
    expect(m.carried.filter((x) => x.to === to)).toHaveLength(1);
    // A new send (a new key) with that sendAt is still refused as past.
    expect(await toolError(m, s.apiKey, 'send_sms', { ...args, idempotencyKey: `late-new-${to}` })).toMatch(/sendAt .* is not in the future/);
  });

  it('cancel_scheduled_message cancels a SCHEDULED message (never sent), and refuses any other status as a conflict', async () => {
    const to = partnerPhone();
    const hook = await Hook.register(m, s.apiKey, { events: ['message.status_changed'] });
    const { message } = await toolOk(m, s.apiKey, 'send_sms', { to, body: 'never mind', sendAt: inMs(2500) });
    const cancelled = await toolOk(m, s.apiKey, 'cancel_scheduled_message', { messageId: message.id });
    expect(cancelled.message).toMatchObject({ id: message.id, status: 'CANCELED' });
    expect(await toolError(m, s.apiKey, 'cancel_scheduled_message', { messageId: message.id })).toBe(
      `message ${message.id} is CANCELED, not SCHEDULED: only a scheduled message that has not gone out can be cancelled`,
    );
    const sent = (await toolOk(m, s.apiKey, 'send_sms', { to, body: 'now' })).message;
    await waitUntil(async () => (await statusOf(sent.id)).status === 'SENT', 'the plain SMS to be SENT');
    expect(await toolError(m, s.apiKey, 'cancel_scheduled_message', { messageId: sent.id })).toMatch(/is SENT, not SCHEDULED/);
    // Past its time, a sweep still sends nothing.
    await waitUntil(() => Date.now() > new Date(message.createdAt).getTime() + 3000, 'the cancelled time to pass', { timeoutMs: 10_000 });
    await m.app.get(ScheduledSends).releaseDue();
    expect(await statusOf(message.id)).toEqual({ status: 'CANCELED', error: null });
    expect(m.carried.filter((x) => x.to === to).map((x) => x.body)).toEqual(['now']);
    expect(await movesOf(hook, message.id, 2)).toEqual([
      [null, 'SCHEDULED'],
      ['SCHEDULED', 'CANCELED'],
    ]);

    // Another org's message is not found.
    const other = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const theirs = (await toolOk(m, other.apiKey, 'send_sms', { to: partnerPhone(), body: 'x', sendAt: inMs(60_000) })).message;
    expect(await toolError(m, s.apiKey, 'cancel_scheduled_message', { messageId: theirs.id })).toBe(`message ${theirs.id} not found`);
  });

  it('refuses a past, unclear or too far sendAt, naming sendAt, and sends nothing', async () => {
    const to = partnerPhone();
    expect(await toolError(m, s.apiKey, 'send_sms', { to, body: 'x', sendAt: inMs(-60_000) })).toMatch(/^sendAt .* is not in the future/);
    expect(await toolError(m, s.apiKey, 'send_sms', { to, body: 'x', sendAt: inMs(31 * 24 * 60 * 60 * 1000) })).toMatch(
      /^sendAt .* is more than 30 days ahead/,
    );
    const unclear = await toolError(m, s.apiKey, 'send_sms', { to, body: 'x', sendAt: '2099-01-01T09:00:00' });
    expect(unclear).toMatch(/sendAt/);
    expect(await toolError(m, s.apiKey, 'send_sms', { to, body: 'x', sendAt: 'tomorrow' })).toMatch(/sendAt/);
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE to_value = $1`, [to]);
    expect(count).toBe(0);
  });

  it("asks the send gate again when due: a recipient that became one of the org's own lines is FAILED with the rule, never sent", async () => {
    const to = partnerPhone();
    const hook = await Hook.register(m, s.apiKey, { events: ['message.status_changed'] });
    const { message } = await toolOk(m, s.apiKey, 'send_sms', { to, body: 'loop?', sendAt: inMs(2500) });
    const line = await m.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'PHONE_NUMBER', address: to });
    expect(line.status).toBe(201);
    const failed = await waitUntil(
      async () => {
        const row = await statusOf(message.id);
        return row.status !== 'SCHEDULED' && row;
      },
      'the scheduled SMS to come due',
      { timeoutMs: 20_000 },
    );
    expect(failed.status).toBe('FAILED');
    expect(failed.error).toMatch(/is one of this org's own lines.*\(rule own_line\)$/);
    expect(m.carried.filter((x) => x.to === to)).toHaveLength(0);
    const moved = await waitUntil(
      () => hook.events('message.status_changed').find((e) => e.data.message.id === message.id && e.data.currentStatus === 'FAILED'),
      'message.status_changed to FAILED',
    );
    expect(moved.data).toMatchObject({ previousStatus: 'SCHEDULED', error: failed.error });
  });

  it('the thread page shows a scheduled message with its time and a Cancel button that cancels it (CSRF form, as the other thread forms)', async () => {
    const to = partnerPhone();
    const sendAt = inMs(60 * 60 * 1000);
    const { message } = await toolOk(m, s.apiKey, 'send_sms', { to, body: 'See you tomorrow', sendAt });
    const browser = await signInBrowser(m, s.userId);
    const path = `/conversations/${message.threadId}`;
    const page = await m.http().get(path).set('Cookie', browser.cookie).expect(200);
    expect(page.text).toContain('Scheduled for');
    expect(page.text).toContain(`<time datetime="${new Date(sendAt).toISOString().slice(0, 16)}Z"`);
    expect(page.text).toContain(`action="${path}/messages/${message.id}/cancel"`);
    expect(page.text).toContain('Cancel sending');

    // Without the CSRF token nothing changes.
    await m.http().post(`${path}/messages/${message.id}/cancel`).set('Cookie', browser.cookie).type('form').send({}).expect(403);
    expect((await statusOf(message.id)).status).toBe('SCHEDULED');

    const done = await postForm(m, browser, `${path}/messages/${message.id}/cancel`).expect(303);
    expect(done.headers.location).toMatch(new RegExp(`^${path}\\?done=canceled`));
    expect((await statusOf(message.id)).status).toBe('CANCELED');
    const after = await m.http().get(done.headers.location).set('Cookie', browser.cookie).expect(200);
    expect(after.text).toContain('The scheduled message was canceled; it will not be sent.');
    expect(after.text).not.toContain('Cancel sending');
    expect(after.text).toContain('canceled, never sent');

    // Again: a conflict shown above the page's forms, nothing else changes.
    const again = await postForm(m, browser, `${path}/messages/${message.id}/cancel`).expect(409);
    expect(again.text).toContain(`message ${message.id} is CANCELED, not SCHEDULED`);
    // Another org's person finds no such message.
    const other = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const theirs = (await toolOk(m, other.apiKey, 'send_sms', { to: partnerPhone(), body: 'x', sendAt: inMs(60_000) })).message;
    await postForm(m, browser, `${path}/messages/${theirs.id}/cancel`).expect(404);
    await postForm(m, browser, `${path}/messages/not-a-uuid/cancel`).expect(400);
    expect((await statusOf(theirs.id)).status).toBe('SCHEDULED');
  });

  it('a send scheduled by a key revoked before its time is not sent: FAILED naming the rule credential_access', async () => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'scheduler', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    const to = partnerPhone();
    const { message } = await toolOk(m, key.key, 'send_sms', { to, body: 'sent by a key that is gone', sendAt: inMs(2000) });
    expect(message).toMatchObject({ status: 'SCHEDULED' });
    await m.admin.delete(`/admin/api-keys/${key.id}`).expect(204);

    const failed = await waitUntil(
      async () => {
        const row = await statusOf(message.id);
        return row.status !== 'SCHEDULED' && row;
      },
      'the scheduled SMS to come due',
      { timeoutMs: 20_000 },
    );
    expect(failed).toEqual({
      status: 'FAILED',
      error:
        'the API key or app that scheduled this message may no longer send on its line (revoked, its send permission or the line taken away), so it is not sent (rule credential_access)',
    });
    expect(m.carried.filter((x) => x.to === to)).toHaveLength(0);
  });

  it('works alike in the 2026-07-28 era: schedule and cancel', async () => {
    const to = partnerPhone();
    const call = async (name: string, args: Record<string, unknown>) => {
      const res = await modernRpc(m, s.apiKey, 'tools/call', { name, arguments: args });
      expect(res.status).toBe(200);
      return res.body.result;
    };
    const scheduled = await call('send_sms', { to, body: 'modern', sendAt: inMs(60_000) });
    expect(scheduled.isError).toBeFalsy();
    expect(scheduled.structuredContent.message).toMatchObject({ status: 'SCHEDULED' });
    const cancelled = await call('cancel_scheduled_message', { messageId: scheduled.structuredContent.message.id });
    expect(cancelled.structuredContent.message).toMatchObject({ status: 'CANCELED' });
    const refused = await call('send_sms', { to, body: 'modern', sendAt: inMs(-1000) });
    expect(refused.isError).toBe(true);
    expect(refused.content[0].text).toMatch(/^sendAt .* is not in the future/);
    // The classic era's answer to the same refusal.
    const classic = await callTool(m, s.apiKey, 'send_sms', { to, body: 'classic', sendAt: inMs(-1000) });
    expect(classic.isError).toBe(true);
  });
});
