import { createHash, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { TestApp } from '../support/app';
import { createSession, uniqueEmail, uniquePhone } from '../support/session';
import { createWhoAmIApp, whoami } from '../support/whoami';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

describe('admin REST: API keys', () => {
  let t: TestApp;
  let db: DataSource;
  beforeAll(async () => {
    t = await createWhoAmIApp();
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
  });

  function expect400(res: { status: number; body: { message?: string; field?: string } }, field: string) {
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request', field });
    expect(res.body.message).toContain(field);
  }

  describe('POST /admin/users/:userId/api-keys', () => {
    it('answers with the key exactly once; the database holds only its SHA-256', async () => {
      const s = await createSession(t.admin, { lines: [] });
      const res = await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'support agent', channelAccess: { mode: 'ALL' } });
      expect(res.status).toBe(201);
      expect(res.headers['cache-control']).toBe('no-store'); // the one answer holding the secret is never cached
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        userId: s.userId,
        name: 'support agent',
        key: expect.stringMatching(/^csk_[0-9a-f]{48}$/),
        keyLast4: res.body.key.slice(-4),
        channelAccess: { mode: 'ALL' },
        permissions: ['read', 'send', 'webhooks'],
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
      });
      const key: string = res.body.key;

      const rows: Array<Record<string, unknown>> = await db.query('SELECT * FROM api_keys WHERE id = $1', [res.body.id]);
      expect(rows).toHaveLength(1);
      expect(rows[0].key_hash).toBe(sha256(key));
      expect(rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
      for (const [column, value] of Object.entries(rows[0])) {
        if (typeof value === 'string') expect({ column, containsKey: value.includes(key.slice(4)) }).toEqual({ column, containsKey: false });
      }

      const list = await t.admin.get(`/admin/users/${s.userId}/api-keys`);
      expect(list.text).not.toContain(key.slice(4));
      expect(list.text).not.toContain(sha256(key));
    });

    it('defaults channel access to ALL and issues a different key every time', async () => {
      const s = await createSession(t.admin, { lines: [] });
      const a = await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'a' });
      const b = await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'b' });
      expect(a.status).toBe(201);
      expect(a.body.channelAccess).toEqual({ mode: 'ALL' });
      expect(a.body.key).not.toBe(b.body.key);
      expect(a.body.key).not.toBe(s.apiKey);
    });

    it('stores a LINES allowlist normalized (emails lowercased, duplicates dropped)', async () => {
      const s = await createSession(t.admin, { lines: [] });
      const email = uniqueEmail('ops');
      const phone = uniquePhone();
      const res = await t.admin.post(`/admin/users/${s.userId}/api-keys`, {
        name: 'scoped',
        channelAccess: { mode: 'LINES', lines: [phone, email.toUpperCase(), email] },
      });
      expect(res.status).toBe(201);
      expect(res.body.channelAccess).toEqual({ mode: 'LINES', lines: [phone, email] });
      const [row] = await db.query('SELECT channel_access_mode, allowed_addresses FROM api_keys WHERE id = $1', [res.body.id]);
      expect(row).toEqual({ channel_access_mode: 'LINES', allowed_addresses: [phone, email] });
    });

    it.each([
      ['an unknown field', { name: 'k', scopes: ['*'] }, 'scopes'],
      ['a missing name', { channelAccess: { mode: 'ALL' } }, 'name'],
      ['a name of the wrong type', { name: 5 }, 'name'],
      ['an empty name', { name: '' }, 'name'],
      ['a name of blanks', { name: '   ' }, 'name'],
      ['a name of 201 characters', { name: 'k'.repeat(201) }, 'name'],
      ['a name of 201 characters outside the BMP', { name: '🔑'.repeat(201) }, 'name'],
      ['a mode outside the enum', { name: 'k', channelAccess: { mode: 'SOME' } }, 'channelAccess.mode'],
      ['lines given with mode ALL', { name: 'k', channelAccess: { mode: 'ALL', lines: ['+15551230001'] } }, 'channelAccess.lines'],
      ['mode LINES without lines', { name: 'k', channelAccess: { mode: 'LINES' } }, 'channelAccess.lines'],
      ['mode LINES with an empty list', { name: 'k', channelAccess: { mode: 'LINES', lines: [] } }, 'channelAccess.lines'],
      ['lines that are not a list', { name: 'k', channelAccess: { mode: 'LINES', lines: '+15551230001' } }, 'channelAccess.lines'],
      ['a bad phone number in lines', { name: 'k', channelAccess: { mode: 'LINES', lines: ['5551230001'] } }, 'channelAccess.lines'],
      ['a bad email in lines', { name: 'k', channelAccess: { mode: 'LINES', lines: ['ops@'] } }, 'channelAccess.lines'],
      ['a non-string entry in lines', { name: 'k', channelAccess: { mode: 'LINES', lines: [15551230001] } }, 'channelAccess.lines'],
      ['an unknown field inside channelAccess', { name: 'k', channelAccess: { mode: 'ALL', expires: 1 } }, 'channelAccess.expires'],
      ['channelAccess that is not an object', { name: 'k', channelAccess: 'ALL' }, 'channelAccess'],
      ['no permissions at all', { name: 'k', permissions: [] }, 'permissions'],
      ['an unknown permission', { name: 'k', permissions: ['read', 'admin'] }, 'permissions'],
      ['a permission twice', { name: 'k', permissions: ['read', 'read'] }, 'permissions'],
      ['permissions that are not a list', { name: 'k', permissions: 'read' }, 'permissions'],
      ['null permissions', { name: 'k', permissions: null }, 'permissions'],
      ['a permission of the wrong case', { name: 'k', permissions: ['READ'] }, 'permissions'],
    ])('refuses %s with 400 naming the field, and creates no key', async (_, body, field) => {
      const s = await createSession(t.admin, { lines: [] });
      expect400(await t.admin.post(`/admin/users/${s.userId}/api-keys`, body), field);
      const [{ count }] = await db.query('SELECT count(*)::int AS count FROM api_keys WHERE user_id = $1', [s.userId]);
      expect(count).toBe(1);
    });

    it('stores the permissions given, in the order read, send, webhooks; the key resolves with them', async () => {
      const s = await createSession(t.admin, { lines: [] });
      const res = await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'hooks and reads', permissions: ['webhooks', 'read'] });
      expect(res.status).toBe(201);
      expect(res.body.permissions).toEqual(['read', 'webhooks']);
      const [row] = await db.query('SELECT permissions FROM api_keys WHERE id = $1', [res.body.id]);
      expect(row.permissions).toEqual(['read', 'webhooks']);
      expect((await whoami(t, res.body.key)).body.permissions).toEqual(['read', 'webhooks']);
      expect((await whoami(t, s.apiKey)).body.permissions).toEqual(['read', 'send', 'webhooks']);
      const list = await t.admin.get(`/admin/users/${s.userId}/api-keys`);
      expect(list.body.map((k: { permissions: string[] }) => k.permissions)).toEqual([
        ['read', 'send', 'webhooks'],
        ['read', 'webhooks'],
      ]);
    });

    it('says what is wrong with permissions: an empty set, an unknown one', async () => {
      const s = await createSession(t.admin, { lines: [] });
      const empty = await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'k', permissions: [] });
      expect(empty.body.message).toBe('permissions must hold at least one of read, send, draft, webhooks: a key without any could call no tool');
      const unknown = await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'k', permissions: ['read', 'admin'] });
      expect(unknown.body.message).toBe('permissions must each be one of read, send, draft, webhooks; "admin" is not');
    });

    it('the database refuses a key without permissions or with an unknown one (api_keys_permissions_check)', async () => {
      const s = await createSession(t.admin, { lines: [] });
      await expect(db.query(`UPDATE api_keys SET permissions = '{}' WHERE id = $1`, [s.apiKeyId])).rejects.toThrow(/api_keys_permissions_check/);
      await expect(db.query(`UPDATE api_keys SET permissions = '{read,admin}' WHERE id = $1`, [s.apiKeyId])).rejects.toThrow(/api_keys_permissions_check/);
    });

    it('answers 404 for an unknown user', async () => {
      const res = await t.admin.post(`/admin/users/${randomUUID()}/api-keys`, { name: 'k' });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ statusCode: 404, field: 'userId' });
    });
  });

  describe('GET /admin/users/:userId/api-keys', () => {
    it("lists the user's keys, oldest first, with no secret and no hash", async () => {
      const s = await createSession(t.admin, { lines: [] });
      const scoped = await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'second', channelAccess: { mode: 'LINES', lines: ['+15557770001'] } });
      const res = await t.admin.get(`/admin/users/${s.userId}/api-keys`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        {
          id: s.apiKeyId,
          userId: s.userId,
          name: 'test key',
          keyLast4: s.apiKey.slice(-4),
          channelAccess: { mode: 'ALL' },
          permissions: ['read', 'send', 'webhooks'],
          createdAt: expect.stringMatching(ISO),
          updatedAt: expect.stringMatching(ISO),
        },
        {
          id: scoped.body.id,
          userId: s.userId,
          name: 'second',
          keyLast4: scoped.body.key.slice(-4),
          channelAccess: { mode: 'LINES', lines: ['+15557770001'] },
          permissions: ['read', 'send', 'webhooks'],
          createdAt: scoped.body.createdAt,
          updatedAt: scoped.body.updatedAt,
        },
      ]);
      for (const item of res.body) {
        expect(Object.keys(item)).not.toEqual(expect.arrayContaining(['key']));
        expect(Object.keys(item).some((k) => /hash|secret/i.test(k))).toBe(false);
      }
      expect(res.text).not.toContain(s.apiKey);
      expect(res.text).not.toContain(sha256(s.apiKey));
      expect(res.text).not.toContain(scoped.body.key);
    });

    it('is empty for a user with no key and 404 for an unknown user', async () => {
      const orgId = (await t.admin.post('/admin/orgs', { name: 'O', tier: 'PRO' })).body.id;
      const user = (await t.admin.post(`/admin/orgs/${orgId}/users`, { email: uniqueEmail(), displayName: 'N', role: 'MEMBER' })).body;
      const empty = await t.admin.get(`/admin/users/${user.id}/api-keys`);
      expect(empty.status).toBe(200);
      expect(empty.body).toEqual([]);
      const unknown = await t.admin.get(`/admin/users/${randomUUID()}/api-keys`);
      expect(unknown.status).toBe(404);
      expect(unknown.body.field).toBe('userId');
    });
  });

  describe('PATCH /admin/api-keys/:keyId', () => {
    it('changes channel access, answers without the secret, and the very next request sees it', async () => {
      const s = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
      const [mail, phone] = s.lines;
      expect((await whoami(t, s.apiKey)).body.lines).toHaveLength(2);

      const narrowed = await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { channelAccess: { mode: 'LINES', lines: [phone.address] } });
      expect(narrowed.status).toBe(200);
      expect(narrowed.body).toEqual({
        id: s.apiKeyId,
        userId: s.userId,
        name: 'test key',
        keyLast4: s.apiKey.slice(-4),
        channelAccess: { mode: 'LINES', lines: [phone.address] },
        permissions: ['read', 'send', 'webhooks'],
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
      });
      expect(narrowed.body).not.toHaveProperty('key');
      const next = await whoami(t, s.apiKey);
      expect(next.status).toBe(200);
      expect(next.body).toMatchObject({ channelAccess: 'LINES', lines: [{ id: phone.id, type: 'PHONE_NUMBER', address: phone.address }] });

      const swapped = await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { channelAccess: { mode: 'LINES', lines: [mail.address.toUpperCase()] } });
      expect(swapped.body.channelAccess).toEqual({ mode: 'LINES', lines: [mail.address] });
      expect((await whoami(t, s.apiKey)).body.lines.map((l: { id: string }) => l.id)).toEqual([mail.id]);

      const widened = await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { channelAccess: { mode: 'ALL' } });
      expect(widened.body.channelAccess).toEqual({ mode: 'ALL' });
      const [row] = await db.query('SELECT allowed_addresses FROM api_keys WHERE id = $1', [s.apiKeyId]);
      expect(row.allowed_addresses).toEqual([]);
      expect((await whoami(t, s.apiKey)).body).toMatchObject({ channelAccess: 'ALL', lines: [{ id: mail.id }, { id: phone.id }] });
    });

    it('changes permissions alone, keeping channel access; the very next request sees them', async () => {
      const s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
      const phone = s.lines[0];
      await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { channelAccess: { mode: 'LINES', lines: [phone.address] } });
      const narrowed = await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { permissions: ['read'] });
      expect(narrowed.status).toBe(200);
      expect(narrowed.body).toMatchObject({ channelAccess: { mode: 'LINES', lines: [phone.address] }, permissions: ['read'] });
      expect((await whoami(t, s.apiKey)).body).toMatchObject({ permissions: ['read'], lines: [{ id: phone.id }] });

      const both = await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { channelAccess: { mode: 'ALL' }, permissions: ['send', 'read', 'webhooks'] });
      expect(both.body).toMatchObject({ channelAccess: { mode: 'ALL' }, permissions: ['read', 'send', 'webhooks'] });
      expect((await whoami(t, s.apiKey)).body).toMatchObject({ channelAccess: 'ALL', permissions: ['read', 'send', 'webhooks'] });

      // Channel access alone leaves the permissions as they are.
      await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { permissions: ['webhooks'] });
      const access = await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { channelAccess: { mode: 'ALL' } });
      expect(access.body.permissions).toEqual(['webhooks']);
    });

    it('keeps the same secret: the key still works and its hash is unchanged', async () => {
      const s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
      await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { channelAccess: { mode: 'LINES', lines: [s.lines[0].address] } });
      const [row] = await db.query('SELECT key_hash FROM api_keys WHERE id = $1', [s.apiKeyId]);
      expect(row.key_hash).toBe(sha256(s.apiKey));
      expect((await whoami(t, s.apiKey)).status).toBe(200);
    });

    it.each([
      ['an empty body', {}, 'channelAccess'],
      ['a null channelAccess', { channelAccess: null }, 'channelAccess'],
      ['an unknown field', { channelAccess: { mode: 'ALL' }, name: 'renamed' }, 'name'],
      ['lines given with mode ALL', { channelAccess: { mode: 'ALL', lines: ['ops@example.com'] } }, 'channelAccess.lines'],
      ['a bad phone number in lines', { channelAccess: { mode: 'LINES', lines: ['+0123'] } }, 'channelAccess.lines'],
      ['a mode of the wrong type', { channelAccess: { mode: 1 } }, 'channelAccess.mode'],
      ['no permissions at all', { permissions: [] }, 'permissions'],
      ['an unknown permission', { permissions: ['send', 'delete'] }, 'permissions'],
      ['null permissions', { permissions: null }, 'permissions'],
    ])('refuses %s with 400 naming the field and leaves the key as it was', async (_, body, field) => {
      const session = await createSession(t.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
      const scoped = await t.admin.patch(`/admin/api-keys/${session.apiKeyId}`, { channelAccess: { mode: 'LINES', lines: [session.lines[0].address] } });
      expect(scoped.status).toBe(200);
      expect400(await t.admin.patch(`/admin/api-keys/${session.apiKeyId}`, body), field);
      const list = await t.admin.get(`/admin/users/${session.userId}/api-keys`);
      expect(list.body[0].channelAccess).toEqual({ mode: 'LINES', lines: [session.lines[0].address] });
      expect(list.body[0].permissions).toEqual(['read', 'send', 'webhooks']);
      expect((await whoami(t, session.apiKey)).body.lines.map((l: { id: string }) => l.id)).toEqual([session.lines[0].id]);
    });

    it('answers 404 for an unknown key', async () => {
      const res = await t.admin.patch(`/admin/api-keys/${randomUUID()}`, { channelAccess: { mode: 'ALL' } });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ statusCode: 404, field: 'keyId' });
    });
  });

  describe('DELETE /admin/api-keys/:keyId', () => {
    it('revokes at once: 204, the row is gone, the next request with the key is 401', async () => {
      const s = await createSession(t.admin, { lines: [] });
      const other = await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'other' });
      expect((await whoami(t, s.apiKey)).status).toBe(200);

      const res = await t.admin.delete(`/admin/api-keys/${s.apiKeyId}`);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expect(await db.query('SELECT id FROM api_keys WHERE id = $1', [s.apiKeyId])).toEqual([]);

      const next = await whoami(t, s.apiKey);
      expect(next.status).toBe(401);
      expect(next.headers['www-authenticate']).toMatch(/^Bearer /);
      expect(next.body).toMatchObject({ statusCode: 401, error: 'Unauthorized' });

      expect((await whoami(t, other.body.key)).status).toBe(200);
      const list = await t.admin.get(`/admin/users/${s.userId}/api-keys`);
      expect(list.body.map((k: { id: string }) => k.id)).toEqual([other.body.id]);
    });

    it('answers 404 for an unknown or already revoked key', async () => {
      const s = await createSession(t.admin, { lines: [] });
      expect((await t.admin.delete(`/admin/api-keys/${s.apiKeyId}`)).status).toBe(204);
      const again = await t.admin.delete(`/admin/api-keys/${s.apiKeyId}`);
      expect(again.status).toBe(404);
      expect(again.body).toMatchObject({ statusCode: 404, field: 'keyId' });
      expect((await t.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { channelAccess: { mode: 'ALL' } })).status).toBe(404);
    });
  });
});
