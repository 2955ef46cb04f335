import { randomBytes } from 'node:crypto';
import { createTestApp, TestApp } from '../support/app';
import { authorizationUrl, decodeHtml, freePort, hiddenFields, oauthBrowser, postConsent, s256 } from '../support/oauth';
import { createSession, Session } from '../support/session';

/**
 * The consent page shows where the app returns, its hostname in bold (MCP authorization
 * 2026-07-28: the redirect URI hostname MUST be clearly displayed), and warns when that is the
 * person's own computer: any program there could claim to be the app ("Localhost Redirect URI
 * Risks": SHOULD display additional warnings). It speaks of the app, never of a key, and offers
 * only the permissions the app asked for (its scope).
 */
describe('OAuth consent page: where the app returns, and the warning for this computer', () => {
  let t: TestApp;
  let base: string;
  let s: Session;
  let cookie: string | undefined;
  const { browserTo } = oauthBrowser(() => ({ t, base, userId: s.userId }));

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_BASE_URL: base } });
    await t.app.listen(port, '127.0.0.1');
    s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** The consent page of a new client registered with `redirectUri` (asking for `scope`, when given), signed in. */
  async function consentFor(redirectUri: string, scope?: string): Promise<string> {
    const registered = await t
      .http()
      .post('/oauth/register')
      .send({ client_name: 'Where Agent', redirect_uris: [redirectUri] })
      .expect(201);
    const url = authorizationUrl(base, {
      client_id: registered.body.client_id,
      redirect_uri: redirectUri,
      code_challenge: s256(randomBytes(32).toString('base64url')),
      code_challenge_method: 'S256',
      scope,
    });
    const b = await browserTo(url.href, cookie);
    cookie = b.cookie;
    return b.page;
  }

  const WARNING =
    /<div class="notice warning" id="loopback-warning"><p><strong>This app returns to your own computer \(([^)]+)\)\.<\/strong><\/p><p>([^<]+)<\/p><\/div>/;

  it.each([
    ['http://127.0.0.1:33418/callback', '127.0.0.1', ':33418'],
    ['http://localhost:8080/oauth/callback', 'localhost', ':8080'],
    ['http://[::1]:9/callback', '[::1]', ':9'],
    ['https://127.0.0.2/callback', '127.0.0.2', ''],
  ])('%s: the hostname in bold, and the warning that any program on this computer could be the app', async (redirectUri, hostname, port) => {
    const page = await consentFor(redirectUri);
    const portPart = port ? `<span class="muted">${port}</span>` : '';
    expect(page).toContain(`<p>After you choose, you return to</p><p class="return-host"><strong>${hostname}</strong>${portPart}</p>`);
    const warning = WARNING.exec(page);
    expect(warning?.[1]).toBe(hostname);
    expect(warning?.[2]).toContain('Any program running on this computer can listen there and claim to be Where Agent');
  });

  it('an app that returns to a host elsewhere: the hostname in bold, no warning', async () => {
    const page = await consentFor('https://app.example/oauth/callback');
    expect(page).toContain('<p>After you choose, you return to</p><p class="return-host"><strong>app.example</strong></p>');
    expect(page).not.toContain('loopback-warning');
    expect(page).not.toContain('your own computer');
  });

  /** The page's main text as a person reads it. */
  function mainText(html: string): string {
    return decodeHtml(/<main[^>]*>([\s\S]*)<\/main>/.exec(html)![1].replace(/<[^>]+>/g, ' '))
      .replace(/\s+/g, ' ')
      .trim();
  }

  it('speaks of the app, not of a key: the page, and the form shown again when no permission was chosen', async () => {
    const page = await consentFor('http://127.0.0.1:9/callback');
    const text = mainText(page);
    expect(text).toContain('This app registered itself (Dynamic Client Registration)');
    expect(text).toContain('What the app may do on these channels, never more than you may. Tools the app may not use are hidden from it.');
    expect(text).not.toMatch(/\bkeys?\b/i);
    // "Dynamic Client Registration" is the name of the protocol; otherwise the caller is "the app".
    expect(text.replace('Dynamic Client Registration', '')).not.toMatch(/\bclient\b/i);
    const again = await postConsent(t, cookie!, page, { decision: 'allow', access: 'ALL', 'permissions-shown': 'on' }, base);
    expect(again.status).toBe(400);
    const refused = mainText(again.text);
    expect(refused).toContain('Choose at least one permission: an app without any could not call any tool.');
    expect(refused).not.toMatch(/\bkeys?\b/i);
  });

  it('offers only the permissions the app asked for: one it did not ask for cannot be ticked, and a form that sends it allows nothing', async () => {
    const page = await consentFor('http://127.0.0.1:9/callback', 'read');
    expect(page).toMatch(/<input type="checkbox" id="permission-read" name="permission-read" value="on" checked aria-describedby/);
    for (const unasked of ['send', 'draft', 'webhooks'])
      expect(page).toMatch(new RegExp(`<input type="checkbox" id="permission-${unasked}" name="permission-${unasked}" value="on" disabled aria-describedby`));
    expect(mainText(page).split('This app did not ask for this permission, so it cannot be given it.')).toHaveLength(4);

    const forged = await postConsent(
      t,
      cookie!,
      page,
      { decision: 'allow', access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on', 'permission-webhooks': 'on' },
      base,
    );
    expect(forged.status).toBe(400);
    expect(mainText(forged.text)).toContain('Nothing was allowed yet: see below.');
    expect(forged.text).toContain(
      '<p class="field-error" id="permissions-error">This app did not ask for webhooks (it asked for read): an app may be given only the permissions it asked for.</p>',
    );
    const clientId = hiddenFields(page).client_id;
    const grantsOf = async () => (await t.admin.get(`/admin/users/${s.userId}/oauth-grants`).expect(200)).body.filter((g: any) => g.client.id === clientId);
    expect(await grantsOf()).toEqual([]);

    // What it asked for is allowed: the grant keeps its scope beside its permissions.
    const allowed = await postConsent(t, cookie!, page, { decision: 'allow', access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on' }, base);
    expect(allowed.status).toBe(303);
    expect(new URL(allowed.headers.location).searchParams.get('code')).toEqual(expect.any(String));
    expect(await grantsOf()).toEqual([expect.objectContaining({ permissions: ['read'], requestedScopes: ['read'] })]);
  });
});
