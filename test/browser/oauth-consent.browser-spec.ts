import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DataSource } from 'typeorm';
import { inboundSms, partnerPhone } from '../support/messaging-hooks';
import { hiddenFields, McpHost } from '../support/oauth';
import { createSession, Session } from '../support/session';
import { expectAccessible, PHONE_VIEWPORT, screenshot, useBrowser, VIEWPORT } from './support/browser';

/** The MCP host's side of the redirect: a loopback HTTP server that keeps every authorization response it receives. */
class RedirectTarget {
  readonly received: URL[] = [];
  private readonly server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', this.origin);
    if (url.pathname === '/callback') this.received.push(url);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(url.pathname === '/callback' ? '<!doctype html><html lang="en"><title>Connected</title><p>You can close this window.</p></html>' : this.page);
  });
  origin = '';
  /** What any other path serves (the cross-site form of a test). */
  page = '<!doctype html><html lang="en"><title>Other site</title></html>';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }
  get redirectUri(): string {
    return `${this.origin}/callback`;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Connecting an MCP host by OAuth in a real chromium (docs/mcp.md, "Connecting Claude, ChatGPT and
 * other OAuth clients"): the official SDK client registers itself (DCR) and opens the authorization
 * URL in the browser; the person signs in, comes back to consent, picks one line and Read only and
 * allows; the SDK exchanges the code its redirect URI received, lists the read tools and sees only
 * that line; an expired access token is refreshed by the SDK by itself. Deny sends access_denied;
 * the consent page cannot be framed, and a form on another site that posts it is refused.
 */
describe('browser: OAuth consent for an MCP host', () => {
  const b = useBrowser();
  let target: RedirectTarget;

  beforeEach(async () => {
    target = await new RedirectTarget().start();
  });
  afterEach(async () => {
    await target.close();
  });

  /** The SDK's first step: registration, then the browser sent to the authorization URL, which lands on sign-in. */
  async function startConnecting(name: string): Promise<{ host: McpHost; serverUrl: string }> {
    const serverUrl = `${b.baseUrl}/api/mcp`;
    const host = new McpHost(target.redirectUri, name, async (url) => {
      await b.page.goto(url.href);
    });
    expect(await auth(host, { serverUrl })).toBe('REDIRECT');
    await b.page.waitForURL('**/sign-in');
    return { host, serverUrl };
  }

  /** Signs in with an admin-made link, as the other browser tests do, and comes back to the authorization request. */
  async function signInBackToConsent(session: Session, host: McpHost): Promise<void> {
    const link = await b.app.admin.post(`/admin/users/${session.userId}/sign-in-links`).expect(201);
    await b.page.goto(link.body.url);
    await b.page.getByRole('button', { name: 'Sign in' }).click();
    await b.page.waitForURL((url) => url.pathname === '/oauth/authorize');
    expect(b.page.url()).toBe(host.authorizationUrl!.href);
    await b.page.getByRole('heading', { name: `Connect ${host.clientMetadata.client_name}` }).waitFor();
  }

  it('SDK client → sign-in → Specific lines + Read only → Allow → read tools on that line only; refresh; the page cannot be framed', async () => {
    const owner = await createSession(b.app.admin, { role: 'OWNER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    const [line, other] = owner.lines;
    const onLine = await inboundSms(b.app, line.address, partnerPhone(), 'on the chosen line');
    await inboundSms(b.app, other.address, partnerPhone(), 'on the other line');
    const page = b.page;

    const { host, serverUrl } = await startConnecting('Browser Agent');
    await signInBackToConsent(owner, host);
    const shown = await page.reload();
    // The page cannot be framed: both the old header and CSP say so.
    expect(shown!.headers()['x-frame-options']).toBe('DENY');
    expect(shown!.headers()['content-security-policy']).toMatch(/(^|;)\s*frame-ancestors 'none'(;|$)/);
    const text = await page.locator('main').innerText();
    expect(text).toContain('Browser Agent');
    expect(text).toContain(new URL(target.redirectUri).host);
    expect(text).toContain('registered itself');

    await page.getByRole('radio', { name: 'Specific lines' }).check();
    await page.getByRole('checkbox', { name: line.address }).check();
    expect(await page.getByRole('checkbox', { name: 'Read' }).isChecked()).toBe(true);
    await page.getByRole('checkbox', { name: 'Send' }).uncheck();
    await page.getByRole('checkbox', { name: 'Webhooks' }).uncheck();
    await expectAccessible(page, 'consent (desktop)');
    await screenshot(page, 'oauth-consent');
    await page.setViewportSize(PHONE_VIEWPORT);
    // At a phone's width nothing is wider than the screen (a host's app opens this page on phones).
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE_VIEWPORT.width);
    await expectAccessible(page, 'consent (phone)');
    await screenshot(page, 'oauth-consent-phone', { viewport: PHONE_VIEWPORT });
    await page.setViewportSize(VIEWPORT);

    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(target.redirectUri));
    await page.getByText('You can close this window').waitFor();
    expect(target.received).toHaveLength(1);
    const response = target.received[0];
    expect(response.searchParams.get('state')).toBe('state-42');
    expect(response.searchParams.get('iss')).toBe(b.baseUrl);
    const code = response.searchParams.get('code');
    expect(code).toEqual(expect.any(String));

    expect(await auth(host, { serverUrl, authorizationCode: code! })).toBe('AUTHORIZED');
    const first = host.saved!;
    expect(first).toMatchObject({ scope: 'read', expires_in: 3600, refresh_token: expect.any(String) });

    const client = new Client({ name: 'browser-oauth', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: host }));
    try {
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThan(5);
      expect(tools.filter((tool) => !tool.annotations?.readOnlyHint || tool.name.includes('webhook')).map((tool) => tool.name)).toEqual([]);
      const listed = async () =>
        ((await client.callTool({ name: 'list_threads', arguments: {} })).structuredContent as any).threads.map((x: any) => x.thread.id);
      expect(await listed()).toEqual([onLine.threadId]);

      // Refresh: the access token expires; the SDK meets the 401, refreshes by itself and calls again.
      const [{ count }] = await b.app.app
        .get(DataSource)
        .query(
          `WITH expired AS (UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE kind = 'access' AND grant_id IN (SELECT id FROM oauth_grants WHERE client_id = $1) RETURNING 1) SELECT count(*)::int AS count FROM expired`,
          [host.info!.client_id],
        );
      expect(count).toBe(1);
      expect(await listed()).toEqual([onLine.threadId]);
      expect(host.saved!.access_token).not.toBe(first.access_token);
      expect(host.saved!.refresh_token).not.toBe(first.refresh_token);
    } finally {
      await client.close();
    }
    const old = await fetch(serverUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${first.access_token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(old.status).toBe(401);
  });

  it('Deny sends the browser to the redirect URI with access_denied, and nothing is granted', async () => {
    const owner = await createSession(b.app.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const { host } = await startConnecting('Denied Agent');
    await signInBackToConsent(owner, host);
    await b.page.getByRole('button', { name: 'Deny' }).click();
    await b.page.waitForURL((url) => url.href.startsWith(target.redirectUri));
    expect(target.received).toHaveLength(1);
    const response = target.received[0];
    expect(Object.fromEntries(response.searchParams)).toEqual({
      error: 'access_denied',
      error_description: 'the person denied the request',
      state: 'state-42',
      iss: b.baseUrl,
    });
    const grants = await b.app.app.get(DataSource).query(`SELECT id FROM oauth_grants WHERE client_id = $1`, [host.info!.client_id]);
    expect(grants).toEqual([]);
    expect(host.saved).toBeUndefined();
  });

  it('a form on another site that posts consent (with the real form fields) is refused, and no code is sent', async () => {
    const owner = await createSession(b.app.admin, { role: 'OWNER', lines: ['PHONE_NUMBER'] });
    const { host } = await startConnecting('Targeted Agent');
    await signInBackToConsent(owner, host);
    // Everything the real form holds, CSRF token included, copied by the other site.
    const fields = { ...hiddenFields(await b.page.content()), decision: 'allow', access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on' };
    target.page =
      `<!doctype html><html lang="en"><title>Win a prize</title><form method="post" action="${b.baseUrl}/oauth/authorize">` +
      Object.entries(fields)
        .map(([name, value]) => `<input type="hidden" name="${name}" value="${value.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}">`)
        .join('') +
      '<button>Claim</button></form></html>';
    b.problems.allow(/\b403\b/); // the refusal itself
    await b.page.goto(`${target.origin}/prize`);
    const [answer] = await Promise.all([b.page.waitForResponse(`${b.baseUrl}/oauth/authorize`), b.page.getByRole('button', { name: 'Claim' }).click()]);
    expect(answer.status()).toBe(403);
    await b.page.waitForLoadState('networkidle');
    expect(target.received).toEqual([]);
    expect(await b.app.app.get(DataSource).query(`SELECT id FROM oauth_grants WHERE client_id = $1`, [host.info!.client_id])).toEqual([]);
  });
});
