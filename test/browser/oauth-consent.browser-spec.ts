import { DataSource } from 'typeorm';
import { hiddenFields } from '../support/oauth';
import { createSession } from '../support/session';
import { expectAccessible, PHONE_VIEWPORT, screenshot, useBrowser, VIEWPORT } from './support/browser';
import { exchangeAndConnect, ownerWithTwoLines, signInBackToConsent, startConnecting, useRedirectTarget } from './support/oauth';

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
  const redirectTarget = useRedirectTarget();

  it('SDK client → sign-in → Specific lines + Read only → Allow → read tools on that line only; refresh; the page cannot be framed', async () => {
    const { owner, line, onLine } = await ownerWithTwoLines(b);
    const page = b.page;
    const target = redirectTarget();

    const { host, serverUrl } = await startConnecting(b, target, 'Browser Agent');
    await signInBackToConsent(b, owner, host);
    const shown = await page.reload();
    // The page cannot be framed: both the old header and CSP say so.
    expect(shown!.headers()['x-frame-options']).toBe('DENY');
    expect(shown!.headers()['content-security-policy']).toMatch(/(^|;)\s*frame-ancestors 'none'(;|$)/);
    const text = await page.locator('main').innerText();
    expect(text).toContain('Browser Agent');
    expect(text).toContain(new URL(target.redirectUri).host);
    expect(text).toContain('registered itself');
    // The host's redirect URI is on this computer (127.0.0.1): its hostname in bold, and the warning.
    const returnsTo = page.locator('#return-host .return-host strong');
    expect(await returnsTo.innerText()).toBe('127.0.0.1');
    const warning = page.locator('#loopback-warning');
    expect(await warning.isVisible()).toBe(true);
    expect(await warning.innerText()).toContain('This app returns to your own computer (127.0.0.1).');
    expect(await warning.innerText()).toContain('Any program running on this computer can listen there and claim to be Browser Agent.');

    await page.getByRole('radio', { name: 'Specific lines' }).check();
    await page.getByRole('checkbox', { name: line.address }).check();
    expect(await page.getByRole('checkbox', { name: 'Read' }).isChecked()).toBe(true);
    await page.getByRole('checkbox', { name: 'Send' }).uncheck();
    await page.getByRole('checkbox', { name: 'Webhooks' }).uncheck();
    await expectAccessible(page, 'consent (desktop)');
    await screenshot(page, 'oauth-consent');
    await page.setViewportSize(PHONE_VIEWPORT);
    // At a phone's width nothing is wider than the screen (a host's app opens this page on phones),
    // and the hostname and the warning are there in full.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE_VIEWPORT.width);
    for (const shown of [returnsTo, warning]) {
      expect(await shown.isVisible()).toBe(true);
      const box = (await shown.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(PHONE_VIEWPORT.width);
    }
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
    const { issued: first, client } = await exchangeAndConnect(host, serverUrl, response.searchParams.get('code'), 'browser-oauth');
    expect(first).toMatchObject({ scope: 'read', expires_in: 3600, refresh_token: expect.any(String) });
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
    const target = redirectTarget();
    const owner = await createSession(b.app.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const { host } = await startConnecting(b, target, 'Denied Agent');
    await signInBackToConsent(b, owner, host);
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
    const target = redirectTarget();
    const owner = await createSession(b.app.admin, { role: 'OWNER', lines: ['PHONE_NUMBER'] });
    const { host } = await startConnecting(b, target, 'Targeted Agent');
    await signInBackToConsent(b, owner, host);
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
