import { createTestApp, TestApp } from '../support/app';
import { createSession } from '../support/session';
import { signInBrowser } from '../support/web';

/** What a browser sends when a person types an address. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('pages: unknown paths typed into a browser, and the add-endpoint hint', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('an unknown path typed into a browser gets the 404 page; API clients still get JSON', async () => {
    for (const path of ['/no-such-page', '/inbox/some/thing', '/settings/nope']) {
      const page = await t.http().get(path).set('Accept', BROWSER_ACCEPT);
      // /settings/* asks a signed-out person to sign in first (docs/web.md); the others are the page at once.
      if (path.startsWith('/settings')) {
        expect([page.status, page.headers.location]).toEqual([303, '/sign-in']);
        continue;
      }
      expect(page.status).toBe(404);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['content-security-policy']).toBeDefined();
      expect(page.text).toContain('<h1>Not found</h1>');
      expect(page.text).toContain('There is no page at this address. Check it, or start again from the link below.');
      expect(page.text).toContain('<a href="/">Back to the start</a>');
      expect(page.text).not.toContain('links at the top');
    }
    const json = await t.http().get('/no-such-page').set('Accept', 'application/json').expect(404);
    expect(json.body).toMatchObject({ statusCode: 404, error: 'Not Found' });
    const anything = await t.http().get('/no-such-page').set('Accept', '*/*').expect(404);
    expect(anything.headers['content-type']).toMatch(/^application\/json/);
    const post = await t.http().post('/no-such-page').set('Accept', BROWSER_ACCEPT).send({}).expect(404);
    expect(post.headers['content-type']).toMatch(/^application\/json/);
  });

  it('a signed-in person on an unknown settings page reads no promise of links the page lacks', async () => {
    const s = await createSession(t.admin);
    const browser = await signInBrowser(t, s.userId);
    const page = await t.http().get('/settings/nope').set('Cookie', browser.cookie).set('Accept', BROWSER_ACCEPT).expect(404);
    expect(page.text).toContain('There is no such settings page. Check the address, or start again from the link below.');
    expect(page.text).toContain('<a href="/">Back to the start</a>');
  });

  it('the add-endpoint hint states the URL rule this service applies', async () => {
    const s = await createSession(t.admin);
    const browser = await signInBrowser(t, s.userId);
    const production = await t.http().get('/settings/webhooks/new').set('Cookie', browser.cookie).expect(200);
    expect(production.text).toContain('An https:// address that resolves to public addresses.');

    const dev = await createTestApp({ env: { APP_ENV: 'development' } });
    try {
      const d = await createSession(dev.admin);
      const devBrowser = await signInBrowser(dev, d.userId);
      const page = await dev.http().get('/settings/webhooks/new').set('Cookie', devBrowser.cookie).expect(200);
      expect(page.text).toContain('An http:// or https:// address that resolves to public addresses, or to 127.0.0.0/8, ::1/128 (allowed on this service).');
    } finally {
      await dev.close();
    }
  });
});
