import { createHash, randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiKeysService } from '../../src/auth/api-keys.service';
import { TestApp } from '../support/app';
import { createSession, uniqueEmail } from '../support/session';
import { ADMIN_TOKEN } from '../support/test-env';
import { createWhoAmIApp, whoami } from '../support/whoami';

type Res = { status: number; headers: Record<string, string>; body: Record<string, unknown> };

function expect401(res: Res) {
  expect(res.status).toBe(401);
  expect(res.headers['www-authenticate']).toMatch(/^Bearer( |$)/);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body).toEqual({ statusCode: 401, error: 'Unauthorized', message: expect.any(String) });
}

describe('auth guard', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createWhoAmIApp();
  });
  afterAll(async () => {
    await t.close();
  });

  describe('admin routes', () => {
    const routes: Array<[string, string]> = [
      ['post', '/admin/orgs'],
      ['get', '/admin/orgs/7b0c8f0e-2a53-4f4e-9d7b-5d2a4f3c1e90'],
      ['get', '/admin/users/7b0c8f0e-2a53-4f4e-9d7b-5d2a4f3c1e90/api-keys'],
      ['delete', '/admin/api-keys/7b0c8f0e-2a53-4f4e-9d7b-5d2a4f3c1e90'],
      ['put', '/admin/orgs/7b0c8f0e-2a53-4f4e-9d7b-5d2a4f3c1e90/endpoint-cap'],
      ['get', '/admin/orgs/7b0c8f0e-2a53-4f4e-9d7b-5d2a4f3c1e90/delivery-log-retention'],
      ['put', '/admin/orgs/7b0c8f0e-2a53-4f4e-9d7b-5d2a4f3c1e90/delivery-log-retention'],
      ['delete', '/admin/orgs/7b0c8f0e-2a53-4f4e-9d7b-5d2a4f3c1e90/delivery-log-retention'],
    ];

    it.each(routes)('%s %s refuses a missing, wrong or non-Bearer admin token with 401', async (method, path) => {
      const call = () => (t.http() as unknown as Record<string, (p: string) => import('supertest').Test>)[method](path);
      expect401(await call());
      expect401(await call().set('Authorization', 'Bearer wrong-token-0123456789abcdef'));
      expect401(await call().set('Authorization', `Bearer ${ADMIN_TOKEN}x`));
      expect401(await call().set('Authorization', `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`));
      expect401(await call().set('Authorization', ADMIN_TOKEN));
      expect401(await call().set('Authorization', 'Bearer'));
    });

    it('creates nothing on a refused call', async () => {
      const name = `refused-${randomBytes(4).toString('hex')}`;
      await t.http().post('/admin/orgs').send({ name, tier: 'PRO' });
      const [{ count }] = await t.app.get(DataSource).query('SELECT count(*)::int AS count FROM orgs WHERE name = $1', [name]);
      expect(count).toBe(0);
    });

    it('does not accept an API key, even a valid one', async () => {
      const s = await createSession(t.admin);
      expect((await whoami(t, s.apiKey)).status).toBe(200);
      expect401(await t.http().get(`/admin/orgs/${s.orgId}`).set('Authorization', `Bearer ${s.apiKey}`));
      expect401(await t.http().get(`/admin/users/${s.userId}/api-keys`).set('Authorization', `Bearer ${s.apiKey}`));
    });

    it('accepts the admin token with any case of the scheme', async () => {
      const res = await t.http().post('/admin/orgs').set('Authorization', `bearer ${ADMIN_TOKEN}`).send({ name: 'x', tier: 'PRO' });
      expect(res.status).toBe(201);
    });
  });

  describe('API-key routes', () => {
    it('a valid key reaches the route as its owner: user, org, role and lines', async () => {
      const s = await createSession(t.admin, { tier: 'POWER', role: 'ADMIN' });
      const res = await whoami(t, s.apiKey);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        keyId: s.apiKeyId,
        userId: s.userId,
        orgId: s.orgId,
        orgTier: 'POWER',
        role: 'ADMIN',
        channelAccess: 'ALL',
        permissions: ['read', 'send', 'webhooks'],
        lines: s.lines.map(({ id, type, address }) => ({ id, type, address })),
      });
    });

    it('the admin token is not an API key', async () => {
      expect401(await whoami(t, ADMIN_TOKEN));
    });

    it.each([
      ['no Authorization header', undefined],
      ['the Basic scheme', 'Basic Y3NrXzA6eA=='],
      ['a Bearer with no token', 'Bearer '],
      ['the key without a scheme', 'KEY'],
      ['the key with the Basic scheme', 'Basic KEY'],
      ['csk_ and 47 hex', 'Bearer SHORT'],
      ['uppercase hex', 'Bearer UPPER'],
      ['extra characters after the key', 'Bearer KEYzz'],
      ['one more hex digit', 'Bearer KEY0'],
      ['another prefix', 'Bearer PREFIX'],
      ['two tokens', 'Bearer KEY KEY'],
      ['an unknown well-formed key', 'Bearer UNKNOWN'],
    ])('refuses %s with 401, WWW-Authenticate and a JSON body', async (_, header) => {
      const s = await createSession(t.admin, { lines: [] });
      const hex = s.apiKey.slice(4);
      const value = header
        ?.replace('SHORT', s.apiKey.slice(0, -1))
        .replace('UPPER', `csk_${hex.toUpperCase()}`)
        .replace('PREFIX', `sk_${hex}`)
        .replace('UNKNOWN', `csk_${randomBytes(24).toString('hex')}`)
        .replace(/KEY/g, s.apiKey);
      const req = t.http().get('/test/whoami');
      expect401(await (value === undefined ? req : req.set('Authorization', value)));
      expect((await whoami(t, s.apiKey)).status).toBe(200);
    });

    it('a revoked key is refused with 401 on the next request', async () => {
      const s = await createSession(t.admin);
      expect((await whoami(t, s.apiKey)).status).toBe(200);
      expect((await t.admin.delete(`/admin/api-keys/${s.apiKeyId}`)).status).toBe(204);
      expect401(await whoami(t, s.apiKey));
    });

    it('concurrent requests with different keys each get their own caller; a revoked key among them gets 401', async () => {
      const sessions = await Promise.all([createSession(t.admin, { lines: ['PHONE_NUMBER'] }), createSession(t.admin, { lines: ['EMAIL_ACCOUNT'] })]);
      const revoked = await createSession(t.admin, { lines: [] });
      expect((await t.admin.delete(`/admin/api-keys/${revoked.apiKeyId}`)).status).toBe(204);
      const keys = Array.from({ length: 30 }, (_, i) => [sessions[0], sessions[1], revoked][i % 3]);
      const answers = await Promise.all(keys.map((s) => whoami(t, s.apiKey)));
      answers.forEach((res, i) => {
        const s = keys[i];
        if (s === revoked) return expect401(res);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ userId: s.userId, orgId: s.orgId, keyId: s.apiKeyId });
        expect((res.body.lines as Array<{ id: string }>).map((l) => l.id)).toEqual(s.lines.map((l) => l.id));
      });
    });

    it('accepts the scheme in any case and surrounding spaces', async () => {
      const s = await createSession(t.admin, { lines: [] });
      const res = await t.http().get('/test/whoami').set('Authorization', `bearer   ${s.apiKey} `);
      expect(res.status).toBe(200);
      expect(res.body.userId).toBe(s.userId);
    });
  });

  describe('channel access', () => {
    it('a LINES key sees only its allowlisted lines that the owner is a member of', async () => {
      const s = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER', 'PHONE_NUMBER'] });
      const [mail, phoneA, phoneB] = s.lines;
      // A line of the org the owner is not a member of, and an address no line has.
      const notMine = (await t.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'EMAIL_ACCOUNT', address: uniqueEmail('other') })).body;
      const key = await t.admin.post(`/admin/users/${s.userId}/api-keys`, {
        name: 'scoped',
        channelAccess: { mode: 'LINES', lines: [mail.address.toUpperCase(), phoneB.address, notMine.address, '+15550000000'] },
      });
      expect(key.status).toBe(201);
      const res = await whoami(t, key.body.key);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ keyId: key.body.id, channelAccess: 'LINES' });
      expect(res.body.lines).toEqual([
        { id: mail.id, type: 'EMAIL_ACCOUNT', address: mail.address },
        { id: phoneB.id, type: 'PHONE_NUMBER', address: phoneB.address },
      ]);
      expect(res.body.lines.map((l: { id: string }) => l.id)).not.toContain(phoneA.id);

      // The owner gains membership of the allowlisted line: the key sees it on the next request.
      await t.admin.put(`/admin/lines/${notMine.id}/members/${s.userId}`);
      expect((await whoami(t, key.body.key)).body.lines.map((l: { id: string }) => l.id)).toEqual([mail.id, phoneB.id, notMine.id]);
    });

    it('a LINES key stops seeing a line on the next request once the owner loses membership of it', async () => {
      const s = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
      const [mail, phone] = s.lines;
      const key = (
        await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'scoped', channelAccess: { mode: 'LINES', lines: [mail.address, phone.address] } })
      ).body;
      expect((await whoami(t, key.key)).body.lines).toHaveLength(2);

      expect((await t.admin.delete(`/admin/lines/${phone.id}/members/${s.userId}`)).status).toBe(204);
      const next = await whoami(t, key.key);
      expect(next.status).toBe(200);
      expect(next.body.lines).toEqual([{ id: mail.id, type: 'EMAIL_ACCOUNT', address: mail.address }]);

      expect((await t.admin.delete(`/admin/lines/${mail.id}/members/${s.userId}`)).status).toBe(204);
      const none = await whoami(t, key.key);
      expect(none.status).toBe(200);
      expect(none.body.lines).toEqual([]);
    });

    it('an ALL key follows live access: a deleted line disappears, a line connected later appears', async () => {
      const s = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
      const [mail, phone] = s.lines;
      expect((await t.admin.delete(`/admin/lines/${mail.id}`)).status).toBe(204);
      expect((await whoami(t, s.apiKey)).body.lines).toEqual([{ id: phone.id, type: 'PHONE_NUMBER', address: phone.address }]);

      const later = (await t.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'EMAIL_ACCOUNT', address: uniqueEmail('later') })).body;
      expect((await whoami(t, s.apiKey)).body.lines.map((l: { id: string }) => l.id)).toEqual([phone.id]);
      await t.admin.put(`/admin/lines/${later.id}/members/${s.userId}`);
      expect((await whoami(t, s.apiKey)).body.lines).toEqual([
        { id: phone.id, type: 'PHONE_NUMBER', address: phone.address },
        { id: later.id, type: 'EMAIL_ACCOUNT', address: later.address },
      ]);
    });

    it('a LINES key does not see a deleted line, nor a new line that reuses its address until the owner is a member', async () => {
      const s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
      const [phone] = s.lines;
      const key = (await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'scoped', channelAccess: { mode: 'LINES', lines: [phone.address] } })).body;
      await t.admin.delete(`/admin/lines/${phone.id}`);
      expect((await whoami(t, key.key)).body.lines).toEqual([]);
      const reborn = (await t.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'PHONE_NUMBER', address: phone.address })).body;
      expect((await whoami(t, key.key)).body.lines).toEqual([]);
      await t.admin.put(`/admin/lines/${reborn.id}/members/${s.userId}`);
      expect((await whoami(t, key.key)).body.lines).toEqual([{ id: reborn.id, type: 'PHONE_NUMBER', address: phone.address }]);
    });

    it("one user's key never sees another user's lines", async () => {
      const a = await createSession(t.admin);
      const b = await createSession(t.admin, { orgId: a.orgId });
      const seen = (await whoami(t, a.apiKey)).body.lines.map((l: { id: string }) => l.id);
      expect(seen).toEqual(a.lines.map((l) => l.id));
      for (const line of b.lines) expect(seen).not.toContain(line.id);
    });
  });

  describe('ApiKeysService.resolve', () => {
    it('resolves a valid key to its caller and anything else to null', async () => {
      const service = t.app.get(ApiKeysService);
      const s = await createSession(t.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER'] });
      expect(await service.resolve(s.apiKey)).toEqual({
        keyId: s.apiKeyId,
        userId: s.userId,
        orgId: s.orgId,
        orgTier: 'PRO',
        role: 'MEMBER',
        channelAccess: 'ALL',
        permissions: ['read', 'send', 'webhooks'],
        lines: [{ id: s.lines[0].id, type: 'PHONE_NUMBER', address: s.lines[0].address }],
      });
      for (const bad of [
        '',
        s.apiKey.slice(0, -1),
        `${s.apiKey}0`,
        s.apiKey.toUpperCase(),
        ` ${s.apiKey}`,
        createHash('sha256').update(s.apiKey).digest('hex'),
        `csk_${randomBytes(24).toString('hex')}`,
      ]) {
        expect(await service.resolve(bad)).toBeNull();
      }
      await service.revoke(s.apiKeyId);
      expect(await service.resolve(s.apiKey)).toBeNull();
    });
  });
});
