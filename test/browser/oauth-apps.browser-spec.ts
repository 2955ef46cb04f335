import { Page } from 'playwright-core';
import { waitUntil } from '../support/wait';
import { expectAccessible, PHONE_VIEWPORT, screenshot, useBrowser, VIEWPORT } from './support/browser';
import { exchangeAndConnect, ownerWithTwoLines, signInBackToConsent, startConnecting, useRedirectTarget } from './support/oauth';

/** The page has nothing wider than a phone's screen (a wide table scrolls inside its own box). */
async function expectNoHorizontalScrollOnPhone(page: Page, name: string): Promise<void> {
  await page.setViewportSize(PHONE_VIEWPORT);
  const width = await page.evaluate('document.scrollingElement.scrollWidth');
  expect(width).toBeLessThanOrEqual(PHONE_VIEWPORT.width);
  await expectAccessible(page, `${name} (phone)`);
  await page.setViewportSize(VIEWPORT);
}

/** tools/list straight over HTTP with a bearer token: the status (401 once the grant is revoked) and its WWW-Authenticate. */
async function toolsList(serverUrl: string, token: string): Promise<{ status: number; challenge: string | null }> {
  const res = await fetch(serverUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  await res.body?.cancel();
  return { status: res.status, challenge: res.headers.get('www-authenticate') };
}

/**
 * An MCP host known by its Client ID Metadata Document (docs/mcp.md), in a real chromium: the
 * host's web server on loopback serves the document (the app in development with the loopback
 * allowlist admits an http one, as for webhooks) and asks to read and send; the person signs in,
 * the consent page says the identity comes from that document (Webhooks, not asked for, cannot
 * be ticked), Allow; the SDK lists tools and calls one. Then Settings → Connected apps shows the
 * grant; Change access takes Send away, and the host's next tools/list lacks the send tools;
 * Revoke (its confirmation page, then the list) cuts it off: the next MCP call is 401 and the
 * SDK's refresh gets invalid_grant. Screenshots of the list with one grant and empty, and of the
 * Change access form, at desktop and phone widths (docs/ui/connected-apps*.png).
 */
describe('browser: an MCP host by its metadata document, Change access and Revoke in Settings → Connected apps', () => {
  const b = useBrowser({ app: { env: { APP_ENV: 'development', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' } } });
  const redirectTarget = useRedirectTarget();

  it('metadata document → sign-in → consent names the document → Allow → tools; Connected apps lists it; Change access → fewer tools; Revoke → 401 and invalid_grant', async () => {
    const { owner, line, onLine } = await ownerWithTwoLines(b);
    const page = b.page;
    const target = redirectTarget();

    const documentUrl = target.serveJson('/oauth/client.json', (url) => ({
      client_id: url,
      client_name: 'Document Agent',
      client_uri: 'https://agent.example',
      redirect_uris: [target.redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }));
    const { host, serverUrl } = await startConnecting(b, target, 'Document Agent', documentUrl, 'read send');
    expect(host.authorizationUrl!.searchParams.get('client_id')).toBe(documentUrl);
    await signInBackToConsent(b, owner, host);
    const consent = await page.locator('main').innerText();
    expect(consent).toContain(`This app's identity comes from its metadata document at ${new URL(documentUrl).host}`);
    expect(consent).not.toContain('registered itself');

    await page.getByRole('radio', { name: 'Specific lines' }).check();
    await page.getByRole('checkbox', { name: line.address }).check();
    await page.getByRole('checkbox', { name: 'Read' }).check();
    await page.getByRole('checkbox', { name: 'Send' }).check();
    // The host asked to read and send: Webhooks is there, unticked, and cannot be ticked.
    const webhooks = page.getByRole('checkbox', { name: 'Webhooks' });
    expect([await webhooks.isChecked(), await webhooks.isDisabled()]).toEqual([false, true]);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(target.redirectUri));
    await page.getByText('You can close this window').waitFor();
    expect(target.received).toHaveLength(1);
    const { issued, client } = await exchangeAndConnect(host, serverUrl, target.received[0].searchParams.get('code'), 'browser-oauth-cimd');
    expect(issued).toMatchObject({ scope: 'read send', expires_in: 3600, refresh_token: expect.any(String) });
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(['list_threads', 'send_sms']));
      expect(names).not.toContain('register_webhook');
      const listed = (await client.callTool({ name: 'list_threads', arguments: {} })).structuredContent as any;
      expect(listed.threads.map((x: any) => x.thread.id)).toEqual([onLine.threadId]);

      // Settings → Connected apps: the grant, once its use is recorded (last used is written beside the call).
      await page.goto('/settings/connected-apps');
      const row = page.getByRole('row', { name: /Document Agent/ });
      await waitUntil(async () => {
        await page.reload();
        return !(await row.innerText()).includes('never');
      }, 'the grant listed with a last use');
      expect(await row.getByRole('rowheader').innerText()).toBe('Document Agent\nMetadata document');
      const cells = await row.getByRole('cell').allInnerTexts();
      expect(cells.slice(0, 3)).toEqual([new URL(target.redirectUri).host, line.address, 'Read, Send']);
      // At a desktop's width the whole row shows, Revoke included: the table does not scroll inside its box.
      const overflow = await page.evaluate(`(box => box.scrollWidth - box.clientWidth)(document.querySelector('.table-scroll'))`);
      expect(overflow).toBe(0);
      await expectAccessible(page, 'connected apps (desktop)');
      await screenshot(page, 'connected-apps');
      await expectNoHorizontalScrollOnPhone(page, 'connected apps');
      await screenshot(page, 'connected-apps-phone', { viewport: PHONE_VIEWPORT });

      // Change access: the link, the form with the app's access (Webhooks, never asked for, cannot be ticked), Send taken away.
      await page.getByRole('link', { name: 'Change access of Document Agent' }).click();
      await page.getByRole('heading', { name: 'Access of “Document Agent”' }).waitFor();
      expect(await page.getByRole('radio', { name: 'Specific lines' }).isChecked()).toBe(true);
      expect(await page.getByRole('checkbox', { name: line.address }).isChecked()).toBe(true);
      expect([await page.getByRole('checkbox', { name: 'Read' }).isChecked(), await page.getByRole('checkbox', { name: 'Send' }).isChecked()]).toEqual([
        true,
        true,
      ]);
      expect(await page.getByRole('checkbox', { name: 'Webhooks' }).isDisabled()).toBe(true);
      expect(await page.locator('main').innerText()).toContain('It asked for Read, Send when you connected it, and can be given no more than that');
      await expectAccessible(page, 'change access of a connected app (desktop)');
      await screenshot(page, 'connected-apps-edit');
      await expectNoHorizontalScrollOnPhone(page, 'change access of a connected app');
      await screenshot(page, 'connected-apps-edit-phone', { viewport: PHONE_VIEWPORT });
      await page.getByRole('checkbox', { name: 'Send' }).uncheck();
      await page.getByRole('button', { name: 'Save' }).click();
      await page.waitForURL((url) => url.pathname === '/settings/connected-apps' && url.searchParams.get('notice') === 'saved');
      await page.getByRole('status').filter({ hasText: "The app's channel access and permissions were saved." }).waitFor();
      expect((await row.getByRole('cell').allInnerTexts()).slice(1, 3)).toEqual([line.address, 'Read']);
      // The host's next request, with the access token it holds, sees it: the send tools are gone.
      const narrowed = (await client.listTools()).tools.map((tool) => tool.name);
      expect(narrowed).toContain('list_threads');
      expect(narrowed).not.toContain('send_sms');
      expect(host.saved!.access_token).toBe(issued.access_token);

      // Revoke: the link, its confirmation page, then the list, empty.
      await page.getByRole('link', { name: 'Revoke Document Agent' }).click();
      await page.getByRole('heading', { name: 'Disconnect “Document Agent”?' }).waitFor();
      expect(await page.locator('main').innerText()).toContain(`The app returning to ${new URL(target.redirectUri).host} loses its access at once`);
      await expectAccessible(page, 'revoke a connected app');
      await screenshot(page, 'connected-apps-revoke');
      await page.getByRole('button', { name: 'Revoke access' }).click();
      await page.waitForURL((url) => url.pathname === '/settings/connected-apps' && url.searchParams.get('notice') === 'revoked');
      await page.getByRole('status').filter({ hasText: 'The app was disconnected.' }).waitFor();
      expect(await page.getByRole('row', { name: /Document Agent/ }).count()).toBe(0);
      expect(await page.locator('main').innerText()).toContain('You have not connected any app yet.');

      // The next MCP call is 401; the SDK meets it, tries its refresh token, and the server answers invalid_grant.
      expect(await toolsList(serverUrl, issued.access_token)).toEqual({
        status: 401,
        challenge: expect.stringContaining('error="invalid_token"'),
      });
      const failure = await client.callTool({ name: 'list_threads', arguments: {} }).then(
        () => new Error('the call succeeded'),
        (error: unknown) => error,
      );
      expect(failure).toMatchObject({ name: 'InvalidGrantError' });
      expect(host.saved!.refresh_token).toBe(issued.refresh_token);
    } finally {
      await client.close();
    }

    // The empty state, as a person who connected nothing (or disconnected everything) sees it.
    await page.goto('/settings/connected-apps');
    const empty = await page.locator('main').innerText();
    expect(empty).toContain('You have not connected any app yet.');
    expect(empty).toContain(serverUrl);
    await expectAccessible(page, 'connected apps, empty (desktop)');
    await screenshot(page, 'connected-apps-empty');
    await expectNoHorizontalScrollOnPhone(page, 'connected apps, empty');
    await screenshot(page, 'connected-apps-empty-phone', { viewport: PHONE_VIEWPORT });
  });
});
