import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { createSession, Session } from '../support/session';
import { expectAccessible, screenshot, useBrowser } from './support/browser';

/**
 * Signing in and out in a real chromium: the sign-in pages, a link used twice or too late, sign
 * out, a cross-site form that tries to act for a signed-in person, and what a MEMBER sees of the
 * org's keys.
 */
describe('browser: sign-in, sign-out and cross-site requests', () => {
  const b = useBrowser();

  const linkFor = async (session: Session): Promise<string> => (await b.app.admin.post(`/admin/users/${session.userId}/sign-in-links`).expect(201)).body.url;

  async function signIn(session: Session): Promise<void> {
    await b.page.goto(await linkFor(session));
    await b.page.getByRole('button', { name: 'Sign in' }).click();
    await b.page.waitForURL('**/conversations');
    await b.page.goto('/settings/api-keys');
  }

  it('asks for a link by email, then signs in once with a link: a second use and an expired link are refused', async () => {
    const owner = await createSession(b.app.admin, { role: 'OWNER' });
    const page = b.page;

    await page.goto('/');
    await page.waitForURL('**/sign-in');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expectAccessible(page, 'sign-in');
    await screenshot(page, 'sign-in');
    await page.getByLabel('Email').fill(owner.email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    await expectAccessible(page, 'check your email');
    await screenshot(page, 'sign-in-sent');

    const link = await linkFor(owner);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expectAccessible(page, 'sign-in link');
    await screenshot(page, 'sign-in-link');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/conversations');
    await page.getByText(owner.email).waitFor(); // the header says who is signed in

    b.problems.allow(/\b410\b/); // the refusals below answer 410 Gone, as they should
    const used = await page.goto(link);
    expect(used?.status()).toBe(410);
    await page.getByRole('heading', { name: 'This sign-in link was already used' }).waitFor();
    await expectAccessible(page, 'link already used');
    await screenshot(page, 'sign-in-link-used');

    const late = await linkFor(owner);
    await b.app.app
      .get(DataSource)
      .query(
        `UPDATE sign_in_links SET created_at = now() - interval '20 minutes', expires_at = now() - interval '5 minutes' WHERE user_id = $1 AND used_at IS NULL`,
        [owner.userId],
      );
    expect((await page.goto(late))?.status()).toBe(410);
    await page.getByRole('heading', { name: 'This sign-in link has expired' }).waitFor();
    await page.getByRole('link', { name: 'Request a new sign-in link' }).click();
    // Still signed in (the first link's session): the sign-in page leads on to the app.
    await page.waitForURL('**/conversations');
    await page.getByRole('heading', { level: 1, name: 'Conversations' }).waitFor();
  });

  it('Sign out ends the session at once: the settings pages send the browser to sign in again', async () => {
    const owner = await createSession(b.app.admin, { role: 'OWNER' });
    await signIn(owner);
    const cookie = (await b.context.cookies()).find((c) => c.name.endsWith('mss_session'));
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

    await b.page.getByRole('button', { name: 'Sign out' }).click();
    await b.page.waitForURL('**/sign-in');
    await b.page.goto('/settings/webhooks');
    await b.page.waitForURL('**/sign-in');
    // The old cookie is dead on the server, not only forgotten by the browser.
    const again = await fetch(`${b.baseUrl}/settings/api-keys`, { headers: { cookie: `${cookie!.name}=${cookie!.value}` }, redirect: 'manual' });
    expect({ status: again.status, location: again.headers.get('location') }).toEqual({ status: 303, location: '/sign-in' });
  });

  it('a form on another site that posts to Sign out while the person is signed in is refused, and the session lives on', async () => {
    const owner = await createSession(b.app.admin, { role: 'OWNER' });
    await signIn(owner);
    const attacker: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        `<!doctype html><html lang="en"><title>Win a prize</title><form method="post" action="${b.baseUrl}/sign-out"><button>Claim</button></form></html>`,
      );
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    try {
      b.problems.allow(/\b403\b/); // the refusal itself
      await b.page.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`);
      const [answer] = await Promise.all([b.page.waitForResponse(`${b.baseUrl}/sign-out`), b.page.getByRole('button', { name: 'Claim' }).click()]);
      expect(answer.status()).toBe(403);
      await b.page.waitForLoadState('networkidle'); // the refusal page, whole, before the next navigation
    } finally {
      await new Promise((resolve) => attacker.close(resolve));
    }
    await b.page.goto('/settings/api-keys');
    await b.page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    expect(b.page.url()).toBe(`${b.baseUrl}/settings/api-keys`);
  });

  it("a MEMBER sees only their own keys, not the owner's", async () => {
    const owner = await createSession(b.app.admin, { role: 'OWNER' });
    const member = await createSession(b.app.admin, { orgId: owner.orgId, role: 'MEMBER' });
    await b.app.admin.post(`/admin/users/${owner.userId}/api-keys`, { name: 'Owner only key', channelAccess: { mode: 'ALL' } }).expect(201);
    await signIn(member);
    await b.page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    const table = b.page.getByRole('table');
    expect(await table.getByRole('row').count()).toBe(2); // the header and the member's own key
    expect(await b.page.content()).not.toContain('Owner only key');
    expect(await b.page.content()).not.toContain(owner.email);
  });
});
