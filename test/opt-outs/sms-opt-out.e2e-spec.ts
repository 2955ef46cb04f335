import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { getQueueToken } from '@nestjs/bull';
import { Queue } from 'bull';
import { OUTBOUND_QUEUE, OutboundService } from '../../src/conversations/outbound/outbound.service';
import { toolError, toolOk } from '../support/mcp';
import { modernRpc } from '../support/mcp-modern';
import { createMessagingTestApp, Hook, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session, uniquePhone } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
import { TwilioStandIn, twilioSignature } from '../support/twilio';
import { waitUntil } from '../support/wait';
import { postForm, signInBrowser } from '../support/web';

const ACCOUNT = `AC${randomBytes(16).toString('hex')}`;
const TOKEN = randomBytes(16).toString('hex');
/** PUBLIC_BASE_URL of the test environment: what Twilio signs over. */
const PUBLIC = 'http://127.0.0.1:3000';

/** The refusal of the rule opted_out, as every send path words it. */
const REFUSAL = (number: string, keyword: string) =>
  new RegExp(
    `^\\${number} texted ${keyword} to this line on \\d{4}-\\d{2}-\\d{2}T[\\d:.]+Z and has opted out of its SMS, so nothing is sent to it \\(rule opted_out\\); the number can text START to opt back in$`,
  );

/**
 * SMS opt-out (docs/opt-out.md): STOP, START and HELP from an inbound SMS on the carrier-neutral
 * route (the service answers them) and from a signed Twilio inbound (Twilio answers them: the
 * service does not, so the sender is not answered twice); every send path refuses an opted-out
 * number; sms.opted_out and sms.opted_in reach a webhook.
 */
