import { request as httpRequest } from 'node:http';
import { DataSource } from 'typeorm';
import { HOST_RESOLVER } from '../src/webhooks/url-policy/url-policy';
import { createTestApp, TestApp } from './support/app';
import { MutableResolver } from './support/delivery';
import { listen } from './support/raw-http';
import { createSession, Session } from './support/session';

/** The origin of PUBLIC_BASE_URL in the test environment (test/support/env.ts). */
const ORIGIN = 'http://127.0.0.1:3000';

/** The web app as an attacker, and a careless client, would use it (docs/web.md, "CSRF and headers"). */
describe('web: hardening of the page forms', () => {
  let t: TestApp;
  let db: DataSource;
  const resolver = new MutableResolver(); // every host name answers a public address

  beforeAll(async () => {
    t = await createTestApp({ env: { SIGN_IN_RATE_LIMIT_PER_IP: '1000' }, overrides: (b) => b.overrideProvider(HOST_RESOLVER).useValue(resolver) });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t?.close();
  });

  interface Browser {
    cookie: string;
    csrf: string;
    session: Session;
  }

  async function signIn(session: Session): Promise<Browser> {
    const link = await t.admin.post(`/admin/users/${session.userId}/sign-in-links`).expect(201);
    const token = new URL(link.body.url).searchParams.get('token')!;
    const res = await t.http().post('/sign-in/link').set('Origin', ORIGIN).type('form').send({ token }).expect(303);
    const cookie = String(res.headers['set-cookie'][0]).split(';')[0];
    const page = await t.http().get('/settings/api-keys').set('Cookie', cookie).expect(200);
    return { cookie, csrf: /name="_csrf" value="([^"]+)"/.exec(page.text)![1], session };
  }

  /** A form POST from the service's own page, its body given as the bytes to send. */
  const postRaw = (b: Browser, path: string, body: string) =>
    t.http().post(path).set('Cookie', b.cookie).set('Origin', ORIGIN).set('Content-Type', 'application/x-www-form-urlencoded').send(body);

  /** The same with bytes as they are (supertest would serialise a Buffer): status and body. */
  async function postBytes(b: Browser, path: string, body: Buffer): Promise<{ status: number; text: string }> {
    const port = await listen(t.app.getHttpServer());
    const headers = { Cookie: b.cookie, Origin: ORIGIN, 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': String(body.length) };
    return new Promise((done, fail) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => done({ status: res.statusCode!, text: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', fail);
      req.end(body);
    });
  }

  const keyNames = async (userId: string): Promise<string[]> =>
    (await db.query('SELECT name FROM api_keys WHERE user_id = $1 ORDER BY name', [userId])).map((row: { name: string }) => row.name);

  it('a form field that is not UTF-8 (percent-encoded or raw) is a 400 page naming it, and nothing is stored', async () => {
    const b = await signIn(await createSession(t.admin, { lines: [] }));
    const before = await keyNames(b.session.userId);

    // %FF is no UTF-8 at all; %ED%A0%80 would be a UTF-16 surrogate; %C0%80 an overlong NUL.
    for (const bad of ['%FF%FE', '%ED%A0%80', '%C0%80']) {
      const res = await postRaw(b, '/settings/api-keys', `_csrf=${b.csrf}&name=key${bad}&access=ALL`).expect(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.text).toContain('The field &quot;name&quot; is not UTF-8 text.');
    }
    const raw = Buffer.concat([Buffer.from(`_csrf=${b.csrf}&name=key`), Buffer.from([0xff, 0xfe]), Buffer.from('&access=ALL')]);
    expect(await postBytes(b, '/settings/api-keys', raw)).toEqual({ status: 400, text: expect.stringContaining('The form is not UTF-8 text.') });
    expect((await postRaw(b, '/settings/api-keys', `_csrf=${b.csrf}&na%FFme=x&name=key&access=ALL`).expect(400)).text).toContain(
      'The name of the field &quot;na\uFFFDme&quot; is not UTF-8 text.',
    );
    expect(await keyNames(b.session.userId)).toEqual(before);

    // The sign-in form too (no session): refused, not read as a mangled address.
    const signIn400 = await t.http().post('/sign-in').set('Origin', ORIGIN).type('form').send('email=pat%FF%40example.com').expect(400);
    expect(signIn400.text).toContain('The field &quot;email&quot; is not UTF-8 text.');

    // Well-formed text, a literal %, + as a space and %2B as a plus still read as a browser sends them.
    const ok = await postRaw(b, '/settings/api-keys', `_csrf=${b.csrf}&name=caf%C3%A9+100%25+%2B+50%&access=ALL`).expect(200);
    expect(ok.text).toContain('For “café 100% + 50%”');
  });
});
