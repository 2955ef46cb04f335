import { createHash, randomUUID } from 'node:crypto';
import { ApiKeysRepository } from '../../src/auth/api-keys.repository';
import { PrincipalRef } from '../../src/identity/principal';
import { PersonApiKeysService, PersonApiKeyView } from '../../src/auth/person-api-keys.service';
import { ForbiddenError, NotFoundError, ValidationError } from '../../src/common/errors';
import { createMcpTestApp, McpTestApp, rpc, toolError, toolOk } from '../support/mcp';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

describe('Settings → API keys: a person manages keys (PersonApiKeysService)', () => {
  let t: McpTestApp;
  let keys: PersonApiKeysService;

  beforeAll(async () => {
    t = await createMcpTestApp();
    keys = t.app.get(PersonApiKeysService);
  });
  afterAll(async () => {
    await t.close();
  });

  const personOf = (s: Session, role: PrincipalRef['role']): PrincipalRef => ({ userId: s.userId, orgId: s.orgId, role });

  /** The phone numbers a key reaches, through a real /api/mcp request. */
  async function phonesOf(key: string): Promise<string[]> {
    const { phoneNumbers } = await toolOk<{ phoneNumbers: Array<{ id: string }> }>(t, key, 'list_phone_numbers', {});
    return phoneNumbers.map((p) => p.id);
  }

  /** The HTTP status of an /api/mcp request with the key. */
  async function mcpStatus(key: string): Promise<number> {
    return (await rpc(t, key, 'tools/call', { name: 'list_phone_numbers', arguments: {} })).status;
  }

  async function keyCount(userId: string): Promise<number> {
    const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM api_keys WHERE user_id = $1', [userId]);
    return count;
  }

  /** An org with an OWNER, an ADMIN and a MEMBER, each with the admin-made key of createSession. */
  async function org() {
    const owner = await createSession(t.admin, { role: 'OWNER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    const admin = await createSession(t.admin, { orgId: owner.orgId, role: 'ADMIN', lines: [] });
    const member = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    return { owner, admin, member, asOwner: personOf(owner, 'OWNER'), asAdmin: personOf(admin, 'ADMIN'), asMember: personOf(member, 'MEMBER') };
  }

  async function expectNotFound(promise: Promise<unknown>, keyId: string) {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ code: 'NOT_FOUND', field: 'keyId', message: `api key ${keyId} not found` });
  }

  async function expectInvalid(promise: Promise<unknown>, field: string, message: RegExp) {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code: 'VALIDATION', field });
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain(field);
  }

  describe('createFor', () => {
    it('returns the secret once; a key with specific lines works on /api/mcp and reaches only those lines', async () => {
      const { owner, asOwner } = await org();
      const [phoneA, phoneB, mail] = owner.lines;
      expect(await phonesOf(owner.apiKey)).toEqual([phoneA.id, phoneB.id]);

      const created = await keys.createFor(asOwner, { name: 'support bot', channelAccess: { mode: 'LINES', lineIds: [phoneA.id, mail.id, phoneA.id] } });
      expect(created.key).toMatch(/^csk_[0-9a-f]{48}$/);
      expect(JSON.parse(JSON.stringify(created.apiKey))).toEqual({
        id: expect.stringMatching(UUID),
        name: 'support bot',
        keyHint: `csk_…${created.key.slice(-4)}`,
        channelAccess: {
          mode: 'LINES',
          lines: [
            { id: phoneA.id, type: 'PHONE_NUMBER', address: phoneA.address },
            { id: mail.id, type: 'EMAIL_ACCOUNT', address: mail.address },
          ],
        },
        permissions: ['read', 'send', 'webhooks'],
        createdAt: expect.any(String),
        lastUsedAt: null,
        owner: { userId: owner.userId, email: owner.email },
        mine: true,
      });
      const [row] = await t.db.query('SELECT key_hash, user_id, allowed_addresses FROM api_keys WHERE id = $1', [created.apiKey.id]);
      expect(row).toEqual({ key_hash: sha256(created.key), user_id: owner.userId, allowed_addresses: [phoneA.address, mail.address] });

      expect(await phonesOf(created.key)).toEqual([phoneA.id]);
      const { emailAccounts } = await toolOk<{ emailAccounts: Array<{ id: string }> }>(t, created.key, 'list_email_accounts', {});
      expect(emailAccounts.map((a) => a.id)).toEqual([mail.id]);

      const all = await keys.createFor(asOwner, { name: 'everything', channelAccess: { mode: 'ALL' } });
      expect(all.apiKey.channelAccess).toEqual({ mode: 'ALL' });
      expect(await phonesOf(all.key)).toEqual([phoneA.id, phoneB.id]);
    });

    it.each<[string, (s: { own: string; orgLine: string; otherOrgLine: string }) => unknown, string, RegExp]>([
      ['an empty name', () => ({ name: '', channelAccess: { mode: 'ALL' } }), 'name', /should not be empty/],
      ['a name of blanks', () => ({ name: '   ', channelAccess: { mode: 'ALL' } }), 'name', /should not be empty/],
      ['a name of 201 characters', () => ({ name: 'é'.repeat(201), channelAccess: { mode: 'ALL' } }), 'name', /at most 200 characters/],
      ['a name that is not a string', () => ({ name: 5, channelAccess: { mode: 'ALL' } }), 'name', /must be a string/],
      ['a mode outside the enum', () => ({ name: 'k', channelAccess: { mode: 'SOME' } }), 'channelAccess.mode', /one of ALL, LINES/],
      ['no channelAccess', () => ({ name: 'k' }), 'channelAccess', /must be an object/],
      ['no permissions', () => ({ name: 'k', channelAccess: { mode: 'ALL' }, permissions: [] }), 'permissions', /at least one of read, send, draft, webhooks/],
      ['an unknown permission', () => ({ name: 'k', channelAccess: { mode: 'ALL' }, permissions: ['read', 'all'] }), 'permissions', /"all" is not/],
      ['permissions that are not a list', () => ({ name: 'k', channelAccess: { mode: 'ALL' }, permissions: 'read' }), 'permissions', /must be a list/],
      [
        'lineIds with mode ALL',
        (s) => ({ name: 'k', channelAccess: { mode: 'ALL', lineIds: [s.own] } }),
        'channelAccess.lineIds',
        /only allowed with mode LINES/,
      ],
      ['mode LINES without lineIds', () => ({ name: 'k', channelAccess: { mode: 'LINES' } }), 'channelAccess.lineIds', /at least one line/],
      ['mode LINES with no line', () => ({ name: 'k', channelAccess: { mode: 'LINES', lineIds: [] } }), 'channelAccess.lineIds', /at least one line/],
      ['a line id that is not a string', (s) => ({ name: 'k', channelAccess: { mode: 'LINES', lineIds: [s.own, 7] } }), 'channelAccess.lineIds[1]', /line id/],
      ['an unknown line id', (s) => ({ name: 'k', channelAccess: { mode: 'LINES', lineIds: [s.own, randomUUID()] } }), 'channelAccess.lineIds[1]', /not found/],
      [
        'a line id that is not a UUID',
        () => ({ name: 'k', channelAccess: { mode: 'LINES', lineIds: ['line-1'] } }),
        'channelAccess.lineIds[0]',
        /line-1 not found/,
      ],
      [
        'a line of the org that is not yours',
        (s) => ({ name: 'k', channelAccess: { mode: 'LINES', lineIds: [s.orgLine] } }),
        'channelAccess.lineIds[0]',
        /not one of your lines/,
      ],
      [
        'a line of another org (as unknown)',
        (s) => ({ name: 'k', channelAccess: { mode: 'LINES', lineIds: [s.otherOrgLine] } }),
        'channelAccess.lineIds[0]',
        /not found/,
      ],
    ])('refuses %s naming the field, and creates no key', async (_, input, field, message) => {
      const { owner, member, asMember } = await org();
      const stranger = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
      const body = input({ own: member.lines[0].id, orgLine: owner.lines[0].id, otherOrgLine: stranger.lines[0].id });
      await expectInvalid(keys.createFor(asMember, body as never), field, message);
      expect(await keyCount(member.userId)).toBe(1);
    });

    it('accepts a name of 200 characters, counted as PostgreSQL counts them', async () => {
      const { asMember } = await org();
      const name = '🔑'.repeat(200); // 400 UTF-16 code units, 200 characters
      expect((await keys.createFor(asMember, { name, channelAccess: { mode: 'ALL' } })).apiKey.name).toBe(name);
    });

    it('refuses a line the person lost since the page was drawn', async () => {
      const { member, asMember } = await org();
      expect((await t.admin.delete(`/admin/lines/${member.lines[0].id}/members/${member.userId}`)).status).toBe(204);
      await expectInvalid(
        keys.createFor(asMember, { name: 'k', channelAccess: { mode: 'LINES', lineIds: [member.lines[0].id] } }),
        'channelAccess.lineIds[0]',
        /not one of your lines/,
      );
    });
  });

  describe('listFor', () => {
    it('OWNER and ADMIN see every key of the org, own first, with the owner and no secret or hash; a MEMBER sees only their own', async () => {
      const { owner, admin, member, asOwner, asAdmin, asMember } = await org();
      const memberKey = await keys.createFor(asMember, { name: 'member bot', channelAccess: { mode: 'LINES', lineIds: [member.lines[0].id] } });
      const ownerKey = await keys.createFor(asOwner, { name: 'owner bot', channelAccess: { mode: 'ALL' } });
      const stranger = await createSession(t.admin, { lines: [] });

      const ownerView = await keys.listFor(asOwner);
      expect(ownerView.map((k) => [k.id, k.owner.email, k.mine])).toEqual([
        [owner.apiKeyId, owner.email, true],
        [ownerKey.apiKey.id, owner.email, true],
        [admin.apiKeyId, admin.email, false],
        [member.apiKeyId, member.email, false],
        [memberKey.apiKey.id, member.email, false],
      ]);
      expect(ownerView.find((k) => k.id === memberKey.apiKey.id)).toEqual({
        ...memberKey.apiKey,
        mine: false,
      });

      const json = JSON.stringify(ownerView);
      for (const secret of [owner.apiKey, admin.apiKey, member.apiKey, memberKey.key, ownerKey.key]) {
        expect(json).not.toContain(secret.slice(4));
        expect(json).not.toContain(sha256(secret));
      }
      expect(json).not.toContain(stranger.apiKeyId);
      for (const view of JSON.parse(json) as Array<Record<string, unknown>>) {
        expect(Object.keys(view).sort()).toEqual(['channelAccess', 'createdAt', 'id', 'keyHint', 'lastUsedAt', 'mine', 'name', 'owner', 'permissions']);
      }

      expect((await keys.listFor(asAdmin)).map((k) => [k.id, k.mine])).toEqual([
        [admin.apiKeyId, true],
        [owner.apiKeyId, false],
        [member.apiKeyId, false],
        [memberKey.apiKey.id, false],
        [ownerKey.apiKey.id, false],
      ]);
      expect((await keys.listFor(asMember)).map((k) => [k.id, k.owner.userId, k.mine])).toEqual([
        [member.apiKeyId, member.userId, true],
        [memberKey.apiKey.id, member.userId, true],
      ]);
    });

    it("goes by the person's live role and org, not the session's: a demoted admin sees only their own keys at once", async () => {
      const { admin, asAdmin, asMember } = await org();
      expect((await keys.listFor(asAdmin)).length).toBe(3);
      await t.db.query(`UPDATE users SET role = 'MEMBER' WHERE id = $1`, [admin.userId]);
      expect((await keys.listFor(asAdmin)).map((k) => k.id)).toEqual([admin.apiKeyId]);
      expect(await keys.listFor({ ...asMember, role: 'OWNER' })).toHaveLength(1); // a forged role changes nothing
      const stranger = await createSession(t.admin, { lines: [] });
      expect(await keys.listFor({ ...asMember, orgId: stranger.orgId })).toEqual([]);
    });

    it('shows last used once the key has been used, and a deleted line of the allowlist without an id', async () => {
      const { member, asMember } = await org();
      const created = await keys.createFor(asMember, { name: 'k', channelAccess: { mode: 'LINES', lineIds: [member.lines[0].id] } });
      expect(await phonesOf(created.key)).toEqual([member.lines[0].id]);
      // last_used_at is written off the request's path (not awaited): wait for it, however busy the machine.
      const view: PersonApiKeyView = await waitUntil(async () => {
        const listed = (await keys.listFor(asMember)).find((k) => k.id === created.apiKey.id);
        return listed?.lastUsedAt && listed;
      }, 'the key to show when it was last used');
      expect(view.lastUsedAt).toBeInstanceOf(Date);
      expect(Math.abs(view.lastUsedAt!.getTime() - Date.now())).toBeLessThan(60_000);

      expect((await t.admin.delete(`/admin/lines/${member.lines[0].id}`)).status).toBe(204);
      const after = (await keys.listFor(asMember)).find((k) => k.id === created.apiKey.id)!;
      expect(after.channelAccess).toEqual({ mode: 'LINES', lines: [{ id: null, type: null, address: member.lines[0].address }] });
    });
  });

  describe('permissions', () => {
    it('a key made with only read lists only read tools; the list shows its permissions; an update changes them', async () => {
      const { owner, asOwner } = await org();
      const created = await keys.createFor(asOwner, { name: 'reader', channelAccess: { mode: 'ALL' }, permissions: ['read'] });
      expect(created.apiKey.permissions).toEqual(['read']);
      const listed = await keys.listFor(asOwner);
      expect(listed.find((k) => k.id === created.apiKey.id)!.permissions).toEqual(['read']);
      expect(listed.find((k) => k.id === owner.apiKeyId)!.permissions).toEqual(['read', 'send', 'webhooks']);
      expect(await toolError(t, created.key, 'register_webhook', { url: 'https://hooks.example.com/x', events: ['thread.created'] })).toMatch(
        /^register_webhook needs the webhooks permission/,
      );
      expect(await phonesOf(created.key)).toEqual([owner.lines[0].id, owner.lines[1].id]);

      // Channel access alone keeps the permissions; with permissions given, both change.
      expect((await keys.updateChannelAccessFor(asOwner, created.apiKey.id, { mode: 'ALL' })).permissions).toEqual(['read']);
      const widened = await keys.updateChannelAccessFor(asOwner, created.apiKey.id, { mode: 'LINES', lineIds: [owner.lines[0].id] }, ['webhooks', 'read']);
      expect(widened.permissions).toEqual(['read', 'webhooks']);
      expect(await phonesOf(created.key)).toEqual([owner.lines[0].id]);
      await toolOk(t, created.key, 'list_webhooks', {});

      await expectInvalid(keys.updateChannelAccessFor(asOwner, created.apiKey.id, { mode: 'ALL' }, []), 'permissions', /at least one/);
      const [row] = await t.db.query('SELECT permissions FROM api_keys WHERE id = $1', [created.apiKey.id]);
      expect(row.permissions).toEqual(['read', 'webhooks']);
    });
  });

  describe('updateChannelAccessFor', () => {
    it('changes the scope of an own key; the next /api/mcp request sees it; the secret stays', async () => {
      const { owner, asOwner } = await org();
      const [phoneA, phoneB] = owner.lines;
      const created = await keys.createFor(asOwner, { name: 'k', channelAccess: { mode: 'LINES', lineIds: [phoneA.id] } });
      expect(await phonesOf(created.key)).toEqual([phoneA.id]);

      const swapped = await keys.updateChannelAccessFor(asOwner, created.apiKey.id, { mode: 'LINES', lineIds: [phoneB.id] });
      expect(swapped).toMatchObject({ id: created.apiKey.id, keyHint: created.apiKey.keyHint, mine: true });
      expect(swapped.channelAccess).toEqual({ mode: 'LINES', lines: [{ id: phoneB.id, type: 'PHONE_NUMBER', address: phoneB.address }] });
      expect(swapped).not.toHaveProperty('key');
      expect(await phonesOf(created.key)).toEqual([phoneB.id]);

      expect((await keys.updateChannelAccessFor(asOwner, created.apiKey.id, { mode: 'ALL' })).channelAccess).toEqual({ mode: 'ALL' });
      expect(await phonesOf(created.key)).toEqual([phoneA.id, phoneB.id]);
      const [row] = await t.db.query('SELECT key_hash, allowed_addresses FROM api_keys WHERE id = $1', [created.apiKey.id]);
      expect(row).toEqual({ key_hash: sha256(created.key), allowed_addresses: [] });
    });

    it('refuses a bad scope naming the field and leaves the key as it was', async () => {
      const { owner, member, asMember } = await org();
      const created = await keys.createFor(asMember, { name: 'k', channelAccess: { mode: 'LINES', lineIds: [member.lines[0].id] } });
      await expectInvalid(
        keys.updateChannelAccessFor(asMember, created.apiKey.id, { mode: 'LINES', lineIds: [owner.lines[0].id] }),
        'channelAccess.lineIds[0]',
        /not one of your lines/,
      );
      await expectInvalid(keys.updateChannelAccessFor(asMember, created.apiKey.id, { mode: 'LINES', lineIds: [] }), 'channelAccess.lineIds', /at least one/);
      expect(await phonesOf(created.key)).toEqual([member.lines[0].id]);
    });

    it("OWNER or ADMIN changing another user's key is forbidden; a MEMBER or another org gets not found, as for an unknown id", async () => {
      const { owner, member, asOwner, asAdmin, asMember } = await org();
      const memberKey = await keys.createFor(asMember, { name: 'k', channelAccess: { mode: 'LINES', lineIds: [member.lines[0].id] } });
      for (const person of [asOwner, asAdmin]) {
        const error = await keys.updateChannelAccessFor(person, memberKey.apiKey.id, { mode: 'ALL' }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ForbiddenError);
        expect(error).toMatchObject({ field: 'keyId', message: expect.stringContaining(memberKey.apiKey.id) });
      }
      const strangerOwner = personOf(await createSession(t.admin, { lines: [] }), 'OWNER');
      await expectNotFound(keys.updateChannelAccessFor(asMember, owner.apiKeyId, { mode: 'ALL' }), owner.apiKeyId);
      await expectNotFound(keys.updateChannelAccessFor(strangerOwner, memberKey.apiKey.id, { mode: 'ALL' }), memberKey.apiKey.id);
      const unknown = randomUUID();
      await expectNotFound(keys.updateChannelAccessFor(asMember, unknown, { mode: 'ALL' }), unknown);
      await expectNotFound(keys.updateChannelAccessFor(asMember, 'not-a-uuid', { mode: 'ALL' }), 'not-a-uuid');
      expect(await phonesOf(memberKey.key)).toEqual([member.lines[0].id]);
    });
  });

  describe('revokeFor', () => {
    it('revokes an own key: the next /api/mcp request with it gets 401, other keys still work', async () => {
      const { member, asMember } = await org();
      const created = await keys.createFor(asMember, { name: 'k', channelAccess: { mode: 'ALL' } });
      expect(await mcpStatus(created.key)).toBe(200);
      await keys.revokeFor(asMember, created.apiKey.id);
      expect(await mcpStatus(created.key)).toBe(401);
      expect(await mcpStatus(member.apiKey)).toBe(200);
      await expectNotFound(keys.revokeFor(asMember, created.apiKey.id), created.apiKey.id);
    });

    it("OWNER and ADMIN revoke another user's key of their org; it gets 401 at once", async () => {
      const { owner, member, asOwner, asAdmin } = await org();
      await keys.revokeFor(asAdmin, member.apiKeyId);
      expect(await mcpStatus(member.apiKey)).toBe(401);
      const admin2 = await createSession(t.admin, { orgId: owner.orgId, role: 'ADMIN', lines: [] });
      await keys.revokeFor(asOwner, admin2.apiKeyId);
      expect(await mcpStatus(admin2.apiKey)).toBe(401);
      expect(await mcpStatus(owner.apiKey)).toBe(200);
    });

    it("a MEMBER revoking someone else's key, or another org's OWNER, gets not found, as for an unknown id, and the key still works", async () => {
      const { owner, admin, asMember } = await org();
      const strangerOwner = personOf(await createSession(t.admin, { lines: [] }), 'OWNER');
      await expectNotFound(keys.revokeFor(asMember, owner.apiKeyId), owner.apiKeyId);
      await expectNotFound(keys.revokeFor(asMember, admin.apiKeyId), admin.apiKeyId);
      await expectNotFound(keys.revokeFor(strangerOwner, owner.apiKeyId), owner.apiKeyId);
      await expectNotFound(keys.revokeFor({ ...strangerOwner, orgId: owner.orgId }, owner.apiKeyId), owner.apiKeyId); // a forged org
      const unknown = randomUUID();
      await expectNotFound(keys.revokeFor(asMember, unknown), unknown);
      await expectNotFound(keys.revokeFor(asMember, 'not-a-uuid'), 'not-a-uuid');
      expect(await mcpStatus(owner.apiKey)).toBe(200);
      expect(await mcpStatus(admin.apiKey)).toBe(200);
      expect(await t.app.get(ApiKeysRepository).exists(owner.apiKeyId)).toBe(true);
    });

    it('a demoted admin can no longer revoke the org keys', async () => {
      const { owner, admin, asAdmin } = await org();
      await t.db.query(`UPDATE users SET role = 'MEMBER' WHERE id = $1`, [admin.userId]);
      await expectNotFound(keys.revokeFor(asAdmin, owner.apiKeyId), owner.apiKeyId);
      expect(await mcpStatus(owner.apiKey)).toBe(200);
    });
  });
});
