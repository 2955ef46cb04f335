import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { SecretBox } from '../../../src/common/secret-box';
import { RawConnection } from '../../support/raw-http';
import { toolOk } from '../../support/mcp';
import { createMessagingTestApp, extractionIdle, Hook, MessagingTestApp, partnerPhone } from '../../support/messaging-hooks';
import { createSession, Session } from '../../support/session';
import { TwilioStandIn, twilioSignature } from '../../support/twilio';
import { waitUntil } from '../../support/wait';

const ACCOUNT = `AC${randomBytes(16).toString('hex')}`;
const TOKEN = randomBytes(16).toString('hex');
const OTHER_ACCOUNT = `AC${randomBytes(16).toString('hex')}`;
const OTHER_TOKEN = randomBytes(16).toString('hex');
/** PUBLIC_BASE_URL of the test environment: what Twilio is told, and signs over. */
const PUBLIC = 'http://127.0.0.1:3000';

/**
 * Phone lines connected to Twilio (docs/twilio.md) against a local stand-in of Twilio's REST API
 * (basic auth, form fields, media behind a redirect to another origin) that signs its callbacks as
 * Twilio documents: connecting checks the credentials, inbound messages and status callbacks are
 * taken only when signed with the line's account token, and send_sms goes through the Messages API.
 */
