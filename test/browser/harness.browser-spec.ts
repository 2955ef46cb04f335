import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_TOKEN } from '../support/test-env';
import { expectAccessible, screenshot, useBrowser } from './support/browser';

/** The smallest valid PNG (1×1, transparent), served as the fixture pages' image. */
const PIXEL = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
/** The policy the fixture pages are served with: what the app's own pages will get, or stricter. */
const CSP = "default-src 'none'; img-src 'self'; style-src 'self'";

const page = (body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Fixture</title></head><body><main>${body}</main></body></html>`;
const FIXTURES: Record<string, string> = {
  // An input without a label and an image without alt text: two critical axe violations.
  '/broken': page('<h1>Sign in</h1><input id="email" type="email"><img src="/pixel.png">'),
  '/fixed': page('<h1>Sign in</h1><label for="email">Email</label><input id="email" type="email"><img src="/pixel.png" alt="Logo">'),
  // An inline script the policy refuses, and an image that is not there.
  '/faulty': page('<h1>Faulty</h1><script>document.title = "ran"</script><img src="/missing.png" alt="Missing">'),
};

/** The harness itself, on the app's admin docs and on static pages made to fail. */
describe('browser test harness', () => {
  const b = useBrowser();
  let fixtures: Server;
  let fixtureUrl: string;
  beforeAll(async () => {
    fixtures = createServer((req, res) => {
      if (req.url === '/pixel.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(PIXEL);
      const html = FIXTURES[req.url ?? ''];
      if (!html) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP }).end(html);
    });
    await new Promise<void>((resolve) => fixtures.listen(0, '127.0.0.1', resolve));
    fixtureUrl = `http://127.0.0.1:${(fixtures.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => fixtures.close(() => resolve())));

  it('shows an operator with the admin token the admin API docs, and anyone else a 401', async () => {
    await b.context.setExtraHTTPHeaders({ Authorization: `Bearer ${ADMIN_TOKEN}` });
    await b.page.goto('/admin/docs');
    const title = b.page.getByRole('heading', { name: /Messaging sync service: admin API/ });
    await title.waitFor();
    expect(await b.page.title()).toBe('Swagger UI');
    expect(await b.page.getByText('Internal operator surface.').isVisible()).toBe(true);
    expect(await b.page.getByRole('button', { name: 'Authorize' }).isVisible()).toBe(true);

    const anonymous = await b.browser.newPage({ baseURL: b.baseUrl });
    try {
      const refused = await anonymous.goto('/admin/docs');
      expect(refused?.status()).toBe(401);
      expect(await anonymous.locator('body').textContent()).toContain('a valid admin token is required');
    } finally {
      await anonymous.close();
    }
  });

  it('expectAccessible fails on a page with serious violations, listing each, and passes once fixed', async () => {
    await b.page.goto(`${fixtureUrl}/broken`);
    const error = await expectAccessible(b.page, 'broken sign-in').then(
      () => null,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/^broken sign-in \(http:\/\/127\.0\.0\.1:\d+\/broken\) has 2 serious or critical/);
    expect(error?.message).toMatch(/^label \(critical\): Form elements must have labels .*\n {4}at #email$/m);
    expect(error?.message).toMatch(/^image-alt \(critical\): Images must have alternative text .*\n {4}at img$/m);

    await b.page.goto(`${fixtureUrl}/fixed`);
    const results = await expectAccessible(b.page, 'fixed sign-in');
    expect(results.passes.map((rule) => rule.id)).toEqual(expect.arrayContaining(['label', 'image-alt']));
  });

  it('collects console errors (CSP violations among them) and failed requests of the pages', async () => {
    await b.page.goto(`${fixtureUrl}/faulty`);
    await b.page.waitForLoadState('networkidle');
    expect(await b.page.title()).toBe('Fixture'); // the inline script did not run
    expect(b.problems.list).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^console error: .*inline script.*Content Security Policy/),
        expect.stringMatching(/^HTTP 404: GET http:\/\/127\.0\.0\.1:\d+\/missing\.png$/),
      ]),
    );
    expect(() => b.problems.expectNone()).toThrow(/^The page had \d+ problem\(s\):\n {2}- /);
    b.problems.clear(); // seen and checked: the fixture's own check after the test passes
  });

  it('screenshot writes a 1280 px wide full-page PNG once, and again only with UPDATE_SCREENSHOTS=1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'screenshots-'));
    const update = process.env.UPDATE_SCREENSHOTS;
    try {
      delete process.env.UPDATE_SCREENSHOTS;
      await b.page.goto(`${fixtureUrl}/fixed`);
      const file = await screenshot(b.page, 'fixed-sign-in', { dir });
      expect(file).toBe(join(dir, 'fixed-sign-in.png'));
      const png = readFileSync(file!);
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 800]); // IHDR width, height
      const written = statSync(file!).mtimeMs;

      expect(await screenshot(b.page, 'fixed-sign-in', { dir })).toBeNull();
      expect(statSync(file!).mtimeMs).toBe(written);
      process.env.UPDATE_SCREENSHOTS = '1';
      expect(await screenshot(b.page, 'fixed-sign-in', { dir })).toBe(file);
    } finally {
      if (update === undefined) delete process.env.UPDATE_SCREENSHOTS;
      else process.env.UPDATE_SCREENSHOTS = update;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
