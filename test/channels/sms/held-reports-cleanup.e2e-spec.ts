import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { createMessagingTestApp, MessagingTestApp } from '../../support/messaging-hooks';
import { createSession } from '../../support/session';
import { TwilioStandIn, twilioSignature } from '../../support/twilio';
import { waitUntil } from '../../support/wait';

const ACCOUNT = `AC${randomBytes(16).toString('hex')}`;
const TOKEN = randomBytes(16).toString('hex');
const PUBLIC = 'http://127.0.0.1:3000';

/**
 * A status callback for a message no hand-off has stored yet is held (docs/twilio.md); one that no
 * hand-off claims within a day was sent by something else with our callback URL, and a worker
 * deletes it ("held sms reports cleanup", docs/operations.md, "Background work").
 */
describe('held SMS reports', () => {
  jest.setTimeout(60_000);
  let twilio: TwilioStandIn;
  let api: MessagingTestApp;
  let worker: MessagingTestApp | undefined;
  let phone: { id: string; address: string };

  beforeAll(async () => {
    twilio = await new TwilioStandIn({ [ACCOUNT]: TOKEN }).start();
    // Only the worker started below runs background work.
    api = await createMessagingTestApp({ TWILIO_API_BASE_URL: twilio.baseUrl, PROCESS_ROLE: 'api' });
    phone = (await createSession(api.admin, { lines: ['PHONE_NUMBER'] })).lines[0];
    twilio.own(ACCOUNT, phone.address);
    expect((await api.admin.put(`/admin/lines/${phone.id}/sms-provider`, { provider: 'twilio', accountSid: ACCOUNT, authToken: TOKEN })).status).toBe(200);
  });
  afterAll(async () => {
    await worker?.close();
    await api?.close();
    await twilio?.close();
  });

  /** A signed "delivered" callback from our number for a sid no message of ours has. */
  async function reportUnknown(): Promise<string> {
    const sid = `SM${randomBytes(16).toString('hex')}`;
    const params = { AccountSid: ACCOUNT, MessageSid: sid, MessageStatus: 'delivered', From: phone.address, To: '+15005550006' };
    const response = await request(`${api.baseUrl}/ingest/twilio/status`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}/ingest/twilio/status`, params) },
      body: new URLSearchParams(params).toString(),
    });
    expect({ status: response.statusCode, body: JSON.parse(await response.body.text()) }).toEqual({
      status: 200,
      body: { messageId: null, status: null, changed: false, held: true },
    });
    return sid;
  }

  const heldSids = async () =>
    (
      (await api.db.query(`SELECT provider_message_id FROM pending_sms_reports WHERE line_id = $1 ORDER BY provider_message_id`, [phone.id])) as Array<{
        provider_message_id: string;
      }>
    ).map((row) => row.provider_message_id);

  it('a worker deletes a report held for more than a day, and keeps a recent one', async () => {
    const stale = await reportUnknown();
    const recent = await reportUnknown();
    await api.db.query(`UPDATE pending_sms_reports SET received_at = now() - interval '25 hours' WHERE line_id = $1 AND provider_message_id = $2`, [
      phone.id,
      stale,
    ]);
    expect(await heldSids()).toEqual([stale, recent].sort());

    worker = await createMessagingTestApp({ TWILIO_API_BASE_URL: twilio.baseUrl, PROCESS_ROLE: 'worker' });
    await waitUntil(async () => !(await heldSids()).includes(stale), 'the stale held report to be deleted');
    expect(await heldSids()).toEqual([recent]);
  });
});