describe('SMS opt-out: STOP, START and HELP', () => {
  let twilio: TwilioStandIn;
  let m: MessagingTestApp;
  let s: Session;
  let line: { id: string; address: string };
  let twilioLine: { id: string; address: string };
  let hook: Hook;

  beforeAll(async () => {
    twilio = await new TwilioStandIn({ [ACCOUNT]: TOKEN }).start();
    m = await createMessagingTestApp({ TWILIO_API_BASE_URL: twilio.baseUrl });
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    [line, twilioLine] = s.lines;
    twilio.own(ACCOUNT, twilioLine.address);
    expect((await m.admin.put(`/admin/lines/${twilioLine.id}/sms-provider`, { provider: 'twilio', accountSid: ACCOUNT, authToken: TOKEN })).status).toBe(200);
    hook = await Hook.register(m, s.apiKey, { events: ['sms.opted_out', 'sms.opted_in'], mode: 'verbose' });
  });
  afterAll(async () => {
    await m?.close();
    await twilio?.close();
  });

  /** Waits until the carrier was handed an SMS to `to` with this body. */
  const carriedTo = (to: string, body: RegExp) =>
    waitUntil(() => m.carried.find((c) => c.to === to && body.test(c.body)), `the carrier to get an SMS to ${to} matching ${body}`);

  /** Waits for the event of `type` about `number`. */
  const eventFor = (type: string, number: string) => waitUntil(() => hook.events(type).find((e) => e.data.optOut.number === number), `${type} for ${number}`);

  /** send_sms in the 2026-07-28 era: the tool error's text. */
  async function modernToolError(name: string, args: Record<string, unknown>): Promise<string> {
    const res = await modernRpc(m, s.apiKey, 'tools/call', { name, arguments: args });
    expect(res.status).toBe(200);
    expect(res.body.result.isError).toBe(true);
    return res.body.result.content[0].text;
  }

  it('STOP on the carrier route: the message is stored, the number opted out (sms.opted_out), one confirmation goes out past the rule, and every send path refuses it', async () => {
    const partner = partnerPhone();
    const { threadId } = await inboundSms(m, line.address, partner, 'Hi, is the shop open?');
    const stop = await inboundSms(m, line.address, partner, '  Stop ');
    expect(stop.threadId).toBe(threadId);

    const [row] = await m.db.query(`SELECT opted_out, keyword, message_id FROM sms_opt_outs WHERE line_id = $1 AND number = $2`, [line.id, partner]);
    expect(row).toEqual({ opted_out: true, keyword: 'STOP', message_id: stop.messageId });
    // The keyword is a message of the thread as any other.
    const thread = await toolOk(m, s.apiKey, 'get_thread', { threadId });
    expect(thread.messages.map((x: { body: string }) => x.body)).toContain('  Stop ');

    // The one message allowed through: the confirmation, sent by the service itself, on the thread.
    const confirmation = await carriedTo(partner, /unsubscribed/);
    expect(confirmation).toEqual({ from: line.address, to: partner, body: expect.stringMatching(/Reply START to resubscribe\.$/) });
    const [reply] = await m.db.query(
      `SELECT thread_id, direction, sent_by_user_id, sent_by_key_id FROM messages WHERE to_value = $1 AND direction = 'OUTBOUND'`,
      [partner],
    );
    expect(reply).toEqual({ thread_id: threadId, direction: 'OUTBOUND', sent_by_user_id: null, sent_by_key_id: null });

    const event = await eventFor('sms.opted_out', partner);
    expect(event.data).toEqual({
      optOut: {
        lineId: line.id,
        lineNumber: line.address,
        number: partner,
        optedOut: true,
        keyword: 'STOP',
        changedAt: expect.any(String),
        threadId,
        messageId: stop.messageId,
      },
    });

    // send_sms and reply_to_thread, in both protocol eras, to the number and on the thread.
    const before = m.carried.length;
    expect(await toolError(m, s.apiKey, 'send_sms', { to: partner, lineId: line.id, body: 'We are open!' })).toMatch(REFUSAL(partner, 'STOP'));
    expect(await toolError(m, s.apiKey, 'send_sms', { threadId, body: 'We are open!' })).toMatch(REFUSAL(partner, 'STOP'));
    expect(await toolError(m, s.apiKey, 'reply_to_thread', { threadId, body: 'We are open!' })).toMatch(REFUSAL(partner, 'STOP'));
    expect(await modernToolError('send_sms', { to: partner, lineId: line.id, body: 'We are open!' })).toMatch(REFUSAL(partner, 'STOP'));
    expect(await modernToolError('reply_to_thread', { threadId, body: 'We are open!' })).toMatch(REFUSAL(partner, 'STOP'));

    // An agent's turn on the REST route: 403 naming the rule.
    const agent = (await m.admin.post(`/admin/lines/${line.id}/agents`, { name: 'Shop bot', mode: 'AUTO' }).expect(201)).body;
    const turn = await m.http().post(`/api/agents/${agent.id}/turns`).set('Authorization', `Bearer ${s.apiKey}`).send({ threadId, body: 'We are open!' });
    expect(turn.status).toBe(403);
    expect(turn.body).toMatchObject({ statusCode: 403, field: 'to', message: expect.stringMatching(REFUSAL(partner, 'STOP')) });
    expect(turn.headers['retry-after']).toBeUndefined();

    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE to_value = $1 AND direction = 'OUTBOUND'`, [partner]);
    expect(count).toBe(1); // the confirmation only
    expect(m.carried.length).toBe(before);

    // The same number on another line of the org is not opted out there.
    expect((await toolOk(m, s.apiKey, 'send_sms', { to: partner, lineId: twilioLine.id, body: 'From the other shop' })).message.status).toBe('QUEUED');

    // A second STOP changes nothing: no event, no second confirmation.
    await inboundSms(m, line.address, partner, 'STOPALL');
    const [again] = await m.db.query(`SELECT keyword FROM sms_opt_outs WHERE line_id = $1 AND number = $2`, [line.id, partner]);
    expect(again.keyword).toBe('STOP');
  });

  it('HELP is answered with the org help text (also to an opted-out number); START opts back in (sms.opted_in) and sends pass again', async () => {
    const partner = partnerPhone();
    const { threadId } = await inboundSms(m, line.address, partner, 'END');
    await carriedTo(partner, /unsubscribed/);

    // The default names the org; the org's own text replaces it (admin API).
    const initial = await m.admin.get(`/admin/orgs/${s.orgId}/sms-help-text`);
    expect(initial.body).toMatchObject({ custom: false, maxChars: 320, text: expect.stringContaining('Reply STOP to stop messages') });
    expect(initial.body.text).toBe(initial.body.defaultText);
    const tooLong = await m.admin.put(`/admin/orgs/${s.orgId}/sms-help-text`, { helpText: 'x'.repeat(321) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toMatchObject({ field: 'helpText' });
    for (const keyword of [' help ', 'Stop', 'START', 'info']) {
      // An answer that is itself a keyword would loop between two lines answering each other's HELP.
      const refused = await m.admin.put(`/admin/orgs/${s.orgId}/sms-help-text`, { helpText: keyword });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ field: 'helpText', message: expect.stringContaining(`keyword ${keyword.trim().toUpperCase()}`) });
    }
    expect((await m.admin.get(`/admin/orgs/${s.orgId}/sms-help-text`)).body).toMatchObject({ custom: false });
    const set = await m.admin.put(`/admin/orgs/${s.orgId}/sms-help-text`, { helpText: 'Corner Shop: call +1 555 010 0000. Reply STOP to opt out.' });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ custom: true, text: 'Corner Shop: call +1 555 010 0000. Reply STOP to opt out.' });

    await inboundSms(m, line.address, partner, 'help');
    await carriedTo(partner, /^Corner Shop: call \+1 555 010 0000\. Reply STOP to opt out\.$/);

    // Still opted out: HELP changes nothing.
    expect(await toolError(m, s.apiKey, 'reply_to_thread', { threadId, body: 'hello?' })).toMatch(REFUSAL(partner, 'END'));

    const start = await inboundSms(m, line.address, partner, 'START');
    await carriedTo(partner, /subscribed again/);
    const optedIn = await eventFor('sms.opted_in', partner);
    expect(optedIn.data.optOut).toMatchObject({ lineId: line.id, number: partner, optedOut: false, keyword: 'START', threadId, messageId: start.messageId });
    const [row] = await m.db.query(`SELECT opted_out, keyword FROM sms_opt_outs WHERE line_id = $1 AND number = $2`, [line.id, partner]);
    expect(row).toEqual({ opted_out: false, keyword: 'START' });

    const { message } = await toolOk(m, s.apiKey, 'reply_to_thread', { threadId, body: 'Welcome back' });
    expect(message.status).toBe('QUEUED');
    await carriedTo(partner, /^Welcome back$/);

    // A plain "yes" from a number that is not opted out is an ordinary message: no answer.
    const carried = m.carried.filter((c) => c.to === partner).length;
    await inboundSms(m, line.address, partner, 'Yes');
    await inboundSms(m, line.address, partner, 'See you');
    expect(m.carried.filter((c) => c.to === partner).length).toBe(carried);

    expect((await m.admin.delete(`/admin/orgs/${s.orgId}/sms-help-text`)).body).toMatchObject({ custom: false });
  });

  it('a line removed and its number added again remembers who texted STOP (opt-outs bind the org and the number of the line); START on the new line clears it', async () => {
    const partner = partnerPhone();
    const addLine = async (address: string): Promise<{ id: string; address: string }> => {
      const added = (await m.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'PHONE_NUMBER', address }).expect(201)).body;
      await m.admin.put(`/admin/lines/${added.id}/members/${s.userId}`).expect(200);
      return added;
    };
    const old = await addLine(uniquePhone());
    await inboundSms(m, old.address, partner, 'STOP');
    await m.admin.delete(`/admin/lines/${old.id}`).expect(204);
    const again = await addLine(old.address);
    expect(again.id).not.toBe(old.id);
    expect(await toolError(m, s.apiKey, 'send_sms', { to: partner, lineId: again.id, body: 'We are back!' })).toMatch(REFUSAL(partner, 'STOP'));
    await inboundSms(m, again.address, partner, 'START');
    const sent = await toolOk(m, s.apiKey, 'send_sms', { to: partner, lineId: again.id, body: 'Welcome back!' });
    expect(sent.message).toMatchObject({ status: expect.stringMatching(/QUEUED|SENT/) });
  });

  it('a message QUEUED before the STOP and handed off after it (a retry, the sweep) is not sent: FAILED with the refusal; the STOP confirmation still goes', async () => {
    const partner = partnerPhone();
    const queue = m.app.get<Queue>(getQueueToken(OUTBOUND_QUEUE));
    await queue.pause(true); // this worker takes no hand-off: the message stays QUEUED, as before a retry
    let queued: string;
    try {
      queued = (await toolOk(m, s.apiKey, 'send_sms', { to: partner, lineId: line.id, body: 'Before the STOP.' })).message.id;
      await inboundSms(m, line.address, partner, 'STOP');
      const [row] = await m.db.query(`SELECT status FROM messages WHERE id = $1`, [queued]);
      expect(row.status).toBe('QUEUED');
    } finally {
      await queue.resume(true);
    }
    await carriedTo(partner, /unsubscribed/);
    const failed = await waitUntil(async () => {
      const [row] = await m.db.query(`SELECT status, error FROM messages WHERE id = $1`, [queued]);
      return row.status === 'FAILED' && row;
    }, 'the queued message to be FAILED');
    expect(failed.error).toMatch(REFUSAL(partner, 'STOP'));
    await m.app.get(OutboundService).handOff(queued, 2); // a later attempt changes nothing
    expect(m.carried.filter((c) => c.to === partner).map((c) => c.body)).toEqual([expect.stringMatching(/unsubscribed/)]);
  });

  it('a repeat of the STOP message (the carrier retrying) changes nothing more and is not answered twice', async () => {
    const partner = partnerPhone();
    const providerMessageId = `stop-${randomBytes(4).toString('hex')}`;
    const post = () =>
      m
        .http()
        .post('/ingest/sms/inbound')
        .set('Authorization', `Bearer ${INGEST_TOKEN}`)
        .send({ to: line.address, from: partner, body: 'STOP', providerMessageId });
    const first = await post();
    expect(first.status).toBe(201);
    await carriedTo(partner, /unsubscribed/);
    expect((await post()).status).toBe(200);
    await eventFor('sms.opted_out', partner);
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE to_value = $1 AND direction = 'OUTBOUND'`, [partner]);
    expect(count).toBe(1);
    expect(hook.events('sms.opted_out').filter((e) => e.data.optOut.number === partner)).toHaveLength(1);
  });

  it('a draft written before the STOP is refused when a person approves it after, and stays awaiting approval', async () => {
    const partner = partnerPhone();
    const { threadId } = await inboundSms(m, line.address, partner, 'Can I book for Friday?');
    const agent = (await m.admin.post(`/admin/lines/${line.id}/agents`, { name: 'Draft bot', mode: 'DRAFT' }).expect(201)).body;
    const drafted = await m.http().post(`/api/agents/${agent.id}/turns`).set('Authorization', `Bearer ${s.apiKey}`).send({ threadId, body: 'Friday works!' });
    expect(drafted.status).toBe(201);
    const turnId = drafted.body.turn.id;

    await inboundSms(m, line.address, partner, 'cancel');
    expect(await toolError(m, s.apiKey, 'approve_agent_turn', { turnId })).toMatch(REFUSAL(partner, 'CANCEL'));
    const approve = await m.http().post(`/api/agent-turns/${turnId}/approve`).set('Authorization', `Bearer ${s.apiKey}`).send();
    expect(approve.status).toBe(403);
    expect(approve.body.message).toMatch(REFUSAL(partner, 'CANCEL'));
    const [turn] = await m.db.query(`SELECT status, message_id FROM agent_turns WHERE id = $1`, [turnId]);
    expect(turn).toEqual({ status: 'AWAITING_APPROVAL', message_id: null });
  });

  it('get_thread, list_contacts and the thread page show the opt-out; the web reply form is disabled, and a reply posted anyway is refused', async () => {
    const partner = partnerPhone();
    const { threadId } = await inboundSms(m, line.address, partner, 'What time do you close?');
    const clear = await toolOk(m, s.apiKey, 'get_thread', { threadId });
    expect(clear.optedOut).toBeNull();
    const { contact } = await toolOk(m, s.apiKey, 'create_contact', { displayName: 'Quitting Quinn', identities: [{ kind: 'PHONE', value: partner }] });
    expect(contact.optedOut).toEqual([]);

    await inboundSms(m, line.address, partner, 'QUIT');
    const thread = await toolOk(m, s.apiKey, 'get_thread', { threadId });
    expect(thread.optedOut).toEqual({ number: partner, lineId: line.id, keyword: 'QUIT', since: expect.stringMatching(/Z$/) });
    const listed = (await toolOk(m, s.apiKey, 'list_contacts', { query: 'Quitting Quinn' })).contacts;
    expect(listed).toEqual([expect.objectContaining({ id: contact.id, optedOut: [thread.optedOut] })]);

    // The page says so and disables the form.
    const browser = await signInBrowser(m, s.userId);
    const page = await m.http().get(`/conversations/${threadId}`).set('Cookie', browser.cookie).expect(200);
    expect(page.text).toContain(`<strong>${partner} has opted out.</strong> They texted QUIT to this line on`);
    expect(page.text).toMatch(/<textarea id="body" name="body" rows="5" required disabled/);
    // A reply posted anyway (a page opened before the STOP) is refused above the form, with the rule's text.
    const refused = await postForm(m, browser, `/conversations/${threadId}/reply`, { body: 'Open till 9', idempotencyKey: randomBytes(8).toString('hex') });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain(`texted QUIT to this line on`);
    expect(refused.text).toContain('(rule opted_out)');
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE thread_id = $1 AND body = 'Open till 9'`, [threadId]);
    expect(count).toBe(0);
  });

  it('Settings → SMS opt-out: an OWNER changes the HELP text, a MEMBER reads it and may not change it', async () => {
    const owner = await signInBrowser(m, s.userId);
    const page = await m.http().get('/settings/sms-opt-out').set('Cookie', owner.cookie).expect(200);
    expect(page.text).toContain('Answer to HELP');
    expect(page.text).toContain('name="helpText"');
    const tooLong = await postForm(m, owner, '/settings/sms-opt-out', { helpText: 'y'.repeat(321) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toContain('helpText is longer than 320 characters');
    const keyword = await postForm(m, owner, '/settings/sms-opt-out', { helpText: 'HELP' });
    expect(keyword.status).toBe(400);
    expect(keyword.text).toContain('helpText may not be the SMS keyword HELP alone');
    const saved = await postForm(m, owner, '/settings/sms-opt-out', { helpText: 'Corner Shop: we answer 9-6 at +1 555 010 0000.' });
    expect(saved.status).toBe(303);
    expect((await m.admin.get(`/admin/orgs/${s.orgId}/sms-help-text`)).body).toMatchObject({
      custom: true,
      text: 'Corner Shop: we answer 9-6 at +1 555 010 0000.',
    });

    const member = await createSession(m.admin, { orgId: s.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const memberBrowser = await signInBrowser(m, member.userId);
    const read = await m.http().get('/settings/sms-opt-out').set('Cookie', memberBrowser.cookie).expect(200);
    expect(read.text).toContain('Corner Shop: we answer 9-6 at +1 555 010 0000.');
    expect(read.text).not.toContain('name="helpText"');
    expect((await postForm(m, memberBrowser, '/settings/sms-opt-out', { helpText: 'mine now' })).status).toBe(403);
    await m.admin.delete(`/admin/orgs/${s.orgId}/sms-help-text`).expect(200);
  });

  describe('on a line connected to Twilio', () => {
    async function twilioInbound(from: string, body: string) {
      const sid = `SM${randomBytes(16).toString('hex')}`;
      const params = { MessageSid: sid, SmsSid: sid, AccountSid: ACCOUNT, From: from, To: twilioLine.address, Body: body, NumMedia: '0' };
      const path = '/ingest/twilio/sms';
      const response = await request(`${m.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}${path}`, params) },
        body: new URLSearchParams(params).toString(),
      });
      expect(response.statusCode).toBe(200);
      expect(await response.body.text()).toBe('<?xml version="1.0" encoding="UTF-8"?><Response></Response>');
      const [message] = await m.db.query(`SELECT id, thread_id FROM messages WHERE provider_message_id = $1`, [sid]);
      return message as { id: string; thread_id: string };
    }

    it('records STOP and START (with their events) but answers nothing: Twilio answers the sender itself', async () => {
      const partner = partnerPhone();
      const stop = await twilioInbound(partner, 'unsubscribe');
      const [row] = await m.db.query(`SELECT opted_out, keyword FROM sms_opt_outs WHERE line_id = $1 AND number = $2`, [twilioLine.id, partner]);
      expect(row).toEqual({ opted_out: true, keyword: 'UNSUBSCRIBE' });
      const event = await eventFor('sms.opted_out', partner);
      expect(event.data.optOut).toMatchObject({ lineId: twilioLine.id, keyword: 'UNSUBSCRIBE', messageId: stop.id });

      // Refused here, before Twilio would answer 21610.
      expect(await toolError(m, s.apiKey, 'reply_to_thread', { threadId: stop.thread_id, body: 'wait!' })).toMatch(REFUSAL(partner, 'UNSUBSCRIBE'));
      await twilioInbound(partner, 'HELP');
      await twilioInbound(partner, 'START');
      await eventFor('sms.opted_in', partner);
      const { message } = await toolOk(m, s.apiKey, 'reply_to_thread', { threadId: stop.thread_id, body: 'Welcome back' });
      await waitUntil(() => twilio.sent.find((x) => x.to === partner), 'the reply to go through Twilio');
      // Only the person's reply went out: no answer of the service to STOP, HELP or START.
      expect(twilio.sendAttempts.filter((to) => to === partner)).toHaveLength(1);
      expect(twilio.sent.filter((x) => x.to === partner).map((x) => x.body)).toEqual(['Welcome back']);
      const outbound = await m.db.query(`SELECT id FROM messages WHERE to_value = $1 AND direction = 'OUTBOUND'`, [partner]);
      expect(outbound).toEqual([{ id: message.id }]);
    });
  });
});
