import { randomUUID } from 'node:crypto';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';
import { rpc, toolError, toolOk } from '../support/mcp';
import { accessChoice, connectApp, ConnectedApp, consentChoice, OAUTH_REDIRECT, registerClient, refreshTokens, s256 } from '../support/oauth';
import { listen } from '../support/raw-http';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';
import { PAGE_ORIGIN, PageBrowser, postForm, signInBrowser } from '../support/web';

/**
 * Connected apps (OAuth grants): the person's page, Change access (the app's next request, with the
 * token it holds, has the new access; its subscriptions/listen streams are told; never a permission
 * it did not ask for), the operators' routes, live access, and registrations never used.
 */
describe('OAuth grants: Settings → Connected apps, Change access, admin routes, live access', () => {
  let t: TestApp;
  let db: DataSource;

  beforeAll(async () => {
    // The listen streams' periodic recheck at its longest (5 min): within a test, only the word of a change can tell a stream.
    t = await createTestApp({ env: { SIGN_IN_RATE_LIMIT_PER_IP: '1000', MCP_LISTEN_KEEPALIVE_MS: '300000' } });
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

  describe('Change access (OAuthService.updateGrantAccess): the app keeps its tokens, its next request has the new access', () => {
    const BASE = '/settings/connected-apps';
    const grantOf = async (app: ConnectedApp): Promise<string> => (await db.query('SELECT id FROM oauth_grants WHERE client_id = $1', [app.clientId]))[0].id;
    const accessRow = async (grantId: string) =>
      (await db.query('SELECT channel_access_mode, allowed_addresses, permissions, requested_scopes FROM oauth_grants WHERE id = $1', [grantId]))[0];
    const toolNames = async (token: string): Promise<string[]> =>
      (await rpc(t, token, 'tools/list').expect(200)).body.result.tools.map((tool: { name: string }) => tool.name);

    it('the list links Change access; the form shows the access, the permissions the app did not ask for cannot be ticked', async () => {
      const { s, b } = await person();
      const app = await connectApp(t, b, {
        clientName: 'Scoped Agent',
        scope: 'read send',
        choice: consentChoice({ lineIds: [s.lines[0].id], permissions: ['read'] }),
      });
      const grantId = await grantOf(app);
      expect(await accessRow(grantId)).toEqual({
        channel_access_mode: 'LINES',
        allowed_addresses: [s.lines[0].address],
        permissions: ['read'],
        requested_scopes: ['read', 'send'],
      });
      const admin = await t.admin.get(`/admin/users/${s.userId}/oauth-grants`).expect(200);
      expect(admin.body[0]).toMatchObject({ id: grantId, permissions: ['read'], requestedScopes: ['read', 'send'] });

      const list = await page(b, BASE).expect(200);
      expect(list.text).toContain(`<a href="${BASE}/${grantId}/edit">Change access<span class="visually-hidden"> of Scoped Agent</span></a>`);

      const form = await page(b, `${BASE}/${grantId}/edit`).expect(200);
      expect(form.text).toContain('<title>Access of “Scoped Agent”');
      expect(form.text).toContain(`<form method="post" action="${BASE}/${grantId}/edit" class="stack form">`);
      expect(form.text).toContain(`name="_csrf" value="${b.csrf}"`);
      expect(form.text).toMatch(new RegExp(`<input type="radio" id="access-lines" name="access" value="LINES" checked`));
      expect(form.text).toMatch(new RegExp(`<input type="checkbox" id="line-${s.lines[0].id}" name="line-${s.lines[0].id}" value="on" checked`));
      expect(form.text).toMatch(new RegExp(`<input type="checkbox" id="line-${s.lines[1].id}" name="line-${s.lines[1].id}" value="on"/>`));
      expect(form.text).toMatch(/<input type="checkbox" id="permission-read" name="permission-read" value="on" checked/);
      expect(form.text).toMatch(/<input type="checkbox" id="permission-send" name="permission-send" value="on" aria-describedby/);
      expect(form.text).toMatch(/<input type="checkbox" id="permission-webhooks" name="permission-webhooks" value="on" disabled/);
      expect(form.text).toContain('This app did not ask for this permission, so it cannot be given it.');
      expect(form.text).toContain(
        'It asked for Read, Send when you connected it, and can be given no more than that: to give it a permission it did not ask for',
      );

      // Widening within what it asked for: Send added, All channels. 303 to the list with the notice.
      const saved = await postForm(t, b, `${BASE}/${grantId}/edit`, accessChoice({ permissions: ['read', 'send'] })).expect(303);
      expect(saved.headers.location).toBe(`${BASE}?notice=saved`);
      const after = await page(b, saved.headers.location).expect(200);
      expect(after.text).toContain("The app's channel access and permissions were saved. Its next request uses them.");
      expect(after.text).toMatch(/All channels<\/td><td>Read, Send<\/td>/);
      expect(await accessRow(grantId)).toMatchObject({ channel_access_mode: 'ALL', allowed_addresses: [], permissions: ['read', 'send'] });
      expect(await toolNames(app.accessToken)).toContain('send_sms');
    });

    it("narrowing an app's permissions: its next tools/list lacks the tools, and a call is refused as not granted", async () => {
      const { b } = await person();
      const app = await connectApp(t, b, { choice: consentChoice({ permissions: ['read', 'send', 'webhooks'] }) });
      expect(await toolNames(app.accessToken)).toEqual(expect.arrayContaining(['list_threads', 'send_sms', 'register_webhook']));

      await postForm(t, b, `${BASE}/${await grantOf(app)}/edit`, accessChoice({ permissions: ['read'] })).expect(303);
      const names = await toolNames(app.accessToken);
      expect(names).toContain('list_threads');
      expect(names).not.toContain('send_sms');
      expect(names).not.toContain('register_webhook');
      expect(await toolError(t, app.accessToken, 'send_sms', { to: '+15550100', body: 'hi' })).toBe(
        'send_sms needs the send or draft permission, which this app was not granted (it has read)',
      );
      expect(await toolError(t, app.accessToken, 'list_webhooks', {})).toBe(
        'list_webhooks needs the webhooks permission, which this app was not granted (it has read)',
      );
    });

    it('narrowing its lines: list_phone_numbers shows only the kept line; a form without permissions keeps them', async () => {
      const { s, b } = await person();
      const [kept] = s.lines;
      const app = await connectApp(t, b);
      expect(await phonesOf(app.accessToken)).toEqual(s.lines.map((l) => l.id).sort());

      const grantId = await grantOf(app);
      await postForm(t, b, `${BASE}/${grantId}/edit`, accessChoice({ lineIds: [kept.id] })).expect(303);
      expect(await phonesOf(app.accessToken)).toEqual([kept.id]);
      expect(await accessRow(grantId)).toMatchObject({ channel_access_mode: 'LINES', allowed_addresses: [kept.address], permissions: ['read'] });
    });

    it("another person's grant, an unknown id, a revoked grant and a malformed id are the same 404, GET and POST, and nothing changes", async () => {
      const alice = await person();
      const bob = await person();
      const app = await connectApp(t, alice.b, { clientName: "Alice's Agent" });
      const aliceGrant = await grantOf(app);
      const before = await accessRow(aliceGrant);
      const fields = accessChoice({ lineIds: [bob.s.lines[0].id], permissions: ['read'] });
      const answers = async (b: PageBrowser, id: string) => {
        const get = await page(b, `${BASE}/${id}/edit`);
        const post = await postForm(t, b, `${BASE}/${id}/edit`, fields);
        return { get: { status: get.status, text: get.text }, post: { status: post.status, text: post.text } };
      };

      const unknown = await answers(bob.b, randomUUID());
      expect(unknown.get.status).toBe(404);
      expect(unknown.get.text).toContain('Connected app not found');
      expect(unknown.post).toEqual(unknown.get);
      expect(await answers(bob.b, aliceGrant)).toEqual(unknown);
      expect(await answers(bob.b, 'not-a-uuid')).toEqual(unknown);
      // Even a refused choice (no permission) does not tell another's grant from none.
      const empty = { access: 'ALL', 'permissions-shown': 'on' };
      expect((await postForm(t, bob.b, `${BASE}/${aliceGrant}/edit`, empty)).status).toBe(404);
      expect(await accessRow(aliceGrant)).toEqual(before);
      expect(await phonesOf(app.accessToken)).toEqual(alice.s.lines.map((l) => l.id).sort());

      // Bob's own grant, once revoked, is gone the same way.
      const bobs = await connectApp(t, bob.b);
      const bobGrant = await grantOf(bobs);
      await postForm(t, bob.b, `${BASE}/${bobGrant}/revoke`).expect(303);
      expect(await answers(bob.b, bobGrant)).toEqual(unknown);
    });

    it('a line that is not the person’s, or none, is refused naming the field (400), the choice kept, nothing changed', async () => {
      const { s, b } = await person();
      const colleague = await createSession(t.admin, { orgId: s.orgId, lines: ['PHONE_NUMBER'] });
      const app = await connectApp(t, b);
      const grantId = await grantOf(app);
      const before = await accessRow(grantId);

      const foreign = await postForm(t, b, `${BASE}/${grantId}/edit`, accessChoice({ lineIds: [colleague.lines[0].id], permissions: ['read'] })).expect(400);
      expect(foreign.text).toContain('Nothing was changed: see below.');
      expect(foreign.text).toMatch(
        /<p class="field-error" id="access-error">One of the chosen lines is not one of your lines: choose among the lines below\.<\/p>/,
      );
      expect(foreign.text).toMatch(/<fieldset class="channel-access" aria-describedby="access-error" aria-invalid="true">/);
      expect(foreign.text).toMatch(/<input type="radio" id="access-lines" name="access" value="LINES" checked/);
      expect(foreign.text).toContain(`action="${BASE}/${grantId}/edit"`);

      const unknownLine = await postForm(t, b, `${BASE}/${grantId}/edit`, accessChoice({ lineIds: [randomUUID()], permissions: ['read'] })).expect(400);
      expect(unknownLine.text).toContain('One of the chosen lines was not found: it may have been removed.');

      const noLine = await postForm(t, b, `${BASE}/${grantId}/edit`, { access: 'LINES', 'permissions-shown': 'on', 'permission-send': 'on' }).expect(400);
      expect(noLine.text).toContain('Choose at least one line for Specific lines, or choose All channels.');
      // The choice as typed: Specific lines, Send ticked (Read not).
      expect(noLine.text).toMatch(/<input type="checkbox" id="permission-send" name="permission-send" value="on" checked/);
      expect(noLine.text).toMatch(/<input type="checkbox" id="permission-read" name="permission-read" value="on" aria-describedby/);

      const noPermission = await postForm(t, b, `${BASE}/${grantId}/edit`, accessChoice({ permissions: [] })).expect(400);
      expect(noPermission.text).toMatch(
        /<p class="field-error" id="permissions-error">Choose at least one permission: an app without any could not call any tool\.<\/p>/,
      );
      expect(await accessRow(grantId)).toEqual(before);
      expect(await phonesOf(app.accessToken)).toEqual(s.lines.map((l) => l.id).sort());
    });

    it('a permission the app never asked for is refused naming permissions, nothing changed', async () => {
      const { b } = await person();
      const app = await connectApp(t, b, { scope: 'read' });
      const grantId = await grantOf(app);
      const before = await accessRow(grantId);
      expect(before.requested_scopes).toEqual(['read']);

      const refused = await postForm(t, b, `${BASE}/${grantId}/edit`, accessChoice({ permissions: ['read', 'send'] })).expect(400);
      expect(refused.text).toMatch(
        /<p class="field-error" id="permissions-error">This app did not ask for send \(it asked for read\): an app may be given only the permissions it asked for\.<\/p>/,
      );
      expect(refused.text).toMatch(/<fieldset class="permissions" aria-describedby="permissions-error" aria-invalid="true">/);
      expect(await accessRow(grantId)).toEqual(before);
      expect(await toolNames(app.accessToken)).not.toContain('send_sms');

      // Consent offers it the same way: test/oauth/oauth-consent-page.e2e-spec.ts.
    });

    describe('subscriptions/listen', () => {
      let url: URL;
      let s: Session;
      let b: PageBrowser;
      beforeAll(async () => {
        url = new URL(`http://127.0.0.1:${await listen(t.app.getHttpServer())}/api/mcp`);
        ({ s, b } = await person());
      });

      /** A v2 client pinned to 2026-07-28, listening for tools/list_changed with `token`: what it heard, in order. */
      async function listener(token: string) {
        const client = new ModernClient({ name: 'e2e-grant-listen', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
        await client.connect(new ModernTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
        const heard: string[] = [];
        client.setNotificationHandler('notifications/tools/list_changed', () => void heard.push('tools/list_changed'));
        const subscription = await client.listen({ toolsListChanged: true });
        expect(subscription.honoredFilter).toEqual({ toolsListChanged: true });
        return { client, heard };
      }

      it("an app's stream hears list_changed when its access is changed on the page; another app's and a key's streams of the same person do not", async () => {
        const all = consentChoice({ permissions: ['read', 'send', 'webhooks'] });
        const edited = await connectApp(t, b, { clientName: 'Edited Agent', choice: all });
        const other = await connectApp(t, b, { clientName: 'Other Agent', choice: all });
        const [la, lo, lk] = [await listener(edited.accessToken), await listener(other.accessToken), await listener(s.apiKey)];
        try {
          const otherTools = (await lo.client.listTools()).tools.map((tool) => tool.name);
          const keyTools = (await lk.client.listTools()).tools.map((tool) => tool.name);

          await postForm(t, b, `${BASE}/${await grantOf(edited)}/edit`, accessChoice({ lineIds: [s.lines[0].id], permissions: ['read'] })).expect(303);
          await waitUntil(() => la.heard.length === 1, "the edited app's list_changed");
          expect((await la.client.listTools()).tools.map((tool) => tool.name)).not.toContain('send_sms');
          // The other app and the key reach and may do what they did.
          expect((await lo.client.listTools()).tools.map((tool) => tool.name)).toEqual(otherTools);
          expect((await lk.client.listTools()).tools.map((tool) => tool.name)).toEqual(keyTools);

          // Each one's own change comes after the first and is told to it alone: by the time it is
          // heard, anything the first change had sent them would have come before it.
          await postForm(t, b, `${BASE}/${await grantOf(other)}/edit`, accessChoice({ permissions: ['read', 'send'] })).expect(303);
          await waitUntil(() => lo.heard.length === 1, "the other app's own list_changed");
          await postForm(t, b, `/settings/api-keys/${s.apiKeyId}/edit`, accessChoice({ lineIds: [s.lines[1].id] })).expect(303);
          await waitUntil(() => lk.heard.length === 1, "the key's own list_changed");
          expect([la.heard, lo.heard, lk.heard]).toEqual([['tools/list_changed'], ['tools/list_changed'], ['tools/list_changed']]);

          // Saving what the app already has changes nothing it sees: nothing is told (the key's change, later, is the bound).
          await postForm(t, b, `${BASE}/${await grantOf(edited)}/edit`, accessChoice({ lineIds: [s.lines[0].id], permissions: ['read'] })).expect(303);
          await postForm(t, b, `/settings/api-keys/${s.apiKeyId}/edit`, accessChoice({})).expect(303);
          await waitUntil(() => lk.heard.length === 2, "the key's second list_changed");
          expect(la.heard).toEqual(['tools/list_changed']);
        } finally {
          await Promise.all([la.client.close(), lo.client.close(), lk.client.close()]);
        }
      });
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