describe('Twilio SMS lines', () => {
  let twilio: TwilioStandIn;
  let m: MessagingTestApp;
  let s: Session;
  let phone: { id: string; address: string };
  let hook: Hook;

  beforeAll(async () => {
    twilio = await new TwilioStandIn({ [ACCOUNT]: TOKEN, [OTHER_ACCOUNT]: OTHER_TOKEN }).start();
    m = await createMessagingTestApp({ TWILIO_API_BASE_URL: twilio.baseUrl });
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    phone = s.lines[0];
    twilio.own(ACCOUNT, phone.address);
    hook = await Hook.register(m, s.apiKey, {
      events: ['message.received', 'message.sent', 'message.status_changed', 'attachment.extracted'],
      mode: 'verbose',
    });
  });
  afterAll(async () => {
    await m?.close();
    await twilio?.close();
  });

  const connect = (body: object, lineId = phone.id) => m.admin.put(`/admin/lines/${lineId}/sms-provider`, body);

  /** POSTs a form to the service as Twilio would: signed with `token` over PUBLIC_BASE_URL + path. */
  async function twilioPost(path: string, params: Record<string, string>, token: string | null = TOKEN, headers: Record<string, string> = {}) {
    const response = await request(`${m.baseUrl}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(token === null ? {} : { 'x-twilio-signature': twilioSignature(token, `${PUBLIC}${path}`, params) }),
        ...headers,
      },
      body: new URLSearchParams(params).toString(),
    });
    const text = await response.body.text();
    return { status: response.statusCode, type: String(response.headers['content-type']), text, json: () => JSON.parse(text) };
  }

  function inbound(over: Record<string, string> = {}): Record<string, string> {
    const sid = `SM${randomBytes(16).toString('hex')}`;
    return {
      ToCountry: 'US',
      SmsMessageSid: sid,
      NumMedia: '0',
      SmsSid: sid,
      SmsStatus: 'received',
      Body: 'Hello from Twilio',
      To: phone.address,
      NumSegments: '1',
      MessageSid: sid,
      AccountSid: ACCOUNT,
      From: partnerPhone(),
      ApiVersion: '2010-04-01',
      ...over,
    };
  }

  const messagesWith = async (sid: string) =>
    (await m.db.query(`SELECT id, body, direction FROM messages WHERE provider_message_id = $1`, [sid])) as Array<{ id: string; body: string }>;

  it("signs requests as Twilio's webhook security page's worked example does (the stand-in's signer)", () => {
    const params = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
    expect(twilioSignature('12345', 'https://mycompany.com/myapp.php?foo=1&bar=2', params)).toBe('0/KCTR6DLpKmkAf8muzZqo1nDgQ=');
  });

  describe('PUT /admin/lines/:lineId/sms-provider', () => {
    it('refuses credentials the provider refuses (422 naming authToken) and stores nothing', async () => {
      const res = await connect({ provider: 'twilio', accountSid: ACCOUNT, authToken: 'wrong-token' });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ field: 'authToken' });
      expect(res.body.message).toMatch(/refused the Account SID and auth token/);
      expect(await m.db.query(`SELECT 1 FROM sms_providers WHERE line_id = $1`, [phone.id])).toEqual([]);
      expect(twilio.requests.at(-1)).toMatchObject({ method: 'GET', path: `/2010-04-01/Accounts/${ACCOUNT}.json`, authorized: false });
    });

    it('names bad fields (400) and refuses a line that is not a phone number', async () => {
      expect((await connect({ provider: 'plivo', accountSid: ACCOUNT, authToken: TOKEN })).body).toMatchObject({ statusCode: 400, field: 'provider' });
      expect((await connect({ provider: 'twilio', accountSid: 'AC 1', authToken: TOKEN })).body).toMatchObject({ statusCode: 400, field: 'accountSid' });
      expect((await connect({ provider: 'twilio', accountSid: ACCOUNT })).body).toMatchObject({ statusCode: 400, field: 'authToken' });
      const email = await connect({ provider: 'twilio', accountSid: ACCOUNT, authToken: TOKEN }, s.lines[1].id);
      expect(email.body).toMatchObject({ statusCode: 400, field: 'lineId' });
    });

    it("refuses a number that is not one of the account's (422 naming accountSid)", async () => {
      const other = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      const res = await connect({ provider: 'twilio', accountSid: ACCOUNT, authToken: TOKEN }, other.lines[0].id);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({
        field: 'accountSid',
        message: `${other.lines[0].address} is not a phone number of the SMS provider account ${ACCOUNT}`,
      });
      expect(await m.db.query(`SELECT 1 FROM sms_providers WHERE line_id = $1`, [other.lines[0].id])).toEqual([]);
    });

    it('connects with working credentials: the token sealed, never shown, and the console URLs given', async () => {
      const res = await connect({ provider: 'twilio', accountSid: ACCOUNT, authToken: TOKEN });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        lineId: phone.id,
        phoneNumber: phone.address,
        provider: 'twilio',
        accountSid: ACCOUNT,
        inboundUrl: `${PUBLIC}/ingest/twilio/sms`,
        statusCallbackUrl: `${PUBLIC}/ingest/twilio/status`,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(twilio.requests.slice(-2)).toEqual([
        expect.objectContaining({ path: `/2010-04-01/Accounts/${ACCOUNT}.json`, authorized: true }),
        expect.objectContaining({
          path: `/2010-04-01/Accounts/${ACCOUNT}/IncomingPhoneNumbers.json?PhoneNumber=${encodeURIComponent(phone.address)}`,
          authorized: true,
        }),
      ]);
      const got = await m.admin.get(`/admin/lines/${phone.id}/sms-provider`);
      expect(got.body).toEqual(res.body);
      expect(JSON.stringify(got.body)).not.toContain(TOKEN);
      const [row] = await m.db.query(`SELECT auth_token_sealed FROM sms_providers WHERE line_id = $1`, [phone.id]);
      expect(row.auth_token_sealed).not.toContain(TOKEN);
      expect(m.app.get(SecretBox).open(row.auth_token_sealed)).toBe(TOKEN);
    });
  });

  describe('POST /ingest/twilio/sms', () => {
    it('takes a signed message: empty TwiML, the inbound path (message.received), once per MessageSid', async () => {
      const params = inbound({ Body: 'Is my order ready?' });
      const first = await twilioPost('/ingest/twilio/sms', params);
      expect(first).toMatchObject({ status: 200, text: '<?xml version="1.0" encoding="UTF-8"?><Response></Response>' });
      expect(first.type).toMatch(/^text\/xml/);
      const again = await twilioPost('/ingest/twilio/sms', params);
      expect(again.status).toBe(200);
      expect(await messagesWith(params.MessageSid)).toEqual([expect.objectContaining({ body: 'Is my order ready?', direction: 'INBOUND' })]);
      const [received] = (await hook.waitFor(1, 'message.received')).filter((e) => e.data.message.body === 'Is my order ready?');
      expect(received.data.message).toMatchObject({ channel: 'SMS', direction: 'INBOUND', fromIdentity: { value: params.From, kind: 'PHONE' } });
      const published = await m.db.query(`SELECT count(*)::int AS n FROM outbox_events WHERE type = 'message.received' AND data->'message'->>'id' = $1`, [
        received.data.message.id,
      ]);
      expect(published).toEqual([{ n: 1 }]);
    });

    it('refuses (403, nothing stored) a missing signature, a wrong one, another account token, a changed parameter or another URL', async () => {
      const params = inbound();
      const url = `${PUBLIC}/ingest/twilio/sms`;
      const cases: Array<[string, Record<string, string>, Record<string, string>]> = [
        ['no signature', params, {}],
        ['garbage', params, { 'x-twilio-signature': 'not-a-signature' }],
        ['another token', params, { 'x-twilio-signature': twilioSignature(OTHER_TOKEN, url, params) }],
        ['changed body', { ...params, Body: 'changed' }, { 'x-twilio-signature': twilioSignature(TOKEN, url, params) }],
        ['another URL', params, { 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}/ingest/twilio/status`, params) }],
        [
          'unknown account',
          { ...params, AccountSid: OTHER_ACCOUNT },
          { 'x-twilio-signature': twilioSignature(OTHER_TOKEN, url, { ...params, AccountSid: OTHER_ACCOUNT }) },
        ],
      ];
      for (const [what, body, headers] of cases) {
        const res = await twilioPost('/ingest/twilio/sms', body, null, headers);
        expect({ what, status: res.status, field: res.json().field }).toEqual({ what, status: 403, field: 'X-Twilio-Signature' });
      }
      expect(await messagesWith(params.MessageSid)).toEqual([]);
    });

    it('reads at most 64 KiB of an unauthenticated body (413), and only forms (400 naming Content-Type)', async () => {
      const big = inbound({ Body: 'x'.repeat(70 * 1024) });
      expect((await twilioPost('/ingest/twilio/sms', big)).json()).toMatchObject({ statusCode: 413, field: 'body' });
      const params = inbound();
      const json = await request(`${m.baseUrl}/ingest/twilio/sms`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}/ingest/twilio/sms`, params) },
        body: JSON.stringify(params),
      });
      expect(json.statusCode).toBe(400);
      expect(await json.body.json()).toMatchObject({ field: 'Content-Type' });
    });

    it('gives a body read before authentication 5 s to arrive whole (408), and requires the signature header before reading it', async () => {
      const port = Number(new URL(m.baseUrl).port);
      const unsigned = await RawConnection.open(port);
      unsigned.head('POST', '/ingest/twilio/sms', { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': 100 });
      expect((await unsigned.response(2_000))?.status).toBe(403);
      unsigned.destroy();
      const slow = await RawConnection.open(port);
      slow.head('POST', '/ingest/twilio/sms', { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': 100, 'X-Twilio-Signature': 'x' });
      slow.write('To=');
      const started = Date.now();
      const answer = await slow.response(10_000);
      slow.destroy();
      expect({ status: answer?.status, waitedAtLeast4s: Date.now() - started >= 4_000 }).toEqual({ status: 408, waitedAtLeast4s: true });
    });

    it('names what is wrong with a signed form: a number not of this account (404 To), a bad From (400)', async () => {
      const elsewhere = inbound({ To: '+15550000000' });
      expect((await twilioPost('/ingest/twilio/sms', elsewhere)).json()).toMatchObject({ statusCode: 404, field: 'To' });
      expect((await twilioPost('/ingest/twilio/sms', inbound({ From: 'not a number' }))).json()).toMatchObject({ statusCode: 400, field: 'From' });
      expect((await twilioPost('/ingest/twilio/sms', inbound({ MessageSid: '' }))).json()).toMatchObject({ statusCode: 400, field: 'MessageSid' });
    });

    it("stores media fetched with the account's credentials (never sent to the CDN it redirects to) as attachments, and extracts them", async () => {
      twilio.media.set('note1', { content: Buffer.from('Delivery window: Tuesday 9-11'), type: 'text/plain' });
      const params = inbound({ Body: 'see attached', NumMedia: '1', MediaUrl0: twilio.mediaUrl(ACCOUNT, 'note1'), MediaContentType0: 'text/plain' });
      expect((await twilioPost('/ingest/twilio/sms', params)).status).toBe(200);
      const [message] = await messagesWith(params.MessageSid);
      const attachments = await m.db.query(`SELECT filename, mime_type, convert_from(content, 'UTF8') AS text FROM attachments WHERE message_id = $1`, [
        message.id,
      ]);
      expect(attachments).toEqual([{ filename: `${params.MessageSid}-0.txt`, mime_type: 'text/plain', text: 'Delivery window: Tuesday 9-11' }]);
      expect(twilio.requests.find((r) => r.path.endsWith('/Media/MEnote1'))).toMatchObject({ authorized: true });
      expect(twilio.cdnRequests.find((r) => r.path === '/cdn/note1')).toEqual({ path: '/cdn/note1', authorization: undefined });
      await extractionIdle(m);
      const extracted = await hook.waitFor(1, 'attachment.extracted');
      expect(extracted.some((e) => e.data.attachment.filename === `${params.MessageSid}-0.txt`)).toBe(true);
    });

    it('does not fetch media from a private address: the message is kept without it', async () => {
      const params = inbound({
        Body: 'metadata please',
        NumMedia: '1',
        MediaUrl0: 'http://169.254.169.254/latest/meta-data/',
        MediaContentType0: 'text/plain',
      });
      expect((await twilioPost('/ingest/twilio/sms', params)).status).toBe(200);
      const [message] = await messagesWith(params.MessageSid);
      expect(message.body).toBe('metadata please');
      expect(await m.db.query(`SELECT 1 FROM attachments WHERE message_id = $1`, [message.id])).toEqual([]);
    });

    it('answers 502 and records nothing while media cannot be fetched; the same request later records it once', async () => {
      twilio.media.set('flaky', { status: 503 });
      const params = inbound({ Body: 'photo', NumMedia: '1', MediaUrl0: twilio.mediaUrl(ACCOUNT, 'flaky'), MediaContentType0: 'image/png' });
      const failed = await twilioPost('/ingest/twilio/sms', params);
      expect(failed.status).toBe(502);
      expect(failed.json().message).toMatch(/MediaUrl0 answered 503/);
      expect(await messagesWith(params.MessageSid)).toEqual([]);
      twilio.media.set('flaky', { content: Buffer.from('89504e470d0a1a0a', 'hex'), type: 'image/png' });
      expect((await twilioPost('/ingest/twilio/sms', params)).status).toBe(200);
      const [message] = await messagesWith(params.MessageSid);
      expect(await m.db.query(`SELECT filename, size_bytes FROM attachments WHERE message_id = $1`, [message.id])).toEqual([
        { filename: `${params.MessageSid}-0.png`, size_bytes: 8 },
      ]);
    });
  });

  describe('send_sms through the Messages API, and status callbacks', () => {
    /** A thread with a partner (an inbound message first), and the partner's identity id. */
    async function thread(partner = partnerPhone()): Promise<{ threadId: string; identityId: string; partner: string }> {
      const params = inbound({ From: partner, Body: `hi from ${partner}` });
      expect((await twilioPost('/ingest/twilio/sms', params)).status).toBe(200);
      const event = await waitUntil(
        () => hook.events('message.received').find((e) => e.data.message.fromIdentity.value === partner),
        `message.received from ${partner}`,
      );
      return { threadId: event.data.message.threadId, identityId: event.data.person.identities[0].id, partner };
    }

    const status = async (messageId: string) =>
      (await m.db.query(`SELECT status, provider_message_id, error FROM messages WHERE id = $1`, [messageId]))[0] as {
        status: string;
        provider_message_id: string | null;
        error: string | null;
      };

    it('posts the message with basic auth and a StatusCallback; delivered moves it SENT → DELIVERED, once', async () => {
      const { threadId, identityId, partner } = await thread();
      const { message } = await toolOk(m, s.apiKey, 'send_sms', { threadId, identityId, smsBody: 'Your order is ready' });
      await waitUntil(() => twilio.sent.some((x) => x.to === partner), 'the stand-in to be asked to send');
      const sent = twilio.sent.find((x) => x.to === partner)!;
      expect(sent).toMatchObject({ accountSid: ACCOUNT, from: phone.address, body: 'Your order is ready', statusCallback: `${PUBLIC}/ingest/twilio/status` });
      expect(twilio.requests.find((r) => r.method === 'POST' && r.path.endsWith('/Messages.json'))).toMatchObject({ authorized: true });
      await waitUntil(async () => (await status(message.id)).status === 'SENT', 'the message to be SENT');
      expect((await status(message.id)).provider_message_id).toBe(sent.sid);

      expect((await twilio.callback(m.baseUrl, sent, 'sent')).status).toBe(200);
      const delivered = await twilio.callback(m.baseUrl, sent, 'delivered');
      expect(delivered.status).toBe(200);
      expect(JSON.parse(delivered.body)).toEqual({ messageId: message.id, status: 'DELIVERED', changed: true, held: false });
      expect(JSON.parse((await twilio.callback(m.baseUrl, sent, 'delivered')).body)).toMatchObject({ changed: false });
      const changes = await waitUntil(() => {
        const found = hook.events('message.status_changed').filter((e) => e.data.message.id === message.id && e.data.currentStatus === 'DELIVERED');
        return found.length > 0 && found;
      }, 'the DELIVERED status_changed event');
      expect(changes).toHaveLength(1);
      expect(changes[0].data.previousStatus).toBe('SENT');
    });

    it('undelivered with ErrorCode: FAILED, the code kept on the message', async () => {
      const { threadId, identityId, partner } = await thread();
      const { message } = await toolOk(m, s.apiKey, 'send_sms', { threadId, identityId, smsBody: 'Are you there?' });
      await waitUntil(async () => (await status(message.id)).status === 'SENT', 'the message to be SENT');
      const sent = twilio.sent.find((x) => x.to === partner)!;
      const res = await twilio.callback(m.baseUrl, sent, 'undelivered', { ErrorCode: '30003', ErrorMessage: 'Unreachable destination handset' });
      expect(JSON.parse(res.body)).toEqual({ messageId: message.id, status: 'FAILED', changed: true, held: false });
      expect(await status(message.id)).toMatchObject({ status: 'FAILED', error: 'Twilio error 30003: Unreachable destination handset' });
      await waitUntil(
        () => hook.events('message.status_changed').some((e) => e.data.message.id === message.id && e.data.currentStatus === 'FAILED'),
        'the FAILED status_changed event',
      );
    });

    it('a number the provider refuses: FAILED at once with its error code, not retried', async () => {
      const { threadId, identityId, partner } = await thread();
      twilio.answers.set(partner, { httpStatus: 400, code: 21211, message: `The 'To' number ${partner} is not a valid phone number.` });
      const { message } = await toolOk(m, s.apiKey, 'send_sms', { threadId, identityId, smsBody: 'hello?' });
      await waitUntil(async () => (await status(message.id)).status === 'FAILED', 'the message to be FAILED');
      expect((await status(message.id)).error).toBe(
        `the SMS provider refused the message (400): Twilio error 21211: The 'To' number ${partner} is not a valid phone number.`,
      );
      expect(twilio.sendAttempts.filter((to) => to === partner)).toHaveLength(1);
    });

    it('refuses a status callback not signed with the account token (403, nothing changes)', async () => {
      const { threadId, identityId, partner } = await thread();
      const { message } = await toolOk(m, s.apiKey, 'send_sms', { threadId, identityId, smsBody: 'one more' });
      await waitUntil(async () => (await status(message.id)).status === 'SENT', 'the message to be SENT');
      const sent = twilio.sent.find((x) => x.to === partner)!;
      const forged = await twilioPost('/ingest/twilio/status', { AccountSid: ACCOUNT, MessageSid: sent.sid, MessageStatus: 'failed' }, OTHER_TOKEN);
      expect(forged.status).toBe(403);
      expect((await status(message.id)).status).toBe('SENT');
    });

    it('after DELETE, the line sends through SMS_CARRIER_URL again and Twilio requests for it are refused', async () => {
      const { threadId, identityId, partner } = await thread();
      expect((await m.admin.delete(`/admin/lines/${phone.id}/sms-provider`)).status).toBe(204);
      await toolOk(m, s.apiKey, 'send_sms', { threadId, identityId, smsBody: 'through the carrier' });
      await waitUntil(() => m.carried.some((c) => c.to === partner && c.body === 'through the carrier'), 'the carrier to be handed the SMS');
      expect(twilio.sendAttempts.filter((to) => to === partner)).toEqual([]);
      expect((await m.admin.get(`/admin/lines/${phone.id}/sms-provider`)).status).toBe(404);
      expect((await twilioPost('/ingest/twilio/sms', inbound())).status).toBe(403);
    });
  });
});
