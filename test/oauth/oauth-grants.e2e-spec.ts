import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';
import { rpc, toolOk } from '../support/mcp';
import { connectApp, ConnectedApp, OAUTH_REDIRECT, registerClient, refreshTokens, s256 } from '../support/oauth';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';
import { PAGE_ORIGIN, PageBrowser, postForm, signInBrowser } from '../support/web';

/** Connected apps (OAuth grants): the person's page, the operators' routes, live access, and registrations never used. */
describe('OAuth grants: Settings → Connected apps, admin routes, live access', () => {
  let t: TestApp;
  let db: DataSource;

  beforeAll(async () => {
    t = await createTestApp({ env: { SIGN_IN_RATE_LIMIT_PER_IP: '1000' } });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t?.close();
  });

  const mcpStatus = async (token: string) => (await rpc(t, token, 'tools/list')).status;
  const phonesOf = async (token: string) =>
    (await toolOk<{ phoneNumbers: Array<{ id: string }> }>(t, token, 'list_phone_numbers', {})).phoneNumbers.map((p) => p.id).sort();
  const grantIdsOf = async (userId: string): Promise<string[]> =>
    (await db.query('SELECT id FROM oauth_grants WHERE user_id = $1 ORDER BY created_at', [userId])).map((r: { id: string }) => r.id);
  const page = (b: PageBrowser, path = '/settings/connected-apps') => t.http().get(path).set('Cookie', b.cookie);

  /** Revoked everywhere: the access token's next call is 401, its refresh token invalid_grant. */
  async function expectCutOff(app: ConnectedApp): Promise<void> {
    expect(await mcpStatus(app.accessToken)).toBe(401);
    const refreshed = await refreshTokens(t, app);
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe('invalid_grant');
  }

  async function person(lines: Array<'PHONE_NUMBER' | 'EMAIL_ACCOUNT'> = ['PHONE_NUMBER', 'PHONE_NUMBER']) {
    const s = await createSession(t.admin, { lines });
    return { s, b: await signInBrowser(t, s.userId) };
  }

  describe('the page', () => {
    it('says what connected apps are and how to connect one when there are none; the nav links it beside API keys', async () => {
      const { b } = await person();
      const res = await page(b).expect(200);
      expect(res.text).toContain('Connected apps are AI assistants');
      expect(res.text).toContain(`<code>${PAGE_ORIGIN}/api/mcp</code>`);
      expect(res.text).toContain('Connecting Claude, ChatGPT and other OAuth clients');
      expect(res.text).toContain('You have not connected any app yet.');
      expect(res.text).toContain('<a href="/settings/connected-apps" aria-current="page">Connected apps</a>');
      const keys = await page(b, '/settings/api-keys').expect(200);
      expect(keys.text).toMatch(
        /<a href="\/settings\/api-keys" aria-current="page">API keys<\/a><\/li><li><a href="\/settings\/connected-apps">Connected apps<\/a>/,
      );
    });

    it('lists a grant with its client, host, identity, lines and permissions; Revoke makes the next call 401 and the refresh invalid_grant', async () => {
      const { s, b } = await person();
      const [line, other] = s.lines;
      const app = await connectApp(t, b, {
        clientName: 'Page Agent',
        choice: { access: 'LINES', [`line-${line.id}`]: 'on', 'permissions-shown': 'on', 'permission-read': 'on', 'permission-send': 'on' },
      });
      expect(await phonesOf(app.accessToken)).toEqual([line.id]);
      const [grantId] = await grantIdsOf(s.userId);

      const list = await page(b).expect(200);
      const row = /<tbody>([\s\S]*)<\/tbody>/.exec(list.text)![1];
      expect(row).toContain('<th scope="row">Page Agent<br/><span class="muted">Self-registered</span></th>');
      expect(row).toContain(`<td>${new URL(OAUTH_REDIRECT).host}</td>`);
      expect(row).toContain(line.address);
      expect(row).not.toContain(other.address);
      expect(row).toContain('Read, Send');
      expect(row).toMatch(/<time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time>/);
      expect(row).toContain(`href="/settings/connected-apps/${grantId}/revoke"`);

      const confirm = await page(b, `/settings/connected-apps/${grantId}/revoke`).expect(200);
      expect(confirm.text).toContain(`action="/settings/connected-apps/${grantId}/revoke"`);
      expect(confirm.text).toContain('name="_csrf"');

      // Without the CSRF token, or from another origin: refused, nothing changes.
      expect((await postForm(t, { ...b, csrf: 'x'.repeat(43) }, `/settings/connected-apps/${grantId}/revoke`)).status).toBe(403);
      expect(
        (
          await t
            .http()
            .post(`/settings/connected-apps/${grantId}/revoke`)
            .set('Cookie', b.cookie)
            .set('Origin', 'https://evil.example')
            .type('form')
            .send({ _csrf: b.csrf })
        ).status,
      ).toBe(403);
      expect(await mcpStatus(app.accessToken)).toBe(200);

      const revoked = await postForm(t, b, `/settings/connected-apps/${grantId}/revoke`).expect(303);
      expect(revoked.headers.location).toBe('/settings/connected-apps?notice=revoked');
      await expectCutOff(app);
      const after = await page(b, revoked.headers.location).expect(200);
      expect(after.text).toContain('The app was disconnected.');
      expect(after.text).toContain('You have not connected any app yet.');
      expect(await grantIdsOf(s.userId)).toEqual([]);
      // Again: not found.
      expect((await postForm(t, b, `/settings/connected-apps/${grantId}/revoke`)).status).toBe(404);
    });

    it("another person's grant cannot be seen or revoked from one's page (404), and keeps working", async () => {
      const alice = await person();
      const bob = await person();
      const app = await connectApp(t, alice.b, { clientName: "Alice's Agent" });
      const [grantId] = await grantIdsOf(alice.s.userId);

      expect((await page(bob.b)).text).not.toContain("Alice's Agent");
      expect((await page(bob.b, `/settings/connected-apps/${grantId}/revoke`)).status).toBe(404);
      const refused = await postForm(t, bob.b, `/settings/connected-apps/${grantId}/revoke`);
      expect(refused.status).toBe(404);
      expect(refused.text).toContain('Connected app not found');
      expect((await postForm(t, bob.b, `/settings/connected-apps/${randomUUID()}/revoke`)).status).toBe(404);
      expect((await postForm(t, bob.b, '/settings/connected-apps/not-a-uuid/revoke')).status).toBe(404);

      expect(await grantIdsOf(alice.s.userId)).toEqual([grantId]);
      expect(await mcpStatus(app.accessToken)).toBe(200);
      expect((await refreshTokens(t, app)).status).toBe(200);
    });

    it('is usable at 375 px: the table scrolls inside its box; the page sets the viewport', async () => {
      const { b } = await person();
      await connectApp(t, b);
      const res = await page(b).expect(200);
      expect(res.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1"/>');
      expect(res.text).toContain('<div class="table-scroll"><table class="data">');
    });
  });

  describe('admin routes', () => {
    it('lists a user’s grants and revokes one (204): the next call is 401 and the refresh invalid_grant', async () => {
      const { s, b } = await person();
      const first = await connectApp(t, b, { clientName: 'First' });
      const second = await connectApp(t, b, {
        clientName: 'Second',
        choice: { access: 'LINES', [`line-${s.lines[0].id}`]: 'on', 'permissions-shown': 'on', 'permission-read': 'on' },
      });
      const list = await t.admin.get(`/admin/users/${s.userId}/oauth-grants`).expect(200);
      expect(list.body).toEqual([
        {
          id: expect.any(String),
          userId: s.userId,
          client: { id: second.clientId, name: 'Second', redirectHost: '127.0.0.1:9', registration: 'self-registered' },
          channelAccess: { mode: 'LINES', lines: [{ id: s.lines[0].id, address: s.lines[0].address }] },
          permissions: ['read'],
          requestedScopes: ['read', 'send', 'webhooks'],
          createdAt: expect.any(String),
          lastUsedAt: null,
        },
        expect.objectContaining({ client: expect.objectContaining({ id: first.clientId, name: 'First' }), channelAccess: { mode: 'ALL' } }),
      ]);
      expect(JSON.stringify(list.body)).not.toMatch(/cs[ar]_/);

      await t.admin.delete(`/admin/oauth-grants/${list.body[0].id}`).expect(204);
      await expectCutOff(second);
      expect(await mcpStatus(first.accessToken)).toBe(200);
      const left = await t.admin.get(`/admin/users/${s.userId}/oauth-grants`).expect(200);
      expect(left.body.map((g: { id: string }) => g.id)).toEqual([list.body[1].id]);
      expect((await t.admin.delete(`/admin/oauth-grants/${list.body[0].id}`).expect(404)).body).toMatchObject({ field: 'grantId' });
    });

    it('answers 400 naming the field for malformed ids, 404 for unknown ones', async () => {
      expect((await t.admin.get('/admin/users/nope/oauth-grants').expect(400)).body).toMatchObject({ field: 'userId' });
      expect((await t.admin.get(`/admin/users/${randomUUID()}/oauth-grants`).expect(404)).body).toMatchObject({ field: 'userId' });
      expect((await t.admin.delete('/admin/oauth-grants/nope').expect(400)).body).toMatchObject({ field: 'grantId' });
      expect((await t.admin.delete(`/admin/oauth-grants/${randomUUID()}`).expect(404)).body).toMatchObject({ field: 'grantId' });
      expect((await t.http().get(`/admin/users/${randomUUID()}/oauth-grants`)).status).toBe(401);
    });
  });

  describe('removing a user or their access ends the grant’s reach on its next use', () => {
    let s: Session;
    let app: ConnectedApp;
    beforeEach(async () => {
      const p = await person(['PHONE_NUMBER', 'PHONE_NUMBER', 'PHONE_NUMBER']);
      s = p.s;
      app = await connectApp(t, p.b);
      expect(await phonesOf(app.accessToken)).toEqual(s.lines.map((l) => l.id).sort());
    });

    it('a membership removed, a line deleted: the next call no longer reaches them', async () => {
      const [a, b, c] = s.lines;
      await t.admin.delete(`/admin/lines/${a.id}/members/${s.userId}`).expect(204);
      expect(await phonesOf(app.accessToken)).toEqual([b.id, c.id].sort());
      await t.admin.delete(`/admin/lines/${b.id}`).expect(204);
      expect(await phonesOf(app.accessToken)).toEqual([c.id]);
      // A grant of Specific lines whose only line was taken away reaches nothing.
      const narrow = await connectApp(t, await signInBrowser(t, s.userId), {
        choice: { access: 'LINES', [`line-${c.id}`]: 'on', 'permissions-shown': 'on', 'permission-read': 'on' },
      });
      expect(await phonesOf(narrow.accessToken)).toEqual([c.id]);
      await t.admin.delete(`/admin/lines/${c.id}/members/${s.userId}`).expect(204);
      expect(await phonesOf(narrow.accessToken)).toEqual([]);
      expect(await phonesOf(app.accessToken)).toEqual([]);
    });

    it('the user deleted: their grants are deleted with them, and the tokens are 401 and invalid_grant', async () => {
      // The admin API has no user deletion: the row goes as an operator's SQL (or a future route) would remove it.
      await db.transaction(async (m) => {
        await m.query('DELETE FROM api_keys WHERE user_id = $1', [s.userId]);
        await m.query('DELETE FROM line_memberships WHERE user_id = $1', [s.userId]);
        await m.query('DELETE FROM web_sessions WHERE user_id = $1', [s.userId]);
        await m.query('DELETE FROM users WHERE id = $1', [s.userId]);
      });
      expect(await grantIdsOf(s.userId)).toEqual([]);
      await expectCutOff(app);
    });
  });
});

describe('OAuth: registrations never used expire', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { OAUTH_UNUSED_CLIENT_TTL_SECONDS: '1', SIGN_IN_RATE_LIMIT_PER_IP: '1000' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** What the authorization endpoint says of a client: 200 (the consent page, signed in) or 400 "not registered". */
  async function known(clientId: string, cookie: string): Promise<boolean> {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: OAUTH_REDIRECT,
      code_challenge: s256('v'.repeat(43)),
      code_challenge_method: 'S256',
      resource: `${PAGE_ORIGIN}/api/mcp`,
    });
    const res = await t.http().get(`/oauth/authorize?${query.toString()}`).set('Cookie', cookie);
    if (res.status === 400) expect(res.text).toContain(`No app ${clientId} is registered here`);
    else expect(res.status).toBe(200);
    return res.status === 200;
  }

  it('a background job deletes a client that never got a grant; one that got a grant stays, even after it is revoked', async () => {
    const s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const b = await signInBrowser(t, s.userId);
    const used = await connectApp(t, b, { clientName: 'Used' });
    const unused = await registerClient(t, 'Never used');
    const list = await t.admin.get(`/admin/users/${s.userId}/oauth-grants`).expect(200);
    await t.admin.delete(`/admin/oauth-grants/${list.body[0].id}`).expect(204);

    await waitUntil(async () => !(await known(unused, b.cookie)), 'the unused registration to be deleted');
    expect(await known(used.clientId, b.cookie)).toBe(true);
    // The client that was used can connect again.
    const again = await connectApp(t, b, { clientId: used.clientId });
    expect((await rpc(t, again.accessToken, 'tools/list')).status).toBe(200);
  });
});
