import { randomUUID } from 'node:crypto';
import { TestApp } from '../support/app';
import { createSession, uniqueEmail, uniquePhone } from '../support/session';
import { createWhoAmIApp, whoami } from '../support/whoami';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('admin REST: orgs, users, lines, memberships', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createWhoAmIApp();
  });
  afterAll(async () => {
    await t.close();
  });

  async function newOrg(tier = 'PRO'): Promise<string> {
    const res = await t.admin.post('/admin/orgs', { name: 'Org', tier });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  async function newUser(orgId: string, role = 'MEMBER'): Promise<string> {
    const res = await t.admin.post(`/admin/orgs/${orgId}/users`, { email: uniqueEmail(), displayName: 'U', role });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  async function newLine(orgId: string, type: 'EMAIL_ACCOUNT' | 'PHONE_NUMBER' = 'PHONE_NUMBER') {
    const address = type === 'EMAIL_ACCOUNT' ? uniqueEmail('line') : uniquePhone();
    const res = await t.admin.post(`/admin/orgs/${orgId}/lines`, { type, address });
    expect(res.status).toBe(201);
    return res.body as { id: string; address: string };
  }

  function expect400(res: { status: number; body: { message?: string; field?: string } }, field: string) {
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request', field });
    expect(res.body.message).toContain(field);
  }

  describe('orgs', () => {
    it('POST /admin/orgs creates an org and answers with it', async () => {
      const res = await t.admin.post('/admin/orgs', { name: 'Acme Dental', tier: 'STARTER' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'Acme Dental',
        tier: 'STARTER',
        deliveryLogRetentionDays: null, // the org's own delivery log retention (null: DELIVERY_LOG_RETENTION_DAYS)
        createdAt: expect.stringMatching(ISO),
      });
    });

    it('GET /admin/orgs/:orgId reads it back', async () => {
      const created = (await t.admin.post('/admin/orgs', { name: 'Read Me', tier: 'POWER' })).body;
      const res = await t.admin.get(`/admin/orgs/${created.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(created);
    });

    it('PATCH /admin/orgs/:orgId changes name and tier, and the change persists', async () => {
      const orgId = await newOrg('STARTER');
      const res = await t.admin.patch(`/admin/orgs/${orgId}`, { tier: 'POWER' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: orgId, name: 'Org', tier: 'POWER' });
      const renamed = await t.admin.patch(`/admin/orgs/${orgId}`, { name: 'Renamed' });
      expect(renamed.body).toMatchObject({ id: orgId, name: 'Renamed', tier: 'POWER' });
      expect((await t.admin.get(`/admin/orgs/${orgId}`)).body).toMatchObject({ name: 'Renamed', tier: 'POWER' });
    });

    it.each([
      ['an unknown field', { name: 'X', tier: 'PRO', plan: 'gold' }, 'plan'],
      ['a tier outside the enum', { name: 'X', tier: 'GOLD' }, 'tier'],
      ['a name of the wrong type', { name: 42, tier: 'PRO' }, 'name'],
      ['an empty name', { name: '', tier: 'PRO' }, 'name'],
      ['a missing tier', { name: 'X' }, 'tier'],
      ['a name over 200 characters', { name: 'x'.repeat(201), tier: 'PRO' }, 'name'],
    ])('POST /admin/orgs refuses %s with 400 naming the field', async (_, body, field) => {
      expect400(await t.admin.post('/admin/orgs', body), field);
    });

    it.each([
      ['an unknown field', { colour: 'red' }, 'colour'],
      ['a bad tier', { tier: 'ENTERPRISE' }, 'tier'],
      ['a name of the wrong type', { name: ['x'] }, 'name'],
      ['a null tier', { tier: null }, 'tier'],
      ['a null name', { name: null }, 'name'],
    ])('PATCH /admin/orgs/:orgId refuses %s with 400 naming the field', async (_, body, field) => {
      const orgId = await newOrg();
      expect400(await t.admin.patch(`/admin/orgs/${orgId}`, body), field);
      expect((await t.admin.get(`/admin/orgs/${orgId}`)).body).toMatchObject({ name: 'Org', tier: 'PRO' });
    });

    it('refuses a body that is not JSON with 400 and a JSON answer', async () => {
      const res = await t
        .http()
        .post('/admin/orgs')
        .set('Authorization', `Bearer ${process.env.ADMIN_TOKEN}`)
        .set('Content-Type', 'application/json')
        .send('{"name": "x", ');
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      expect(res.body.statusCode).toBe(400);
    });
  });

  describe('users', () => {
    it('POST /admin/orgs/:orgId/users creates a user with the email lowercased', async () => {
      const orgId = await newOrg();
      const local = `Mixed.${randomUUID().slice(0, 8)}`;
      const res = await t.admin.post(`/admin/orgs/${orgId}/users`, { email: `${local}@Example.COM`, displayName: 'Olivia Owner', role: 'OWNER' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        orgId,
        email: `${local.toLowerCase()}@example.com`,
        displayName: 'Olivia Owner',
        role: 'OWNER',
        createdAt: expect.stringMatching(ISO),
      });
      const read = await t.admin.get(`/admin/users/${res.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(res.body);
    });

    it.each([
      ['an unknown field', { email: 'a.x1@example.com', displayName: 'A', role: 'MEMBER', password: 'x' }, 'password'],
      ['a bad email', { email: 'not-an-email', displayName: 'A', role: 'MEMBER' }, 'email'],
      ['an email with no domain', { email: 'someone@', displayName: 'A', role: 'MEMBER' }, 'email'],
      ['an email of the wrong type', { email: 7, displayName: 'A', role: 'MEMBER' }, 'email'],
      ['a role outside the enum', { email: 'a.x2@example.com', displayName: 'A', role: 'KING' }, 'role'],
      ['a displayName of the wrong type', { email: 'a.x3@example.com', displayName: true, role: 'MEMBER' }, 'displayName'],
      ['a missing displayName', { email: 'a.x4@example.com', role: 'MEMBER' }, 'displayName'],
    ])('refuses %s with 400 naming the field', async (_, body, field) => {
      const orgId = await newOrg();
      expect400(await t.admin.post(`/admin/orgs/${orgId}/users`, body), field);
    });

    it('refuses a second user with the same email, whatever its case, with 409 (also across orgs)', async () => {
      const orgA = await newOrg();
      const orgB = await newOrg();
      const email = uniqueEmail('dup');
      expect((await t.admin.post(`/admin/orgs/${orgA}/users`, { email, displayName: 'A', role: 'MEMBER' })).status).toBe(201);
      const same = await t.admin.post(`/admin/orgs/${orgA}/users`, { email: email.toUpperCase(), displayName: 'B', role: 'MEMBER' });
      expect(same.status).toBe(409);
      expect(same.body).toMatchObject({ statusCode: 409, error: 'Conflict', field: 'email' });
      expect(same.body.message).toContain(email);
      const other = await t.admin.post(`/admin/orgs/${orgB}/users`, { email, displayName: 'C', role: 'MEMBER' });
      expect(other.status).toBe(409);
    });

    it('answers 404 for a user of an unknown org', async () => {
      const res = await t.admin.post(`/admin/orgs/${randomUUID()}/users`, { email: uniqueEmail(), displayName: 'A', role: 'MEMBER' });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ statusCode: 404, field: 'orgId' });
    });
  });

  describe('lines', () => {
    it('POST /admin/orgs/:orgId/lines creates an email line (address lowercased) and a phone line', async () => {
      const orgId = await newOrg();
      const email = uniqueEmail('Support');
      const mail = await t.admin.post(`/admin/orgs/${orgId}/lines`, { type: 'EMAIL_ACCOUNT', address: email.toUpperCase() });
      expect(mail.status).toBe(201);
      expect(mail.body).toMatchObject({ id: expect.stringMatching(UUID), orgId, type: 'EMAIL_ACCOUNT', address: email.toLowerCase() });
      const phone = uniquePhone();
      const sms = await t.admin.post(`/admin/orgs/${orgId}/lines`, { type: 'PHONE_NUMBER', address: phone });
      expect(sms.status).toBe(201);
      expect(sms.body).toMatchObject({ id: expect.stringMatching(UUID), orgId, type: 'PHONE_NUMBER', address: phone });
    });

    it.each([
      ['an unknown field', { type: 'PHONE_NUMBER', address: '+15550000001', label: 'x' }, 'label'],
      ['a type outside the enum', { type: 'FAX', address: '+15550000001' }, 'type'],
      ['a phone number without +', { type: 'PHONE_NUMBER', address: '15551230001' }, 'address'],
      ['a phone number with a leading zero', { type: 'PHONE_NUMBER', address: '+05551230001' }, 'address'],
      ['a phone number with spaces', { type: 'PHONE_NUMBER', address: '+1 555 123 0001' }, 'address'],
      ['a phone number over 15 digits', { type: 'PHONE_NUMBER', address: '+1234567890123456' }, 'address'],
      ['an email address on a PHONE_NUMBER line', { type: 'PHONE_NUMBER', address: 'ops@example.com' }, 'address'],
      ['a phone number on an EMAIL_ACCOUNT line', { type: 'EMAIL_ACCOUNT', address: '+15551230001' }, 'address'],
      ['a bad email address', { type: 'EMAIL_ACCOUNT', address: 'ops@' }, 'address'],
      ['an address of the wrong type', { type: 'EMAIL_ACCOUNT', address: 12345 }, 'address'],
      ['a missing address', { type: 'EMAIL_ACCOUNT' }, 'address'],
    ])('refuses %s with 400 naming the field', async (_, body, field) => {
      const orgId = await newOrg();
      expect400(await t.admin.post(`/admin/orgs/${orgId}/lines`, body), field);
    });

    it('refuses a duplicate address with 409: email case-insensitively, phone exactly, across orgs', async () => {
      const orgA = await newOrg();
      const orgB = await newOrg();
      const email = uniqueEmail('shared');
      expect((await t.admin.post(`/admin/orgs/${orgA}/lines`, { type: 'EMAIL_ACCOUNT', address: email })).status).toBe(201);
      const upper = await t.admin.post(`/admin/orgs/${orgA}/lines`, { type: 'EMAIL_ACCOUNT', address: email.toUpperCase() });
      expect(upper.status).toBe(409);
      expect(upper.body).toMatchObject({ statusCode: 409, error: 'Conflict', field: 'address' });
      const phone = uniquePhone();
      expect((await t.admin.post(`/admin/orgs/${orgA}/lines`, { type: 'PHONE_NUMBER', address: phone })).status).toBe(201);
      const again = await t.admin.post(`/admin/orgs/${orgB}/lines`, { type: 'PHONE_NUMBER', address: phone });
      expect(again.status).toBe(409);
      expect(again.body.field).toBe('address');
    });

    it('answers 404 for a line of an unknown org', async () => {
      const res = await t.admin.post(`/admin/orgs/${randomUUID()}/lines`, { type: 'PHONE_NUMBER', address: uniquePhone() });
      expect(res.status).toBe(404);
      expect(res.body.field).toBe('orgId');
    });

    it('DELETE /admin/lines/:lineId removes API-key access to the line; the id is then unknown; the address is free again', async () => {
      const s = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
      const [mail, phone] = s.lines;
      const before = await whoami(t, s.apiKey);
      expect(before.body.lines.map((l: { id: string }) => l.id)).toEqual([mail.id, phone.id]);

      const del = await t.admin.delete(`/admin/lines/${phone.id}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');

      const after = await whoami(t, s.apiKey);
      expect(after.status).toBe(200);
      expect(after.body.lines).toEqual([{ id: mail.id, type: 'EMAIL_ACCOUNT', address: mail.address }]);

      expect((await t.admin.delete(`/admin/lines/${phone.id}`)).status).toBe(404);
      const member = await t.admin.put(`/admin/lines/${phone.id}/members/${s.userId}`);
      expect(member.status).toBe(404);
      expect(member.body.field).toBe('lineId');

      const reused = await t.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'PHONE_NUMBER', address: phone.address });
      expect(reused.status).toBe(201);
      expect(reused.body.id).not.toBe(phone.id);
      expect((await whoami(t, s.apiKey)).body.lines).toHaveLength(1);
    });
  });

  describe('memberships', () => {
    it('PUT adds a member (idempotently); the key sees the line; DELETE removes it; a second DELETE is 404', async () => {
      const s = await createSession(t.admin, { lines: [] });
      const line = await newLine(s.orgId, 'EMAIL_ACCOUNT');
      expect((await whoami(t, s.apiKey)).body.lines).toEqual([]);

      const add = await t.admin.put(`/admin/lines/${line.id}/members/${s.userId}`);
      expect(add.status).toBe(200);
      expect(add.body).toEqual({ lineId: line.id, userId: s.userId });
      const again = await t.admin.put(`/admin/lines/${line.id}/members/${s.userId}`);
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ lineId: line.id, userId: s.userId });
      expect((await whoami(t, s.apiKey)).body.lines).toEqual([{ id: line.id, type: 'EMAIL_ACCOUNT', address: line.address }]);

      const remove = await t.admin.delete(`/admin/lines/${line.id}/members/${s.userId}`);
      expect(remove.status).toBe(204);
      expect((await whoami(t, s.apiKey)).body.lines).toEqual([]);

      const twice = await t.admin.delete(`/admin/lines/${line.id}/members/${s.userId}`);
      expect(twice.status).toBe(404);
      expect(twice.body).toMatchObject({ statusCode: 404, field: 'userId' });
    });

    it('refuses to add a user of another org with 409 naming userId', async () => {
      const orgA = await newOrg();
      const orgB = await newOrg();
      const line = await newLine(orgA);
      const stranger = await newUser(orgB);
      const res = await t.admin.put(`/admin/lines/${line.id}/members/${stranger}`);
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ statusCode: 409, error: 'Conflict', field: 'userId' });
    });

    it('answers 404 naming the unknown line or user', async () => {
      const orgId = await newOrg();
      const line = await newLine(orgId);
      const userId = await newUser(orgId);
      const noLine = await t.admin.put(`/admin/lines/${randomUUID()}/members/${userId}`);
      expect(noLine.status).toBe(404);
      expect(noLine.body.field).toBe('lineId');
      const noUser = await t.admin.put(`/admin/lines/${line.id}/members/${randomUUID()}`);
      expect(noUser.status).toBe(404);
      expect(noUser.body.field).toBe('userId');
      expect((await t.admin.delete(`/admin/lines/${randomUUID()}/members/${userId}`)).body.field).toBe('lineId');
      expect((await t.admin.delete(`/admin/lines/${line.id}/members/${randomUUID()}`)).body.field).toBe('userId');
    });
  });

  describe('path ids', () => {
    const id = '7b0c8f0e-2a53-4f4e-9d7b-5d2a4f3c1e90';
    const routes: Array<[string, string, string, object | undefined]> = [
      ['get', '/admin/orgs/:x', 'orgId', undefined],
      ['patch', '/admin/orgs/:x', 'orgId', { name: 'n' }],
      ['post', '/admin/orgs/:x/users', 'orgId', { email: 'p.x@example.com', displayName: 'P', role: 'MEMBER' }],
      ['get', '/admin/users/:x', 'userId', undefined],
      ['post', '/admin/orgs/:x/lines', 'orgId', { type: 'PHONE_NUMBER', address: '+15550009999' }],
      ['patch', '/admin/lines/:x', 'lineId', { smsDeliveryReports: true }],
      ['delete', '/admin/lines/:x', 'lineId', undefined],
      ['put', `/admin/lines/:x/members/${id}`, 'lineId', undefined],
      ['put', `/admin/lines/${id}/members/:x`, 'userId', undefined],
      ['delete', `/admin/lines/:x/members/${id}`, 'lineId', undefined],
      ['delete', `/admin/lines/${id}/members/:x`, 'userId', undefined],
      ['post', '/admin/users/:x/api-keys', 'userId', { name: 'k' }],
      ['get', '/admin/users/:x/api-keys', 'userId', undefined],
      ['patch', '/admin/api-keys/:x', 'keyId', { channelAccess: { mode: 'ALL' } }],
      ['delete', '/admin/api-keys/:x', 'keyId', undefined],
      ['get', '/admin/orgs/:x/endpoint-cap', 'orgId', undefined],
      ['put', '/admin/orgs/:x/endpoint-cap', 'orgId', { maxEndpointsPerUser: 2, reason: 'r' }],
      ['delete', '/admin/orgs/:x/endpoint-cap', 'orgId', undefined],
    ];

    it.each(routes)('%s %s: a malformed id is 400 naming %s', async (method, path, field, body) => {
      for (const bad of ['not-a-uuid', '123', `${id}0`]) {
        const res = await (
          t.admin as unknown as Record<string, (p: string, b?: object) => Promise<{ status: number; body: { field?: string; message: string } }>>
        )[method](path.replace(':x', bad), body);
        expect(res.status).toBe(400);
        expect(res.body.field).toBe(field);
        expect(res.body.message).toBe(`${field} must be a UUID`);
      }
    });

    it.each(routes)('%s %s: an unknown id is 404', async (method, path, _field, body) => {
      const res = await (
        t.admin as unknown as Record<string, (p: string, b?: object) => Promise<{ status: number; body: { statusCode: number; error: string } }>>
      )[method](path.replace(':x', id), body);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ statusCode: 404, error: 'Not Found' });
    });
  });
});
