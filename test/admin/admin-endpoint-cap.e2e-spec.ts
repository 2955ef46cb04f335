import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('admin REST: org endpoint-cap grants', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  async function newOrg(tier: 'STARTER' | 'PRO' | 'POWER'): Promise<string> {
    const res = await t.admin.post('/admin/orgs', { name: 'Capped', tier });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  const cap = (orgId: string) => `/admin/orgs/${orgId}/endpoint-cap`;

  it.each([
    ['STARTER', 1],
    ['PRO', 3],
    ['POWER', 10],
  ] as const)('GET shows the %s tier cap (%i) with source tier and no history', async (tier, max) => {
    const orgId = await newOrg(tier);
    const res = await t.admin.get(cap(orgId));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      orgId,
      effectiveMaxEndpointsPerUser: max,
      source: 'tier',
      tier,
      tierMaxEndpointsPerUser: max,
      grant: null,
      history: [],
    });
  });

  it('PUT a grant: the effective value comes from the grant, and the history grows newest first', async () => {
    const orgId = await newOrg('STARTER');
    const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString();
    const first = await t.admin.put(cap(orgId), { maxEndpointsPerUser: 25, reason: 'enterprise pilot #4411', expiresAt });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      orgId,
      effectiveMaxEndpointsPerUser: 25,
      source: 'grant',
      tier: 'STARTER',
      tierMaxEndpointsPerUser: 1,
      grant: { maxEndpointsPerUser: 25, reason: 'enterprise pilot #4411', expiresAt, grantedAt: expect.stringMatching(ISO), expired: false },
      history: [{ action: 'GRANTED', maxEndpointsPerUser: 25, reason: 'enterprise pilot #4411', expiresAt, createdAt: expect.stringMatching(ISO) }],
    });

    const lower = await t.admin.put(cap(orgId), { maxEndpointsPerUser: 0, reason: 'abuse hold' });
    expect(lower.status).toBe(200);
    expect(lower.body).toMatchObject({
      effectiveMaxEndpointsPerUser: 0,
      source: 'grant',
      grant: { maxEndpointsPerUser: 0, reason: 'abuse hold', expiresAt: null, expired: false },
    });
    expect(lower.body.history.map((h: { action: string; maxEndpointsPerUser: number; reason: string }) => [h.action, h.maxEndpointsPerUser, h.reason])).toEqual(
      [
        ['GRANTED', 0, 'abuse hold'],
        ['GRANTED', 25, 'enterprise pilot #4411'],
      ],
    );

    const read = await t.admin.get(cap(orgId));
    expect(read.body).toEqual(lower.body);
  });

  it('an expired grant reads as the tier cap, with the grant shown as expired', async () => {
    const orgId = await newOrg('PRO');
    const expiresAt = new Date(Date.now() - 60_000).toISOString();
    const put = await t.admin.put(cap(orgId), { maxEndpointsPerUser: 50, reason: 'trial', expiresAt });
    expect(put.status).toBe(200);
    const res = await t.admin.get(cap(orgId));
    expect(res.body).toMatchObject({
      effectiveMaxEndpointsPerUser: 3,
      source: 'tier',
      tierMaxEndpointsPerUser: 3,
      grant: { maxEndpointsPerUser: 50, reason: 'trial', expiresAt, expired: true },
    });
    expect(res.body.history).toHaveLength(1);
  });

  it('DELETE goes back to the tier cap and is audited with its reason; without a grant it is 404', async () => {
    const orgId = await newOrg('POWER');
    await t.admin.put(cap(orgId), { maxEndpointsPerUser: 2, reason: 'limit' });
    const del = await t.admin.delete(cap(orgId), { reason: 'pilot ended' });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ effectiveMaxEndpointsPerUser: 10, source: 'tier', grant: null });
    expect(del.body.history.map((h: object) => h)).toEqual([
      { action: 'REMOVED', maxEndpointsPerUser: null, reason: 'pilot ended', expiresAt: null, createdAt: expect.stringMatching(ISO) },
      expect.objectContaining({ action: 'GRANTED', maxEndpointsPerUser: 2, reason: 'limit' }),
    ]);

    const again = await t.admin.delete(cap(orgId));
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ statusCode: 404, field: 'orgId' });
    const audit = await t.app.get(DataSource).query('SELECT action, reason FROM endpoint_cap_audit WHERE org_id = $1 ORDER BY created_at', [orgId]);
    expect(audit).toEqual([
      { action: 'GRANTED', reason: 'limit' },
      { action: 'REMOVED', reason: 'pilot ended' },
    ]);
  });

  it('DELETE without a body records a default reason', async () => {
    const orgId = await newOrg('PRO');
    await t.admin.put(cap(orgId), { maxEndpointsPerUser: 4, reason: 'r' });
    const del = await t.http().delete(cap(orgId)).set('Authorization', `Bearer ${process.env.ADMIN_TOKEN}`);
    expect(del.status).toBe(200);
    expect(del.body.source).toBe('tier');
    expect(del.body.history[0]).toMatchObject({ action: 'REMOVED', reason: expect.any(String) });
    expect(del.body.history[0].reason.length).toBeGreaterThan(0);
  });

  it('PATCH of the org tier changes the tier cap', async () => {
    const orgId = await newOrg('STARTER');
    expect((await t.admin.get(cap(orgId))).body.effectiveMaxEndpointsPerUser).toBe(1);
    expect((await t.admin.patch(`/admin/orgs/${orgId}`, { tier: 'POWER' })).status).toBe(200);
    expect((await t.admin.get(cap(orgId))).body).toMatchObject({
      tier: 'POWER',
      tierMaxEndpointsPerUser: 10,
      effectiveMaxEndpointsPerUser: 10,
      source: 'tier',
    });
    await t.admin.put(cap(orgId), { maxEndpointsPerUser: 7, reason: 'r' });
    await t.admin.patch(`/admin/orgs/${orgId}`, { tier: 'PRO' });
    expect((await t.admin.get(cap(orgId))).body).toMatchObject({ tierMaxEndpointsPerUser: 3, effectiveMaxEndpointsPerUser: 7, source: 'grant' });
  });

  it.each([
    ['an unknown field', { maxEndpointsPerUser: 2, reason: 'r', note: 'x' }, 'note'],
    ['a missing reason', { maxEndpointsPerUser: 2 }, 'reason'],
    ['an empty reason', { maxEndpointsPerUser: 2, reason: '' }, 'reason'],
    ['a number given as a string', { maxEndpointsPerUser: '2', reason: 'r' }, 'maxEndpointsPerUser'],
    ['a fractional number', { maxEndpointsPerUser: 2.5, reason: 'r' }, 'maxEndpointsPerUser'],
    ['a negative number', { maxEndpointsPerUser: -1, reason: 'r' }, 'maxEndpointsPerUser'],
    ['a number over 1000', { maxEndpointsPerUser: 1001, reason: 'r' }, 'maxEndpointsPerUser'],
    ['a date that is not a date', { maxEndpointsPerUser: 2, reason: 'r', expiresAt: 'next tuesday' }, 'expiresAt'],
  ])('PUT refuses %s with 400 naming the field and changes nothing', async (_, body, field) => {
    const orgId = await newOrg('PRO');
    const res = await t.admin.put(cap(orgId), body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ statusCode: 400, field });
    expect(res.body.message).toContain(field);
    expect((await t.admin.get(cap(orgId))).body).toMatchObject({ source: 'tier', grant: null, history: [] });
  });

  it('DELETE refuses an unknown field or an empty reason with 400', async () => {
    const orgId = await newOrg('PRO');
    await t.admin.put(cap(orgId), { maxEndpointsPerUser: 4, reason: 'r' });
    const unknown = await t.admin.delete(cap(orgId), { why: 'x' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.field).toBe('why');
    const empty = await t.admin.delete(cap(orgId), { reason: '' });
    expect(empty.status).toBe(400);
    expect(empty.body.field).toBe('reason');
    expect((await t.admin.get(cap(orgId))).body.source).toBe('grant');
  });

  it('answers 404 for an unknown org on GET, PUT and DELETE', async () => {
    const orgId = randomUUID();
    for (const res of [
      await t.admin.get(cap(orgId)),
      await t.admin.put(cap(orgId), { maxEndpointsPerUser: 2, reason: 'r' }),
      await t.admin.delete(cap(orgId)),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ statusCode: 404, field: 'orgId' });
    }
  });
});
