import { randomUUID } from 'node:crypto';
import { createSession, Session, SessionLine, uniquePhone } from '../support/session';
import { createMcpTestApp, hookUrl, McpTestApp, toolError, toolOk } from '../support/mcp';
import { storePayload } from '../support/payloads';

/**
 * A key limited to some lines sees and acts on only the endpoints whose channel scope lies wholly
 * inside the lines it may use now. Every other endpoint of its own user, and that endpoint's deliveries, answer exactly as
 * ids that never existed, in all eight webhook tools, and stay untouched. Of a visible endpoint's
 * log it sees only deliveries of events on its lines (an endpoint may have reached further before).
 */
type Scope = 'all lines' | 'its line' | 'another line' | 'both lines';
const HIDDEN: Scope[] = ['all lines', 'another line', 'both lines'];

interface Target {
  id: string;
  url: string;
  deliveryId: string;
}

describe('webhook tools with a key limited to some lines (LINES)', () => {
  let t: McpTestApp;
  beforeAll(async () => {
    t = await createMcpTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const phoneOf = (s: Session): SessionLine => s.lines.find((line) => line.type === 'PHONE_NUMBER')!;
  const emailOf = (s: Session): SessionLine => s.lines.find((line) => line.type === 'EMAIL_ACCOUNT')!;
  const channel = (line: SessionLine) => ({ channelType: line.type, channelId: line.id });
  /** The channelScope argument for each scope, seen from a key limited to the phone line. */
  const scopeOf = (s: Session, scope: Scope) =>
    ({
      'all lines': { allChannels: true },
      'its line': { allChannels: false, channels: [channel(phoneOf(s))] },
      'another line': { allChannels: false, channels: [channel(emailOf(s))] },
      'both lines': { allChannels: false, channels: [channel(phoneOf(s)), channel(emailOf(s))] },
    })[scope];

  async function linesKey(s: Session, addresses: string[]): Promise<string> {
    const res = await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'lines key', channelAccess: { mode: 'LINES', lines: addresses } });
    expect(res.status).toBe(201);
    return res.body.key;
  }

  /** A delivery in an endpoint's log, of an event on `line` (null: an org-wide event). */
  async function delivery(s: Session, endpointId: string, line: SessionLine | null): Promise<string> {
    const [row] = await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, line_id, event_type, mode, payload_id, event_created_at, status)
       VALUES ('evt_' || md5(random()::text), $1, $2, $3, 'message.received', 'concise', $4, now(), 'succeeded') RETURNING id`,
      [endpointId, s.userId, line?.id ?? null, await storePayload(t.db, { body: `secret text of ${line?.address ?? 'the org'}` })],
    );
    return row.id;
  }

  /** Registers with `key` and gives the endpoint one delivery in its log, of an event on `line`. */
  async function endpointWithDelivery(s: Session, key: string, channelScope: object, line: SessionLine): Promise<Target> {
    const url = hookUrl();
    const { endpoint } = await toolOk(t, key, 'register_webhook', { url, events: ['message.received'], channelScope });
    return { id: endpoint.id, url, deliveryId: await delivery(s, endpoint.id, line) };
  }

  /** Everything stored about an endpoint: its row (secrets included), its scope and its delivery log. */
  async function stored(endpointId: string) {
    const [endpoint] = await t.db.query('SELECT * FROM webhook_endpoints WHERE id = $1', [endpointId]);
    const scope = await t.db.query('SELECT line_id, channel_type FROM webhook_endpoint_channels WHERE endpoint_id = $1 ORDER BY line_id', [endpointId]);
    const deliveries = await t.db.query('SELECT * FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id', [endpointId]);
    return { endpoint, scope, deliveries };
  }

  const listed = async (key: string): Promise<string[]> => (await toolOk(t, key, 'list_webhooks', {})).endpoints.map((e: { id: string }) => e.id).sort();

  /** Calls every tool that names an endpoint or a delivery; each must answer the not-found of an unknown id. */
  async function expectHidden(key: string, target: Target): Promise<void> {
    const before = await stored(target.id);
    const notFound = `webhook endpoint ${target.id} not found`;
    const calls: Array<[string, Record<string, unknown>]> = [
      ['get_webhook', { endpointId: target.id }],
      ['update_webhook', { endpointId: target.id, url: hookUrl() }],
      ['update_webhook', { endpointId: target.id, status: 'disabled', events: ['message.received', 'message.sent'], mode: 'verbose' }],
      ['rotate_webhook_secret', { endpointId: target.id }],
      ['delete_webhook', { endpointId: target.id }],
      ['list_webhook_deliveries', { endpointId: target.id }],
    ];
    // Narrowing the endpoint into a line the key may use would take it over: also not found.
    const { phoneNumbers } = await toolOk(t, key, 'list_phone_numbers', {});
    const { emailAccounts } = await toolOk(t, key, 'list_email_accounts', {});
    const own = [...phoneNumbers, ...emailAccounts][0];
    if (own)
      calls.push([
        'update_webhook',
        { endpointId: target.id, url: hookUrl(), channelScope: { allChannels: false, channels: [{ channelType: own.channelType, channelId: own.id }] } },
      ]);
    for (const [tool, args] of calls) expect([tool, await toolError(t, key, tool, args)]).toEqual([tool, notFound]);
    expect(await toolError(t, key, 'resend_webhook_delivery', { deliveryId: target.deliveryId })).toBe(`webhook delivery ${target.deliveryId} not found`);
    // The very answers an id that never existed gets: nothing tells a hidden endpoint from none.
    const ghost = randomUUID();
    expect(await toolError(t, key, 'get_webhook', { endpointId: ghost })).toBe(`webhook endpoint ${ghost} not found`);
    expect(await toolError(t, key, 'resend_webhook_delivery', { deliveryId: ghost })).toBe(`webhook delivery ${ghost} not found`);
    expect(await listed(key)).not.toContain(target.id);
    expect(await stored(target.id)).toEqual(before);
  }

  describe('endpoints of the same user scoped to all lines, to its line, to another line, to both', () => {
    let s: Session;
    let key: string;
    const targets = {} as Record<Scope, Target>;

    beforeAll(async () => {
      s = await createSession(t.admin, { tier: 'POWER', lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
      key = await linesKey(s, [phoneOf(s).address]);
      // The user's unrestricted key makes them all.
      for (const scope of ['all lines', 'its line', 'another line', 'both lines'] as Scope[]) {
        targets[scope] = await endpointWithDelivery(s, s.apiKey, scopeOf(s, scope), scope === 'another line' ? emailOf(s) : phoneOf(s));
      }
    });

    it('list_webhooks shows the LINES key only the endpoint scoped to its line; the unrestricted key all four', async () => {
      expect(await listed(key)).toEqual([targets['its line'].id]);
      expect(await listed(s.apiKey)).toEqual(
        Object.values(targets)
          .map((x) => x.id)
          .sort(),
      );
    });

    it.each(HIDDEN)('the endpoint scoped to %s, and its deliveries, are not found by any tool and stay untouched', async (scope) => {
      await expectHidden(key, targets[scope]);
      // The owner's unrestricted key still sees and lists it.
      expect((await toolOk(t, s.apiKey, 'get_webhook', { endpointId: targets[scope].id })).endpoint.url).toBe(targets[scope].url);
      expect((await toolOk(t, s.apiKey, 'list_webhook_deliveries', { endpointId: targets[scope].id })).deliveries).toHaveLength(1);
    });

    it('the endpoint scoped to its line answers every tool', async () => {
      const mine = targets['its line'];
      expect((await toolOk(t, key, 'get_webhook', { endpointId: mine.id })).endpoint).toMatchObject({ id: mine.id, url: mine.url });
      const { deliveries } = await toolOk(t, key, 'list_webhook_deliveries', { endpointId: mine.id });
      expect(deliveries.map((d: { id: string }) => d.id)).toEqual([mine.deliveryId]);
      const { delivery } = await toolOk(t, key, 'resend_webhook_delivery', { deliveryId: mine.deliveryId });
      expect(delivery).toMatchObject({ endpointId: mine.id, resentFromId: mine.deliveryId });
      const url = hookUrl();
      expect((await toolOk(t, key, 'update_webhook', { endpointId: mine.id, url })).endpoint.url).toBe(url);
      expect((await toolOk(t, key, 'rotate_webhook_secret', { endpointId: mine.id })).secret).toMatch(/^[0-9a-f]{64}$/);
      // It may not widen it: the scope check answers, and the endpoint stays in its line.
      expect(await toolError(t, key, 'update_webhook', { endpointId: mine.id, channelScope: scopeOf(s, 'both lines') })).toContain(
        'channelScope.channels[1].channelId',
      );
      expect((await stored(mine.id)).scope).toEqual([{ line_id: phoneOf(s).id, channel_type: 'PHONE_NUMBER' }]);
      expect(await toolOk(t, key, 'delete_webhook', { endpointId: mine.id })).toEqual({ deleted: true, endpointId: mine.id });
      expect(await listed(s.apiKey)).not.toContain(mine.id);
    });

    it('register_webhook accepts only a scope within its line', async () => {
      const count = async () => (await t.db.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE user_id = $1', [s.userId]))[0].n;
      const before = await count();
      expect(await toolError(t, key, 'register_webhook', { url: hookUrl(), events: ['message.received'], channelScope: scopeOf(s, 'all lines') })).toContain(
        'limited to specific lines',
      );
      expect(await toolError(t, key, 'register_webhook', { url: hookUrl(), events: ['message.received'], channelScope: scopeOf(s, 'another line') })).toContain(
        'channelScope.channels[0].channelId',
      );
      expect(await toolError(t, key, 'register_webhook', { url: hookUrl(), events: ['message.received'], channelScope: scopeOf(s, 'both lines') })).toContain(
        'channelScope.channels[1].channelId',
      );
      expect(await count()).toBe(before);
      const { endpoint } = await toolOk(t, key, 'register_webhook', { url: hookUrl(), events: ['message.received'], channelScope: scopeOf(s, 'its line') });
      expect(await listed(key)).toEqual([endpoint.id]);
      await toolOk(t, key, 'delete_webhook', { endpointId: endpoint.id });
    });
  });

  describe('deliveries made while an endpoint reached other lines', () => {
    it("an endpoint narrowed to the key's line shows it only the deliveries of that line; the others cannot be resent", async () => {
      const s = await createSession(t.admin, { tier: 'POWER', lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
      const key = await linesKey(s, [phoneOf(s).address]);
      const { endpoint } = await toolOk(t, s.apiKey, 'register_webhook', { url: hookUrl(), events: ['message.received'] });
      const onPhone = await delivery(s, endpoint.id, phoneOf(s));
      const onEmail = await delivery(s, endpoint.id, emailOf(s));
      const orgWide = await delivery(s, endpoint.id, null);
      // The owner narrows the all-lines endpoint to the phone line: the key now sees the endpoint...
      await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, channelScope: scopeOf(s, 'its line') });
      expect(await listed(key)).toEqual([endpoint.id]);
      // ...but of its log only what happened on the phone line, and it can resend only that.
      const ids = async (k: string) =>
        (await toolOk(t, k, 'list_webhook_deliveries', { endpointId: endpoint.id })).deliveries.map((d: { id: string }) => d.id).sort();
      expect(await ids(key)).toEqual([onPhone]);
      for (const hidden of [onEmail, orgWide]) {
        expect(await toolError(t, key, 'resend_webhook_delivery', { deliveryId: hidden })).toBe(`webhook delivery ${hidden} not found`);
      }
      const { delivery: copy } = await toolOk(t, key, 'resend_webhook_delivery', { deliveryId: onPhone });
      expect(copy).toMatchObject({ endpointId: endpoint.id, resentFromId: onPhone });
      expect(await ids(key)).toEqual([onPhone, copy.id].sort());
      // The owner's unrestricted key sees the whole log.
      expect(await ids(s.apiKey)).toEqual([onPhone, onEmail, orgWide, copy.id].sort());
      expect((await t.db.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE resent_from_id = ANY ($1::uuid[])', [[onEmail, orgWide]]))[0].n).toBe(
        0,
      );
    });
  });

  describe('what the key may use is decided afresh at every call', () => {
    /** A user with both lines, a key allowed both, and an endpoint per scope made by that key. */
    async function setup() {
      const s = await createSession(t.admin, { tier: 'POWER', lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
      const key = await linesKey(s, [phoneOf(s).address, emailOf(s).address]);
      const phone = await endpointWithDelivery(s, key, scopeOf(s, 'its line'), phoneOf(s));
      const email = await endpointWithDelivery(s, key, scopeOf(s, 'another line'), emailOf(s));
      const both = await endpointWithDelivery(s, key, scopeOf(s, 'both lines'), phoneOf(s));
      expect(await listed(key)).toEqual([phone.id, email.id, both.id].sort());
      return { s, key, phone, email, both };
    }

    it('an endpoint naming a line the user has lost is hidden; membership back, it shows again', async () => {
      const { s, key, phone, email, both } = await setup();
      expect((await t.admin.delete(`/admin/lines/${emailOf(s).id}/members/${s.userId}`)).status).toBe(204);
      expect(await listed(key)).toEqual([phone.id]);
      await expectHidden(key, email);
      await expectHidden(key, both);
      // The unrestricted key still manages all of the user's endpoints.
      expect(await listed(s.apiKey)).toEqual([phone.id, email.id, both.id].sort());
      expect((await t.admin.put(`/admin/lines/${emailOf(s).id}/members/${s.userId}`)).status).toBe(200);
      expect(await listed(key)).toEqual([phone.id, email.id, both.id].sort());
    });

    it('an endpoint naming a deleted line is hidden', async () => {
      const { s, key, phone, email, both } = await setup();
      expect((await t.admin.delete(`/admin/lines/${emailOf(s).id}`)).status).toBe(204);
      expect(await listed(key)).toEqual([phone.id]);
      await expectHidden(key, email);
      await expectHidden(key, both);
    });

    it('an endpoint whose scope lost every entry is hidden; the unrestricted key sees it', async () => {
      const { s, key, phone, email } = await setup();
      // As when its lines are removed for good (the scope rows cascade).
      await t.db.query('DELETE FROM webhook_endpoint_channels WHERE endpoint_id = $1', [email.id]);
      expect(await listed(key)).not.toContain(email.id);
      await expectHidden(key, email);
      expect((await toolOk(t, s.apiKey, 'get_webhook', { endpointId: email.id })).endpoint.channelScope).toEqual({ allChannels: false, channels: [] });
      expect(await listed(key)).toContain(phone.id);
    });

    it("a key whose allowlist holds none of the user's lines sees no endpoint", async () => {
      const { s, key, phone, email, both } = await setup();
      const stranger = await linesKey(s, [uniquePhone()]);
      expect(await toolOk(t, stranger, 'list_phone_numbers', {})).toEqual({ phoneNumbers: [] });
      expect(await listed(stranger)).toEqual([]);
      for (const target of [phone, email, both]) await expectHidden(stranger, target);
      // An empty allowlist (not accepted by the admin API, but allowed by the table) sees none either.
      await t.db.query(`UPDATE api_keys SET allowed_addresses = '{}' WHERE key_hash = encode(sha256($1::bytea), 'hex')`, [key]);
      expect(await listed(key)).toEqual([]);
      await expectHidden(key, phone);
    });

    it('narrowing the allowlist hides at once; all channels shows every endpoint', async () => {
      const { s, key, phone, email, both } = await setup();
      const [{ id: keyId }] = await t.db.query(`SELECT id FROM api_keys WHERE key_hash = encode(sha256($1::bytea), 'hex')`, [key]);
      expect((await t.admin.patch(`/admin/api-keys/${keyId}`, { channelAccess: { mode: 'LINES', lines: [emailOf(s).address] } })).status).toBe(200);
      expect(await listed(key)).toEqual([email.id]);
      await expectHidden(key, both);
      expect((await t.admin.patch(`/admin/api-keys/${keyId}`, { channelAccess: { mode: 'ALL' } })).status).toBe(200);
      expect(await listed(key)).toEqual([phone.id, email.id, both.id].sort());
    });
  });
});
