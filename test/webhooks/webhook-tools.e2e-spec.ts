import { randomUUID } from 'node:crypto';
import { SecretBox } from '../../src/common/secret-box';
import { createSession, Session, SessionLine, uniqueEmail } from '../support/session';
import { storePayload } from '../support/payloads';
import { callTool, createMcpTestApp, EVENT_KINDS, hookUrl, ISO_MS, McpTestApp, rpc, toolError, toolOk, UUID } from '../support/mcp';

type Endpoint = Record<string, any>;

const WEBHOOK_AND_LINE_TOOLS = [
  'delete_webhook',
  'get_webhook',
  'list_email_accounts',
  'list_phone_numbers',
  'list_webhook_deliveries',
  'list_webhooks',
  'register_webhook',
  'resend_webhook_delivery',
  'rotate_webhook_secret',
  'update_webhook',
];

describe('webhook-management tools', () => {
  let t: McpTestApp;
  beforeAll(async () => {
    t = await createMcpTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const emailOf = (s: Session): SessionLine => s.lines.find((line) => line.type === 'EMAIL_ACCOUNT')!;
  const phoneOf = (s: Session): SessionLine => s.lines.find((line) => line.type === 'PHONE_NUMBER')!;

  function register(s: Session | string, args: Record<string, unknown> = {}) {
    const key = typeof s === 'string' ? s : s.apiKey;
    return toolOk<{ endpoint: Endpoint; secret: string }>(t, key, 'register_webhook', { url: hookUrl(), events: ['message.received'], ...args });
  }

  function registerError(s: Session | string, args: Record<string, unknown>) {
    const key = typeof s === 'string' ? s : s.apiKey;
    return toolError(t, key, 'register_webhook', { url: hookUrl(), events: ['message.received'], ...args });
  }

  async function endpointCount(userId: string): Promise<number> {
    const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM webhook_endpoints WHERE user_id = $1', [userId]);
    return count;
  }

  async function row(endpointId: string): Promise<Record<string, any> | undefined> {
    const [found] = await t.db.query('SELECT * FROM webhook_endpoints WHERE id = $1', [endpointId]);
    return found;
  }

  async function scopeRows(endpointId: string): Promise<Array<{ line_id: string; channel_type: string }>> {
    return t.db.query('SELECT line_id, channel_type FROM webhook_endpoint_channels WHERE endpoint_id = $1 ORDER BY line_id', [endpointId]);
  }

  async function insertDelivery(endpointId: string, userId: string): Promise<string> {
    const [inserted] = await t.db.query(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status)
       VALUES ('evt_' || md5(random()::text), $1, $2, 'message.received', 'concise', $3, now(), 'succeeded') RETURNING id`,
      [endpointId, userId, await storePayload(t.db, { n: 1 })],
    );
    return inserted.id;
  }

  describe('register_webhook', () => {
    it('answers {endpoint, secret} with the defaults, and stores exactly that', async () => {
      const s = await createSession(t.admin);
      const url = hookUrl();
      const answer = await toolOk(t, s.apiKey, 'register_webhook', { url, events: ['message.received', 'contact.merged'] });
      expect(Object.keys(answer).sort()).toEqual(['endpoint', 'secret', 'signingSecret']);
      expect(answer.secret).toMatch(/^[0-9a-f]{64}$/);
      // The same key in Standard Webhooks form: whsec_ + base64 of the hex string's UTF-8 bytes.
      expect(answer.signingSecret).toBe(`whsec_${Buffer.from(answer.secret, 'utf8').toString('base64')}`);
      expect(answer.endpoint).toEqual({
        id: expect.stringMatching(UUID),
        url,
        events: ['message.received', 'contact.merged'],
        mode: 'concise',
        messageHistoryCount: 10,
        status: 'active',
        channelScope: { allChannels: true, channels: [] },
        signatureVersion: 'v1',
        legacySignature: true,
        publicKey: null,
        disabledReason: null,
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      });
      const stored = await row(answer.endpoint.id);
      expect(stored).toMatchObject({
        user_id: s.userId,
        org_id: s.orgId,
        url,
        events: ['message.received', 'contact.merged'],
        mode: 'concise',
        message_history_count: 10,
        status: 'active',
        all_channels: true,
        consecutive_failures: 0,
        previous_secret_sealed: null,
        previous_secret_expires_at: null,
        signature_version: 'v1',
        legacy_signature: true,
        signing_key_sealed: null,
        public_key: null,
      });
      expect(await scopeRows(answer.endpoint.id)).toEqual([]);
    });

    it('accepts every event kind, verbose mode and both bounds of messageHistoryCount', async () => {
      const s = await createSession(t.admin, { tier: 'POWER' });
      const all = await register(s, { events: [...EVENT_KINDS], mode: 'verbose', messageHistoryCount: 50 });
      expect(all.endpoint).toMatchObject({ events: [...EVENT_KINDS], mode: 'verbose', messageHistoryCount: 50 });
      const zero = await register(s, { messageHistoryCount: 0, mode: 'concise' });
      expect(zero.endpoint).toMatchObject({ mode: 'concise', messageHistoryCount: 0 });
      expect(all.secret).not.toBe(zero.secret);
    });

    it('never shows the secret again, and stores it only encrypted', async () => {
      const s = await createSession(t.admin);
      const { endpoint, secret } = await register(s);
      const answers = [
        await toolOk(t, s.apiKey, 'list_webhooks', {}),
        await toolOk(t, s.apiKey, 'get_webhook', { endpointId: endpoint.id }),
        await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, mode: 'verbose' }),
        await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, status: 'disabled' }),
      ];
      for (const answer of answers) {
        const text = JSON.stringify(answer);
        expect(text).not.toContain(secret);
        expect(text).not.toMatch(/"(secret|secretSealed|previousSecretSealed)"/);
      }
      const [{ secret_sealed: sealed, whole }] = await t.db.query(
        'SELECT secret_sealed, row_to_json(e)::text AS whole FROM webhook_endpoints e WHERE id = $1',
        [endpoint.id],
      );
      expect(sealed).not.toContain(secret);
      expect(whole).not.toContain(secret);
      expect(whole).not.toContain(Buffer.from(secret, 'hex').toString('base64'));
      expect(whole).not.toContain(Buffer.from(secret, 'utf8').toString('base64url').slice(0, 40));
      // ... and yet it is that secret, sealed: the signer can open it.
      expect(t.app.get(SecretBox).open(sealed)).toBe(secret);
    });

    describe('refuses bad arguments with isError naming the argument, and stores nothing', () => {
      let s: Session;
      beforeAll(async () => {
        s = await createSession(t.admin, { tier: 'POWER' });
      });
      afterEach(async () => {
        expect(await endpointCount(s.userId)).toBe(0);
      });

      it.each([
        ['events missing', { events: undefined }, 'events is required'],
        ['events empty', { events: [] }, 'events'],
        ['events not an array', { events: 'message.received' }, 'events'],
        ['an unknown event kind', { events: ['message.received', 'message.deleted'] }, 'events[1]'],
        ['a misspelt event kind', { events: ['message.recieved'] }, 'events[0]'],
        ['a wildcard event kind', { events: ['*'] }, 'events[0]'],
        ['duplicate event kinds', { events: ['message.sent', 'message.sent'] }, 'events'],
        ['an event kind that is not a string', { events: [1] }, 'events[0]'],
        ['mode unknown', { mode: 'loud' }, 'mode'],
        ['mode in upper case', { mode: 'CONCISE' }, 'mode'],
        ['messageHistoryCount -1', { messageHistoryCount: -1 }, 'messageHistoryCount'],
        ['messageHistoryCount 51', { messageHistoryCount: 51 }, 'messageHistoryCount'],
        ['messageHistoryCount 1.5', { messageHistoryCount: 1.5 }, 'messageHistoryCount'],
        ['messageHistoryCount "10"', { messageHistoryCount: '10' }, 'messageHistoryCount'],
        ['messageHistoryCount null', { messageHistoryCount: null }, 'messageHistoryCount'],
        ['url missing', { url: undefined }, 'url is required'],
        ['url not a string', { url: 42 }, 'url'],
        ['an unknown argument', { secret: 'a'.repeat(64) }, 'secret is not a known argument'],
        ['another unknown argument', { status: 'disabled' }, 'status is not a known argument'],
        ['an unknown channelScope field', { channelScope: { allChannels: true, lines: [] } }, 'channelScope.lines is not a known argument'],
        ['channelScope not an object', { channelScope: 'all' }, 'channelScope'],
        ['channelScope without allChannels', { channelScope: { channels: [] } }, 'channelScope.allChannels is required'],
      ])('%s', async (_, patch, named) => {
        const args: Record<string, unknown> = { url: hookUrl(), events: ['message.received'], ...patch };
        for (const key of Object.keys(args)) if (args[key] === undefined) delete args[key];
        const message = await toolError(t, s.apiKey, 'register_webhook', args);
        expect(message).toContain(named);
      });

      it('every event kind refusal lists what is allowed', async () => {
        const message = await registerError(s, { events: ['message.deleted'] });
        for (const kind of EVENT_KINDS) expect(message).toContain(kind);
      });
    });
  });

  describe('channelScope', () => {
    let s: Session;
    beforeAll(async () => {
      s = await createSession(t.admin, { tier: 'POWER' });
    });

    const channel = (line: SessionLine) => ({ channelType: line.type, channelId: line.id });

    it('accepts lines of the caller, and lists them sorted in the answer', async () => {
      const { endpoint } = await register(s, { channelScope: { allChannels: false, channels: [channel(phoneOf(s)), channel(emailOf(s))] } });
      const expected = [channel(emailOf(s)), channel(phoneOf(s))].sort((a, b) => a.channelId.localeCompare(b.channelId));
      expect(endpoint.channelScope).toEqual({ allChannels: false, channels: expected });
      expect(await scopeRows(endpoint.id)).toEqual(expected.map((c) => ({ line_id: c.channelId, channel_type: c.channelType })));
      expect((await row(endpoint.id))!.all_channels).toBe(false);
      expect((await toolOk(t, s.apiKey, 'get_webhook', { endpointId: endpoint.id })).endpoint.channelScope).toEqual(endpoint.channelScope);
      await toolOk(t, s.apiKey, 'delete_webhook', { endpointId: endpoint.id });
    });

    it('accepts an explicit allChannels true with an empty channels list', async () => {
      const { endpoint } = await register(s, { channelScope: { allChannels: true, channels: [] } });
      expect(endpoint.channelScope).toEqual({ allChannels: true, channels: [] });
      await toolOk(t, s.apiKey, 'delete_webhook', { endpointId: endpoint.id });
    });

    describe('refuses scope mistakes, naming the field, and stores nothing', () => {
      afterEach(async () => {
        expect(await endpointCount(s.userId)).toBe(0);
      });

      it('allChannels false with no channels', async () => {
        expect(await registerError(s, { channelScope: { allChannels: false } })).toBe(
          'channelScope.channels must hold at least 1 entry when allChannels is false',
        );
        expect(await registerError(s, { channelScope: { allChannels: false, channels: [] } })).toBe(
          'channelScope.channels must hold at least 1 entry when allChannels is false',
        );
      });

      it('channels given while allChannels is true', async () => {
        expect(await registerError(s, { channelScope: { allChannels: true, channels: [channel(emailOf(s))] } })).toBe(
          'channelScope.channels must be empty when allChannels is true',
        );
      });

      it('a line of another org', async () => {
        const other = await createSession(t.admin);
        const foreign = emailOf(other);
        const message = await registerError(s, { channelScope: { allChannels: false, channels: [channel(foreign)] } });
        expect(message).toContain('channelScope.channels[0].channelId');
        expect(message).toContain(foreign.id);
      });

      it('a line of the org the user is not a member of', async () => {
        const res = await t.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'EMAIL_ACCOUNT', address: uniqueEmail('shared') });
        expect(res.status).toBe(201);
        const message = await registerError(s, {
          channelScope: { allChannels: false, channels: [channel(emailOf(s)), { channelType: 'EMAIL_ACCOUNT', channelId: res.body.id }] },
        });
        expect(message).toContain('channelScope.channels[1].channelId');
        expect(message).toContain(res.body.id);
      });

      it('a channelType that does not match the line', async () => {
        const message = await registerError(s, {
          channelScope: { allChannels: false, channels: [{ channelType: 'PHONE_NUMBER', channelId: emailOf(s).id }] },
        });
        expect(message).toBe(`channelScope.channels[0].channelType: line ${emailOf(s).id} is a EMAIL_ACCOUNT, not a PHONE_NUMBER`);
      });

      it('a deleted line', async () => {
        const owner = await createSession(t.admin);
        const line = phoneOf(owner);
        expect(await toolOk(t, owner.apiKey, 'list_phone_numbers', {})).toEqual({
          phoneNumbers: [{ id: line.id, channelType: 'PHONE_NUMBER', phoneNumber: line.address }],
        });
        expect((await t.admin.delete(`/admin/lines/${line.id}`)).status).toBe(204);
        expect(await toolOk(t, owner.apiKey, 'list_phone_numbers', {})).toEqual({ phoneNumbers: [] });
        const message = await registerError(owner, { channelScope: { allChannels: false, channels: [channel(line)] } });
        expect(message).toContain('channelScope.channels[0].channelId');
        expect(await endpointCount(owner.userId)).toBe(0);
      });

      it('a line id that does not exist', async () => {
        const id = randomUUID();
        expect(await registerError(s, { channelScope: { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: id }] } })).toContain(id);
      });

      it.each([
        ['a channelId that is not an id', [{ channelType: 'EMAIL_ACCOUNT', channelId: 'inbox@example.com' }], 'channelScope.channels[0].channelId'],
        ['an unknown channelType', [{ channelType: 'SMS', channelId: '00000000-0000-4000-8000-000000000000' }], 'channelScope.channels[0].channelType'],
        ['a channel without channelType', [{ channelId: '00000000-0000-4000-8000-000000000000' }], 'channelScope.channels[0].channelType is required'],
        [
          'an unknown channel field',
          [{ channelType: 'EMAIL_ACCOUNT', channelId: '00000000-0000-4000-8000-000000000000', x: 1 }],
          'channelScope.channels[0].x is not a known argument',
        ],
        ['channels not an array', { channelType: 'EMAIL_ACCOUNT' }, 'channelScope.channels'],
      ])('%s', async (_, channels, named) => {
        expect(await registerError(s, { channelScope: { allChannels: false, channels } })).toContain(named);
      });

      it('the same line twice', async () => {
        const message = await registerError(s, { channelScope: { allChannels: false, channels: [channel(emailOf(s)), channel(emailOf(s))] } });
        expect(message).toContain('channelScope.channels');
      });
    });

    it('update_webhook replaces the scope wholesale', async () => {
      const email = channel(emailOf(s));
      const phone = channel(phoneOf(s));
      const sorted = (...list: Array<{ channelId: string }>) => [...list].sort((a, b) => a.channelId.localeCompare(b.channelId));
      const { endpoint } = await register(s, { channelScope: { allChannels: false, channels: [email] } });
      const update = (channelScope: unknown) => toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, channelScope });
      const stored = async () => (await scopeRows(endpoint.id)).map((r) => ({ channelId: r.line_id, channelType: r.channel_type }));

      let answer = await update({ allChannels: false, channels: [phone] });
      expect(answer.endpoint.channelScope).toEqual({ allChannels: false, channels: [phone] });
      expect(await stored()).toEqual([phone]);

      answer = await update({ allChannels: false, channels: [email, phone] });
      expect(answer.endpoint.channelScope).toEqual({ allChannels: false, channels: sorted(email, phone) });
      expect(await stored()).toEqual(sorted(email, phone));

      answer = await update({ allChannels: false, channels: [email] });
      expect(answer.endpoint.channelScope).toEqual({ allChannels: false, channels: [email] });
      expect(await stored()).toEqual([email]);

      // An update without channelScope keeps it.
      answer = await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, mode: 'verbose' });
      expect(answer.endpoint.channelScope).toEqual({ allChannels: false, channels: [email] });
      expect(await stored()).toEqual([email]);

      answer = await update({ allChannels: true });
      expect(answer.endpoint.channelScope).toEqual({ allChannels: true, channels: [] });
      expect(await stored()).toEqual([]);
      expect((await row(endpoint.id))!.all_channels).toBe(true);

      answer = await update({ allChannels: false, channels: [phone, email] });
      expect(answer.endpoint.channelScope).toEqual({ allChannels: false, channels: sorted(email, phone) });
      expect(await stored()).toEqual(sorted(email, phone));
      expect((await toolOk(t, s.apiKey, 'get_webhook', { endpointId: endpoint.id })).endpoint.channelScope).toEqual(answer.endpoint.channelScope);

      // A refused scope leaves the stored one as it was.
      expect(await toolError(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, channelScope: { allChannels: false, channels: [] } })).toContain(
        'channelScope.channels',
      );
      expect(await stored()).toEqual(sorted(email, phone));
      await toolOk(t, s.apiKey, 'delete_webhook', { endpointId: endpoint.id });
    });
  });

  describe('a key limited to some lines (LINES)', () => {
    let s: Session;
    let linesKey: string;
    beforeAll(async () => {
      s = await createSession(t.admin, { tier: 'POWER' });
      const res = await t.admin.post(`/admin/users/${s.userId}/api-keys`, {
        name: 'email only',
        channelAccess: { mode: 'LINES', lines: [emailOf(s).address] },
      });
      expect(res.status).toBe(201);
      linesKey = res.body.key;
    });

    it('sees only its lines', async () => {
      expect(await toolOk(t, linesKey, 'list_email_accounts', {})).toEqual({
        emailAccounts: [{ id: emailOf(s).id, channelType: 'EMAIL_ACCOUNT', emailAddress: emailOf(s).address, isActive: true, lastSyncedAt: null }],
      });
      expect(await toolOk(t, linesKey, 'list_phone_numbers', {})).toEqual({ phoneNumbers: [] });
    });

    it('cannot register for all channels, explicitly or by default', async () => {
      const before = await endpointCount(s.userId);
      for (const args of [{ channelScope: { allChannels: true } }, {}]) {
        const message = await registerError(linesKey, args);
        expect(message).toContain('channelScope');
        expect(message).toContain('limited to specific lines');
      }
      expect(await endpointCount(s.userId)).toBe(before);
    });

    it('registers a scope within its lines, but not a line outside them', async () => {
      const { endpoint } = await register(linesKey, {
        channelScope: { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: emailOf(s).id }] },
      });
      expect(endpoint.channelScope).toEqual({ allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: emailOf(s).id }] });

      const outside = await registerError(linesKey, {
        channelScope: {
          allChannels: false,
          channels: [
            { channelType: 'EMAIL_ACCOUNT', channelId: emailOf(s).id },
            { channelType: 'PHONE_NUMBER', channelId: phoneOf(s).id },
          ],
        },
      });
      expect(outside).toContain('channelScope.channels[1].channelId');
      expect(outside).toContain(phoneOf(s).id);
    });

    it('cannot widen an endpoint with update_webhook', async () => {
      const { endpoint } = await register(linesKey, {
        channelScope: { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: emailOf(s).id }] },
      });
      const toAll = await toolError(t, linesKey, 'update_webhook', { endpointId: endpoint.id, channelScope: { allChannels: true } });
      expect(toAll).toContain('limited to specific lines');
      const toPhone = await toolError(t, linesKey, 'update_webhook', {
        endpointId: endpoint.id,
        channelScope: { allChannels: false, channels: [{ channelType: 'PHONE_NUMBER', channelId: phoneOf(s).id }] },
      });
      expect(toPhone).toContain('channelScope.channels[0].channelId');
      expect(await scopeRows(endpoint.id)).toEqual([{ line_id: emailOf(s).id, channel_type: 'EMAIL_ACCOUNT' }]);
      expect((await row(endpoint.id))!.all_channels).toBe(false);

      // The user's unrestricted key may widen it.
      const widened = await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, channelScope: { allChannels: true } });
      expect(widened.endpoint.channelScope).toEqual({ allChannels: true, channels: [] });
    });
  });

  describe('endpoint caps', () => {
    it.each([
      ['STARTER', 1],
      ['PRO', 3],
      ['POWER', 10],
    ] as const)('%s: %i endpoints per user, then a refusal that gives the cap', async (tier, cap) => {
      const s = await createSession(t.admin, { tier });
      for (let i = 0; i < cap; i += 1) await register(s);
      const message = await registerError(s, {});
      expect(message).toBe(
        `endpoint cap reached: you may have at most ${cap} webhook endpoint(s) (the ${tier} tier's limit); ` +
          'delete an endpoint, upgrade the tier, or ask an administrator for an endpoint-cap grant',
      );
      expect(await endpointCount(s.userId)).toBe(cap);

      // The cap is per user: a colleague in the same org has their own.
      const colleague = await createSession(t.admin, { orgId: s.orgId });
      await register(colleague);

      // Deleting one frees a place.
      const { endpoints } = await toolOk(t, s.apiKey, 'list_webhooks', {});
      expect(endpoints).toHaveLength(cap);
      await toolOk(t, s.apiKey, 'delete_webhook', { endpointId: endpoints[0].id });
      await register(s);
      expect(await endpointCount(s.userId)).toBe(cap);
    });

    it('an admin grant raises and lowers the cap; removing it restores the tier cap', async () => {
      const s = await createSession(t.admin, { tier: 'STARTER' });
      const capPath = `/admin/orgs/${s.orgId}/endpoint-cap`;
      await register(s);
      expect(await registerError(s, {})).toContain('at most 1 webhook endpoint(s)');

      expect((await t.admin.put(capPath, { maxEndpointsPerUser: 3, reason: 'pilot' })).status).toBe(200);
      await register(s);
      await register(s);
      expect(await registerError(s, {})).toBe(
        'endpoint cap reached: you may have at most 3 webhook endpoint(s) (set by an administrator grant for your org); ' +
          'delete an endpoint, upgrade the tier, or ask an administrator for an endpoint-cap grant',
      );
      expect(await endpointCount(s.userId)).toBe(3);

      // Lowered below what the user has: existing endpoints stay, new ones are refused.
      expect((await t.admin.put(capPath, { maxEndpointsPerUser: 2, reason: 'abuse hold' })).status).toBe(200);
      expect(await registerError(s, {})).toContain('at most 2 webhook endpoint(s) (set by an administrator grant');
      expect(await endpointCount(s.userId)).toBe(3);
      const { endpoints } = await toolOk(t, s.apiKey, 'list_webhooks', {});
      await toolOk(t, s.apiKey, 'delete_webhook', { endpointId: endpoints[0].id });
      expect(await registerError(s, {})).toContain('at most 2');
      await toolOk(t, s.apiKey, 'delete_webhook', { endpointId: endpoints[1].id });
      await register(s);
      expect(await endpointCount(s.userId)).toBe(2);

      // Zero: nobody in the org may register.
      expect((await t.admin.put(capPath, { maxEndpointsPerUser: 0, reason: 'frozen' })).status).toBe(200);
      const colleague = await createSession(t.admin, { orgId: s.orgId });
      expect(await registerError(colleague, {})).toContain('at most 0 webhook endpoint(s)');

      // Removed: back to the STARTER tier's 1.
      expect((await t.admin.delete(capPath, { reason: 'pilot over' })).status).toBe(200);
      await register(colleague);
      expect(await registerError(colleague, {})).toContain("at most 1 webhook endpoint(s) (the STARTER tier's limit)");
      expect(await registerError(s, {})).toContain("at most 1 webhook endpoint(s) (the STARTER tier's limit)");
    });

    it('an expired grant no longer counts', async () => {
      const s = await createSession(t.admin, { tier: 'STARTER' });
      const expiresAt = new Date(Date.now() - 1000).toISOString();
      expect((await t.admin.put(`/admin/orgs/${s.orgId}/endpoint-cap`, { maxEndpointsPerUser: 5, reason: 'old', expiresAt })).status).toBe(200);
      await register(s);
      expect(await registerError(s, {})).toContain("at most 1 webhook endpoint(s) (the STARTER tier's limit)");
    });

    it('two registrations at once with one place left: exactly one succeeds', async () => {
      const s = await createSession(t.admin, { tier: 'PRO' });
      await register(s);
      await register(s);
      const results = await Promise.all([1, 2].map(() => callTool(t, s.apiKey, 'register_webhook', { url: hookUrl(), events: ['message.sent'] })));
      expect(results.filter((r) => !r.isError)).toHaveLength(1);
      const refused = results.filter((r) => r.isError);
      expect(refused).toHaveLength(1);
      expect(refused[0].content[0].text).toContain('at most 3 webhook endpoint(s)');
      expect(await endpointCount(s.userId)).toBe(3);
    });

    it('a burst of registrations never passes the cap', async () => {
      const s = await createSession(t.admin, { tier: 'STARTER' });
      const results = await Promise.all(
        Array.from({ length: 6 }, () => callTool(t, s.apiKey, 'register_webhook', { url: hookUrl(), events: ['message.sent'] })),
      );
      expect(results.filter((r) => !r.isError)).toHaveLength(1);
      expect(await endpointCount(s.userId)).toBe(1);
    });
  });

  describe('update_webhook', () => {
    it('changes only the fields given', async () => {
      const s = await createSession(t.admin);
      const { endpoint } = await register(s, { events: ['message.received'] });
      const url = hookUrl();
      const { endpoint: updated } = await toolOk(t, s.apiKey, 'update_webhook', {
        endpointId: endpoint.id,
        url,
        events: ['agent_turn.sent', 'email.opened'],
        mode: 'verbose',
        messageHistoryCount: 25,
      });
      expect(updated).toEqual({
        ...endpoint,
        url,
        events: ['agent_turn.sent', 'email.opened'],
        mode: 'verbose',
        messageHistoryCount: 25,
        updatedAt: expect.stringMatching(ISO_MS),
      });
      expect(Date.parse(updated.updatedAt)).toBeGreaterThanOrEqual(Date.parse(endpoint.updatedAt));
      expect(await row(endpoint.id)).toMatchObject({ url, events: ['agent_turn.sent', 'email.opened'], mode: 'verbose', message_history_count: 25 });

      const { endpoint: same } = await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id });
      expect({ ...same, updatedAt: null }).toEqual({ ...updated, updatedAt: null });
    });

    it('refuses bad values with isError naming them, and changes nothing', async () => {
      const s = await createSession(t.admin);
      const { endpoint } = await register(s);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ url: 'https://10.0.0.1/hook' }, 'url'],
        [{ url: 'http://hooks.example.com/plain' }, 'url must use https'],
        [{ events: [] }, 'events'],
        [{ events: ['nope'] }, 'events[0]'],
        [{ mode: 'full' }, 'mode'],
        [{ messageHistoryCount: 51 }, 'messageHistoryCount'],
        [{ messageHistoryCount: -1 }, 'messageHistoryCount'],
        [{ status: 'paused' }, 'status'],
        [{ signatureVersion: 'v2' }, 'signatureVersion'],
        [{ legacySignature: 'no' }, 'legacySignature'],
        [{ secret: 'x' }, 'secret is not a known argument'],
        [{ endpointId: 'not-a-uuid' }, 'endpointId'],
      ];
      for (const [patch, named] of cases) {
        expect(await toolError(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, ...patch })).toContain(named);
      }
      expect(await toolError(t, s.apiKey, 'update_webhook', { mode: 'verbose' })).toBe('invalid arguments: endpointId is required');
      expect((await toolOk(t, s.apiKey, 'get_webhook', { endpointId: endpoint.id })).endpoint).toEqual(endpoint);
    });

    it('status disabled stops the endpoint; active re-enables it and resets the failure counter', async () => {
      const s = await createSession(t.admin);
      const { endpoint } = await register(s);

      const disabled = await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, status: 'disabled' });
      expect(disabled.endpoint).toMatchObject({ status: 'disabled', disabledReason: 'disabled with update_webhook' });
      expect(await row(endpoint.id)).toMatchObject({ status: 'disabled', disabled_reason: 'disabled with update_webhook' });
      expect((await toolOk(t, s.apiKey, 'get_webhook', { endpointId: endpoint.id })).endpoint.status).toBe('disabled');

      await t.db.query("UPDATE webhook_endpoints SET consecutive_failures = 5, failing_since = now() - interval '3 hours' WHERE id = $1", [endpoint.id]);
      // Disabling again keeps it disabled and touches nothing else.
      await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, status: 'disabled' });
      expect(await row(endpoint.id)).toMatchObject({ status: 'disabled', consecutive_failures: 5 });

      const enabled = await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, status: 'active' });
      expect(enabled.endpoint).toMatchObject({ status: 'active', disabledReason: null });
      expect(await row(endpoint.id)).toMatchObject({ status: 'active', disabled_reason: null, consecutive_failures: 0, failing_since: null });
    });
  });

  it('gives a new secret only in structuredContent, never in the text block a model reads', async () => {
    const s = await createSession(t.admin);
    for (const call of [
      () => callTool(t, s.apiKey, 'register_webhook', { url: hookUrl(), events: ['message.received'] }),
      async () => {
        const { endpoint } = await toolOk(t, s.apiKey, 'get_webhook', { endpointId: (await toolOk(t, s.apiKey, 'list_webhooks')).endpoints[0].id });
        return callTool(t, s.apiKey, 'rotate_webhook_secret', { endpointId: endpoint.id });
      },
    ]) {
      const result = await call();
      const secret = (result.structuredContent as { secret: string }).secret;
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      expect(result.content).toHaveLength(1);
      expect(result.content[0].text).not.toContain(secret);
      const signingSecret = (result.structuredContent as { signingSecret: string }).signingSecret;
      expect(result.content[0].text).not.toContain(signingSecret);
      const withheld = 'withheld from this text; read it from structuredContent';
      expect(JSON.parse(result.content[0].text)).toEqual({ ...result.structuredContent, secret: withheld, signingSecret: withheld });
    }
  });

  describe('rotate_webhook_secret', () => {
    it('returns a new secret once; the previous one stays valid for 24 hours', async () => {
      const s = await createSession(t.admin);
      const box = t.app.get(SecretBox);
      const { endpoint, secret: first } = await register(s);
      const before = Date.now();
      const rotated = await toolOk(t, s.apiKey, 'rotate_webhook_secret', { endpointId: endpoint.id });
      const after = Date.now();
      expect(Object.keys(rotated).sort()).toEqual(['endpoint', 'secret', 'signingSecret']);
      expect(rotated.signingSecret).toBe(`whsec_${Buffer.from(rotated.secret, 'utf8').toString('base64')}`);
      expect(rotated.secret).toMatch(/^[0-9a-f]{64}$/);
      expect(rotated.secret).not.toBe(first);
      expect(rotated.endpoint).toEqual({ ...endpoint, updatedAt: expect.stringMatching(ISO_MS) });

      const stored = await t.db.query('SELECT secret_sealed, previous_secret_sealed, previous_secret_expires_at FROM webhook_endpoints WHERE id = $1', [
        endpoint.id,
      ]);
      const { secret_sealed: current, previous_secret_sealed: previous, previous_secret_expires_at: expires } = stored[0];
      expect(box.open(current)).toBe(rotated.secret);
      expect(box.open(previous)).toBe(first);
      expect(current).not.toContain(rotated.secret);
      expect(previous).not.toContain(first);
      const day = 24 * 60 * 60 * 1000;
      expect((expires as Date).getTime()).toBeGreaterThanOrEqual(before + day - 1000);
      expect((expires as Date).getTime()).toBeLessThanOrEqual(after + day + 1000);

      // The new secret is not shown anywhere else either.
      expect(JSON.stringify(await toolOk(t, s.apiKey, 'get_webhook', { endpointId: endpoint.id }))).not.toContain(rotated.secret);

      const again = await toolOk(t, s.apiKey, 'rotate_webhook_secret', { endpointId: endpoint.id });
      expect(again.secret).not.toBe(rotated.secret);
      const [latest] = await t.db.query('SELECT secret_sealed, previous_secret_sealed FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
      expect(box.open(latest.secret_sealed)).toBe(again.secret);
      expect(box.open(latest.previous_secret_sealed)).toBe(rotated.secret);
    });
  });

  describe('Standard Webhooks settings', () => {
    const WHPK = /^whpk_[A-Za-z0-9+/]{43}=$/;

    it('register_webhook with signatureVersion v1a shows the public key, seals the private key, and get/list show it', async () => {
      const s = await createSession(t.admin);
      const box = t.app.get(SecretBox);
      const answer = await register(s, { signatureVersion: 'v1a', legacySignature: false });
      expect(answer.endpoint).toMatchObject({ signatureVersion: 'v1a', legacySignature: false, publicKey: expect.stringMatching(WHPK) });
      const stored = await row(answer.endpoint.id);
      expect(stored).toMatchObject({ signature_version: 'v1a', legacy_signature: false, public_key: answer.endpoint.publicKey });
      // The private key is sealed: it opens to a PKCS#8 key whose public half is the one shown.
      const { createPrivateKey, createPublicKey } = await import('node:crypto');
      const privateKey = createPrivateKey({ key: Buffer.from(box.open(stored!.signing_key_sealed), 'base64'), format: 'der', type: 'pkcs8' });
      const x = createPublicKey(privateKey).export({ format: 'jwk' }).x!;
      expect(answer.endpoint.publicKey).toBe(`whpk_${Buffer.from(x, 'base64url').toString('base64')}`);
      expect((await toolOk(t, s.apiKey, 'get_webhook', { endpointId: answer.endpoint.id })).endpoint).toEqual(answer.endpoint);
      expect((await toolOk(t, s.apiKey, 'list_webhooks', {})).endpoints).toEqual([answer.endpoint]);
      expect(JSON.stringify(await toolOk(t, s.apiKey, 'list_webhooks', {}))).not.toContain(stored!.signing_key_sealed);
    });

    it('update_webhook switches to v1a (a new key pair) and back to v1 (the keys dropped), and turns the legacy header off and on', async () => {
      const s = await createSession(t.admin);
      const { endpoint } = await register(s);
      const v1a = (await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, signatureVersion: 'v1a' })).endpoint;
      expect(v1a).toEqual({ ...endpoint, signatureVersion: 'v1a', publicKey: expect.stringMatching(WHPK), updatedAt: expect.stringMatching(ISO_MS) });
      // Asking for v1a again keeps the key.
      expect((await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, signatureVersion: 'v1a' })).endpoint.publicKey).toBe(v1a.publicKey);
      const off = (await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, legacySignature: false })).endpoint;
      expect(off).toMatchObject({ legacySignature: false, signatureVersion: 'v1a', publicKey: v1a.publicKey });
      const back = (await toolOk(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, signatureVersion: 'v1', legacySignature: true })).endpoint;
      expect(back).toMatchObject({ signatureVersion: 'v1', legacySignature: true, publicKey: null });
      expect(await row(endpoint.id)).toMatchObject({
        signing_key_sealed: null,
        public_key: null,
        previous_signing_key_sealed: null,
        previous_public_key: null,
      });
    });

    it('refuses a bad signatureVersion or legacySignature at registration, naming the field, and registers nothing', async () => {
      const s = await createSession(t.admin);
      expect(await registerError(s, { signatureVersion: 'v2' })).toContain('signatureVersion');
      expect(await registerError(s, { legacySignature: 'false' })).toContain('legacySignature');
      expect(await endpointCount(s.userId)).toBe(0);
    });

    it('rotate_webhook_secret of a v1a endpoint rotates its key pair too, keeping the previous one for 24 hours', async () => {
      const s = await createSession(t.admin);
      const box = t.app.get(SecretBox);
      const { endpoint } = await register(s, { signatureVersion: 'v1a' });
      const before = await row(endpoint.id);
      const rotated = await toolOk(t, s.apiKey, 'rotate_webhook_secret', { endpointId: endpoint.id });
      expect(rotated.endpoint.publicKey).toMatch(WHPK);
      expect(rotated.endpoint.publicKey).not.toBe(endpoint.publicKey);
      const after = await row(endpoint.id);
      expect(after).toMatchObject({ public_key: rotated.endpoint.publicKey, previous_public_key: endpoint.publicKey });
      expect(box.open(after!.previous_signing_key_sealed)).toBe(box.open(before!.signing_key_sealed));
      expect(after!.previous_secret_expires_at).not.toBeNull();
    });
  });

  describe('delete_webhook', () => {
    it('deletes irreversibly, with its scope and its deliveries', async () => {
      const s = await createSession(t.admin);
      const { endpoint } = await register(s, { channelScope: { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: emailOf(s).id }] } });
      const deliveryId = await insertDelivery(endpoint.id, s.userId);

      expect(await toolOk(t, s.apiKey, 'delete_webhook', { endpointId: endpoint.id })).toEqual({ deleted: true, endpointId: endpoint.id });
      expect(await row(endpoint.id)).toBeUndefined();
      expect(await scopeRows(endpoint.id)).toEqual([]);
      expect(await t.db.query('SELECT id FROM webhook_deliveries WHERE id = $1', [deliveryId])).toEqual([]);

      const notFound = `webhook endpoint ${endpoint.id} not found`;
      expect(await toolError(t, s.apiKey, 'get_webhook', { endpointId: endpoint.id })).toBe(notFound);
      expect(await toolError(t, s.apiKey, 'delete_webhook', { endpointId: endpoint.id })).toBe(notFound);
      expect(await toolError(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, mode: 'verbose' })).toBe(notFound);
      expect(await toolError(t, s.apiKey, 'rotate_webhook_secret', { endpointId: endpoint.id })).toBe(notFound);
      expect(await toolError(t, s.apiKey, 'list_webhook_deliveries', { endpointId: endpoint.id })).toBe(notFound);
      expect(await toolError(t, s.apiKey, 'resend_webhook_delivery', { deliveryId })).toBe(`webhook delivery ${deliveryId} not found`);
      expect(await toolOk(t, s.apiKey, 'list_webhooks', {})).toEqual({ endpoints: [] });
    });
  });

  describe("ownership: another user's ids read as not found", () => {
    let me: Session;
    let colleague: Session;
    let stranger: Session;
    const theirs: Array<{ who: string; endpoint: Endpoint; deliveryId: string; sealed: string; session: Session }> = [];

    beforeAll(async () => {
      me = await createSession(t.admin);
      colleague = await createSession(t.admin, { orgId: me.orgId });
      stranger = await createSession(t.admin);
      await register(me);
      for (const [who, session] of [
        ['colleague', colleague],
        ['stranger', stranger],
      ] as const) {
        const { endpoint } = await register(session);
        const deliveryId = await insertDelivery(endpoint.id, session.userId);
        const [{ secret_sealed: sealed }] = await t.db.query('SELECT secret_sealed FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
        theirs.push({ who, endpoint, deliveryId, sealed, session });
      }
    });

    it.each(['colleague', 'stranger'])("the %s's endpoint is not found by any tool, and is left untouched", async (who) => {
      const other = theirs.find((x) => x.who === who)!;
      const id = other.endpoint.id;
      const notFound = `webhook endpoint ${id} not found`;
      expect(await toolError(t, me.apiKey, 'get_webhook', { endpointId: id })).toBe(notFound);
      expect(await toolError(t, me.apiKey, 'update_webhook', { endpointId: id, status: 'disabled', url: hookUrl() })).toBe(notFound);
      expect(await toolError(t, me.apiKey, 'rotate_webhook_secret', { endpointId: id })).toBe(notFound);
      expect(await toolError(t, me.apiKey, 'delete_webhook', { endpointId: id })).toBe(notFound);
      expect(await toolError(t, me.apiKey, 'list_webhook_deliveries', { endpointId: id })).toBe(notFound);
      // Exactly what an id that never existed gets.
      const ghost = randomUUID();
      expect(await toolError(t, me.apiKey, 'get_webhook', { endpointId: ghost })).toBe(`webhook endpoint ${ghost} not found`);

      const stored = await row(id);
      expect(stored).toMatchObject({ status: 'active', url: other.endpoint.url, secret_sealed: other.sealed, previous_secret_sealed: null });
      expect((await toolOk(t, other.session.apiKey, 'get_webhook', { endpointId: id })).endpoint).toEqual(other.endpoint);
    });

    it.each(['colleague', 'stranger'])("the %s's delivery cannot be resent", async (who) => {
      const other = theirs.find((x) => x.who === who)!;
      expect(await toolError(t, me.apiKey, 'resend_webhook_delivery', { deliveryId: other.deliveryId })).toBe(`webhook delivery ${other.deliveryId} not found`);
      const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM webhook_deliveries WHERE endpoint_id = $1', [other.endpoint.id]);
      expect(count).toBe(1);
    });

    it("list_webhooks shows only the caller's own endpoints", async () => {
      const mine = await toolOk(t, me.apiKey, 'list_webhooks', {});
      expect(mine.endpoints).toHaveLength(1);
      expect(mine.endpoints.map((e: Endpoint) => e.id)).not.toContain(theirs[0].endpoint.id);
      expect((await toolOk(t, colleague.apiKey, 'list_webhooks', {})).endpoints).toEqual([theirs[0].endpoint]);
    });
  });

  describe('roles', () => {
    it('a MEMBER sees the same tools as the OWNER and may use every webhook tool', async () => {
      const owner = await createSession(t.admin, { role: 'OWNER' });
      const member = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER' });
      const admin = await createSession(t.admin, { orgId: owner.orgId, role: 'ADMIN' });
      const list = async (key: string): Promise<Array<{ name: string }>> => (await rpc(t, key, 'tools/list', {})).body.result.tools;
      const ownerTools = await list(owner.apiKey);
      const ours = (tools: Array<{ name: string }>) => tools.filter((tool) => WEBHOOK_AND_LINE_TOOLS.includes(tool.name));
      expect(ours(ownerTools).map((tool) => tool.name)).toEqual(WEBHOOK_AND_LINE_TOOLS);
      for (const key of [member.apiKey, admin.apiKey]) {
        const tools = await list(key);
        // The same descriptors for the webhook and line tools (all MEMBER-level) ...
        expect(ours(tools)).toEqual(ours(ownerTools));
        // ... and never a tool the OWNER does not see, or sees differently.
        for (const tool of tools) expect(ownerTools).toContainEqual(tool);
      }

      const { endpoint } = await register(member);
      expect(endpoint.status).toBe('active');
      await toolOk(t, member.apiKey, 'update_webhook', { endpointId: endpoint.id, mode: 'verbose' });
      await toolOk(t, member.apiKey, 'rotate_webhook_secret', { endpointId: endpoint.id });
      const deliveryId = await insertDelivery(endpoint.id, member.userId);
      expect((await toolOk(t, member.apiKey, 'list_webhook_deliveries', { endpointId: endpoint.id })).deliveries).toHaveLength(1);
      await toolOk(t, member.apiKey, 'resend_webhook_delivery', { deliveryId });
      expect((await toolOk(t, member.apiKey, 'list_webhooks', {})).endpoints).toHaveLength(1);
      await toolOk(t, member.apiKey, 'delete_webhook', { endpointId: endpoint.id });
      // The org's OWNER does not see, and cannot touch, a member's endpoints either.
      const { endpoint: second } = await register(member);
      expect(await toolError(t, owner.apiKey, 'get_webhook', { endpointId: second.id })).toBe(`webhook endpoint ${second.id} not found`);
    });
  });

  it('a key revoked mid-run gets 401 on its next call, and its endpoints stay', async () => {
    const s = await createSession(t.admin);
    const { endpoint } = await register(s);
    expect((await t.admin.delete(`/admin/api-keys/${s.apiKeyId}`)).status).toBe(204);
    const res = await rpc(t, s.apiKey, 'tools/call', { name: 'delete_webhook', arguments: { endpointId: endpoint.id } });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(await row(endpoint.id)).toBeDefined();
  });
});
