import { randomBytes, randomUUID } from 'node:crypto';
import { toolError, toolOk } from '../support/mcp';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { storePayload } from '../support/payloads';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';
import { PageBrowser, postForm, signInBrowser } from '../support/web';

/**
 * The delivery log keeps no line's data after access to the line ends (issue 30): once a user's
 * membership of a line is removed, or the line is deleted, the deliveries of that line's events
 * read as ids that never existed, for an ALL key (list, get, resend, recover) and for the person's
 * web pages, and nothing of them reaches a URL the user sets afterwards. Deliveries of a line the
 * user still has keep working. Real inbound SMS, a real receiver, the real delivery engine.
 */

const SECRET_BODY = 'PHONE-LINE CONFIDENTIAL';
const KEPT_BODY = 'kept line, still yours';
const HOUR = 3_600_000;

interface Row {
  id: string;
  line_id: string | null;
  status: string;
  resent_from_id: string | null;
  recovered_at: Date | null;
}

describe('deliveries of a line the caller no longer has', () => {
  let m: MessagingTestApp;

  beforeAll(async () => {
    // Two attempts, 200 ms apart: a receiver answering 500 makes a delivery `failed` within a second.
    m = await createMessagingTestApp({ DELIVERY_RETRY_SCHEDULE: '200ms' });
    m.receiver.respond = (req) => (req.url.startsWith('/down/') ? { status: 500, body: 'down' } : { status: 200, body: 'ok' });
  });
  afterAll(async () => {
    await m?.close();
  });

  const rowsOf = (endpointId: string): Promise<Row[]> =>
    m.db.query(`SELECT id, line_id, status, resent_from_id, recovered_at FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at, id`, [endpointId]);
  const bodiesAt = (path: string): string[] => m.receiver.requests.filter((r) => r.url === path).map((r) => r.body);
  const listed = async (key: string, endpointId: string, status?: string): Promise<string[]> =>
    (await toolOk(m, key, 'list_webhook_deliveries', { endpointId, ...(status ? { status } : {}) })).deliveries.map((d: { id: string }) => d.id).sort();
  const page = (b: PageBrowser, path: string) => m.http().get(path).set('Cookie', b.cookie);
  const form = (b: PageBrowser, path: string, fields: Record<string, string> = {}) => postForm(m, b, path, fields);

  interface Setup {
    s: Session;
    browser: PageBrowser;
    endpointId: string;
    lost: Session['lines'][number];
    hidden: string;
    control: string;
  }

  /**
   * A user with two phone lines, an ALL key and a web session, whose all-channels endpoint failed
   * one delivery of a message on each line: the first line's carries SECRET_BODY.
   */
  async function setup(role: 'MEMBER' | 'OWNER'): Promise<Setup> {
    const s = await createSession(m.admin, { role, lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    const [lost, kept] = s.lines;
    const { endpoint } = await toolOk(m, s.apiKey, 'register_webhook', {
      url: `${m.receiverUrl}/down/${randomBytes(4).toString('hex')}`,
      events: ['message.received'],
    });
    await inboundSms(m, lost.address, partnerPhone(), SECRET_BODY);
    await inboundSms(m, kept.address, partnerPhone(), KEPT_BODY);
    const rows = await waitUntil(async () => {
      const found = await rowsOf(endpoint.id);
      return found.length === 2 && found.every((r) => r.status === 'failed') && found;
    }, 'both deliveries to fail');
    const hidden = rows.find((r) => r.line_id === lost.id)!.id;
    const control = rows.find((r) => r.line_id === kept.id)!.id;
    const browser = await signInBrowser(m, s.userId);
    // While the user has both lines, both deliveries are theirs, payload and all.
    expect(await listed(s.apiKey, endpoint.id)).toEqual([hidden, control].sort());
    expect(JSON.stringify((await toolOk(m, s.apiKey, 'get_webhook_delivery', { deliveryId: hidden })).envelope)).toContain(SECRET_BODY);
    expect((await page(browser, `/settings/webhooks/${endpoint.id}/deliveries/${hidden}`).expect(200)).text).toContain(SECRET_BODY);
    return { s, browser, endpointId: endpoint.id, lost, hidden, control };
  }

  /** Every surface answers the lost line's delivery as an unknown id, and nothing of it is sent again; the kept line's still works. */
  async function expectGone({ s, browser, endpointId, hidden, control }: Setup): Promise<void> {
    const key = s.apiKey;
    const ghost = randomUUID();
    // MCP: listed no more (with or without a status filter), and read, resent as an unknown id.
    expect(await listed(key, endpointId)).toEqual([control]);
    expect(await listed(key, endpointId, 'failed')).toEqual([control]);
    for (const tool of ['get_webhook_delivery', 'resend_webhook_delivery']) {
      expect([tool, await toolError(m, key, tool, { deliveryId: hidden })]).toEqual([tool, `webhook delivery ${hidden} not found`]);
      expect([tool, await toolError(m, key, tool, { deliveryId: ghost })]).toEqual([tool, `webhook delivery ${ghost} not found`]);
    }
    // The web pages: a 404 page like an unknown id's; the log lists only the kept line's delivery.
    const missing = await page(browser, `/settings/webhooks/${endpointId}/deliveries/${hidden}`).expect(404);
    const unknown = await page(browser, `/settings/webhooks/${endpointId}/deliveries/${ghost}`).expect(404);
    expect(missing.text.replaceAll(hidden, '<id>')).toEqual(unknown.text.replaceAll(ghost, '<id>'));
    expect(missing.text).not.toContain(SECRET_BODY);
    const log = await page(browser, `/settings/webhooks/${endpointId}`).expect(200);
    expect(log.text).toContain(control);
    expect(log.text).not.toContain(hidden);
    await form(browser, `/settings/webhooks/${endpointId}/deliveries/${hidden}/resend`).expect(404);

    // The user points the endpoint at a fresh URL and asks for everything again.
    const fresh = `/fresh/${randomBytes(4).toString('hex')}`;
    await toolOk(m, key, 'update_webhook', { endpointId, url: `${m.receiverUrl}${fresh}` });
    const since = new Date(Date.now() - HOUR).toISOString();
    expect(await toolOk(m, key, 'recover_webhook_deliveries', { endpointId, since })).toMatchObject({ queued: 1, truncated: false });
    const { delivery: copy } = await toolOk(m, key, 'resend_webhook_delivery', { deliveryId: control });
    expect(copy).toMatchObject({ endpointId, resentFromId: control });
    // The web page's recovery finds nothing left (the kept line's delivery is recovered already).
    const recovered = await form(browser, `/settings/webhooks/${endpointId}/recover`, { since: since.slice(0, 16) }).expect(303);
    expect(recovered.headers.location).toBe(`/settings/webhooks/${endpointId}?recovered=0`);

    // Two copies of the kept line's delivery arrive at the fresh URL; nothing else is owed to it.
    await waitUntil(
      () => bodiesAt(fresh).length >= 2,
      () => `2 deliveries at ${fresh} (got ${bodiesAt(fresh).length})`,
    );
    const rows = await rowsOf(endpointId);
    expect(rows.filter((r) => r.resent_from_id !== null).map((r) => r.resent_from_id)).toEqual([control, control]);
    expect(rows.find((r) => r.id === hidden)).toMatchObject({ status: 'failed', recovered_at: null });
    await waitUntil(async () => (await rowsOf(endpointId)).every((r) => r.status !== 'pending' && r.status !== 'retrying'), 'no delivery owed');
    expect(bodiesAt(fresh)).toHaveLength(2);
    for (const body of bodiesAt(fresh)) {
      expect(body).toContain(KEPT_BODY);
      expect(body).not.toContain(SECRET_BODY);
    }
    // The kept line's delivery still reads whole, on both surfaces.
    expect(JSON.stringify((await toolOk(m, key, 'get_webhook_delivery', { deliveryId: control })).envelope)).toContain(KEPT_BODY);
    expect((await page(browser, `/settings/webhooks/${endpointId}/deliveries/${control}`).expect(200)).text).toContain(KEPT_BODY);
  }

  it("a MEMBER whose membership of the line is removed no longer sees, resends or recovers the line's deliveries", async () => {
    const setupDone = await setup('MEMBER');
    expect((await m.admin.delete(`/admin/lines/${setupDone.lost.id}/members/${setupDone.s.userId}`)).status).toBe(204);
    await expectGone(setupDone);
    // Membership back, the line's deliveries are theirs again.
    expect((await m.admin.put(`/admin/lines/${setupDone.lost.id}/members/${setupDone.s.userId}`)).status).toBe(200);
    expect(await listed(setupDone.s.apiKey, setupDone.endpointId)).toContain(setupDone.hidden);
  });

  it("an OWNER whose line is deleted no longer sees, resends or recovers the line's deliveries", async () => {
    const setupDone = await setup('OWNER');
    expect((await m.admin.delete(`/admin/lines/${setupDone.lost.id}`)).status).toBe(204);
    await expectGone(setupDone);
  });

  it('pages of the log hold only the lines the caller has: full pages, a cursor while more are left, none after the last', async () => {
    const s = await createSession(m.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    const [lost, kept] = s.lines;
    const { endpoint } = await toolOk(m, s.apiKey, 'register_webhook', {
      url: `${m.receiverUrl}/ok/${randomBytes(4).toString('hex')}`,
      events: ['message.received'],
    });
    // 60 rows, newest first alternating kept, lost, lost; 20 on the kept line, one per second.
    await m.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, line_id, event_type, mode, payload_id, event_created_at, status, created_at)
       SELECT 'evt_' || md5(random()::text || i::text), $1, $2, CASE WHEN i % 3 = 0 THEN $3::uuid ELSE $4::uuid END, 'message.received', 'concise', $5,
              now(), 'succeeded', now() - i * interval '1 second'
         FROM generate_series(0, 59) AS i`,
      [endpoint.id, s.userId, kept.id, lost.id, await storePayload(m.db, { body: SECRET_BODY })],
    );
    expect((await m.admin.delete(`/admin/lines/${lost.id}/members/${s.userId}`)).status).toBe(204);
    const keptIds: string[] = (
      await m.db.query(`SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND line_id = $2 ORDER BY created_at DESC, id DESC`, [endpoint.id, kept.id])
    ).map((r: { id: string }) => r.id);
    const first = await toolOk(m, s.apiKey, 'list_webhook_deliveries', { endpointId: endpoint.id });
    expect(first.deliveries.map((d: { id: string }) => d.id)).toEqual(keptIds);
    expect(first.nextCursor).toBeNull();
    // Six more on the kept line, older than all: 25 on the first page, a cursor, the last on the second.
    await m.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, line_id, event_type, mode, payload_id, event_created_at, status, created_at)
       SELECT 'evt_' || md5(random()::text || i::text), $1, $2, $3, 'message.received', 'concise', $4, now(), 'succeeded', now() - (60 + i) * interval '1 second'
         FROM generate_series(0, 5) AS i RETURNING id`,
      [endpoint.id, s.userId, kept.id, await storePayload(m.db, { body: KEPT_BODY })],
    );
    const all: string[] = (
      await m.db.query(`SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND line_id = $2 ORDER BY created_at DESC, id DESC`, [endpoint.id, kept.id])
    ).map((r: { id: string }) => r.id);
    const one = await toolOk(m, s.apiKey, 'list_webhook_deliveries', { endpointId: endpoint.id });
    expect(one.deliveries.map((d: { id: string }) => d.id)).toEqual(all.slice(0, 25));
    expect(one.nextCursor).toEqual(expect.any(String));
    const two = await toolOk(m, s.apiKey, 'list_webhook_deliveries', { endpointId: endpoint.id, cursor: one.nextCursor });
    expect(two).toEqual({ deliveries: all.slice(25).map((id) => expect.objectContaining({ id })), nextCursor: null });
  });
});
