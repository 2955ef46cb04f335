import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/clock';
import { SignInMailer } from '../../src/auth/web-sessions/sign-in-mailer';
import { SignInRequests } from '../../src/auth/web-sessions/sign-in-requests.service';
import { WebSessionsRetention } from '../../src/auth/web-sessions/web-sessions-retention';
import { createTestApp, TestApp } from '../support/app';
import { FakeClock } from '../support/delivery';

/** The origin of PUBLIC_BASE_URL in the test environment (test/support/env.ts). */
const ORIGIN = 'http://127.0.0.1:3000';
const CSP =
  "default-src 'self';script-src 'self';style-src 'self';img-src 'self' data:;form-action 'self';frame-ancestors 'none';base-uri 'none';object-src 'none'";

class FakeMailer {
  readonly sent: Array<{ to: string; url: string }> = [];
  async send(to: string, url: string): Promise<void> {
    this.sent.push({ to, url });
  }
}

describe('web: sign-in links, sessions, CSRF and page headers', () => {
  let t: TestApp;
  let db: DataSource;
  const clock = new FakeClock();
  const mailer = new FakeMailer();
  let userId: string;
  let email: string;

  beforeAll(async () => {
    t = await createTestApp({
      env: { SESSION_IDLE_TIMEOUT_MINUTES: '30', SESSION_ABSOLUTE_TIMEOUT_HOURS: '2', SIGN_IN_RATE_LIMIT_PER_IP: '1000' },
      overrides: (b) => b.overrideProvider(Clock).useValue(clock).overrideProvider(SignInMailer).useValue(mailer),
    });
    db = t.app.get(DataSource);
    ({ userId, email } = await newUser());
  });
  afterAll(async () => {
    await t.close();
  });
  afterEach(() => {
    clock.offsetMs = 0;
  });

  async function newUser(): Promise<{ userId: string; email: string }> {
    const org = await t.admin.post('/admin/orgs', { name: 'Web org', tier: 'PRO' }).expect(201);
    const address = `person-${randomUUID()}@web.example`;
    const user = await t.admin.post(`/admin/orgs/${org.body.id}/users`, { email: address, displayName: 'Pat', role: 'OWNER' }).expect(201);
    return { userId: user.body.id, email: address };
  }

  async function newLink(user = userId): Promise<string> {
    const res = await t.admin.post(`/admin/users/${user}/sign-in-links`).expect(201);
    return new URL(res.body.url).searchParams.get('token')!;
  }

  function useLink(token: string) {
    return t.http().post('/sign-in/link').set('Origin', ORIGIN).type('form').send({ token });
  }

  /** Signs the user in; the session cookie as the browser sends it back. */
  async function signIn(user = userId): Promise<string> {
    const res = await useLink(await newLink(user)).expect(303);
    return String(res.headers['set-cookie'][0]).split(';')[0];
  }

  async function csrfOf(cookie: string): Promise<string> {
    const page = await t.http().get('/settings/api-keys').set('Cookie', cookie).expect(200);
    return /name="_csrf" value="([^"]+)"/.exec(page.text)![1];
  }

  function signOut(cookie: string, fields: Record<string, string>, origin: string | null = ORIGIN) {
    const req = t.http().post('/sign-out').set('Cookie', cookie).type('form');
    return (origin === null ? req : req.set('Origin', origin)).send(fields);
  }

  const isSignedIn = async (cookie: string) => (await t.http().get('/settings/api-keys').set('Cookie', cookie)).status === 200;

  it('admin link → a page with a Sign in button → one POST signs in and lands on /settings/api-keys', async () => {
    const created = await t.admin.post(`/admin/users/${userId}/sign-in-links`).expect(201);
    expect(created.headers['cache-control']).toBe('no-store'); // the link signs someone in: never cached
    expect(created.body.url).toMatch(/^http:\/\/127\.0\.0\.1:3000\/sign-in\/link\?token=sil_[A-Za-z0-9_-]{43}$/);
    expect(new Date(created.body.expiresAt).getTime() - Date.now()).toBeGreaterThan(14 * 60_000);
    expect(new Date(created.body.expiresAt).getTime() - Date.now()).toBeLessThanOrEqual(15 * 60_000);
    const token = new URL(created.body.url).searchParams.get('token')!;
    const [stored] = await db.query(`SELECT token_hash FROM sign_in_links WHERE token_hash <> $1 AND user_id = $2`, [token, userId]);
    expect(stored.token_hash).toMatch(/^[0-9a-f]{64}$/);

    const page = await t.http().get(`/sign-in/link?token=${token}`).expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('<button type="submit">Sign in</button>');
    expect(page.text).toContain(`name="token" value="${token}"`);
    expect(page.text).toContain('<form method="post" action="/sign-in/link"');

    const res = await useLink(token).expect(303);
    expect(res.headers.location).toBe('/conversations');
    const setCookie = String(res.headers['set-cookie'][0]);
    expect(setCookie).toMatch(/^mss_session=ses_[A-Za-z0-9_-]{43}; /);
    expect(setCookie.split('; ').slice(1).sort()).toEqual(['HttpOnly', `Max-Age=${2 * 3600}`, 'Path=/', 'SameSite=Lax']);
    const cookie = setCookie.split(';')[0];

    const landing = await t.http().get('/settings/api-keys').set('Cookie', cookie).expect(200);
    expect(landing.text).toContain('<h1>API keys</h1>');
    expect(landing.text).toContain(email);
    expect(landing.text).toContain('href="/settings/webhooks"');
    expect(landing.text).toMatch(/<button type="submit" class="link-button">Sign out<\/button>/);
    const webhooks = await t.http().get('/settings/webhooks').set('Cookie', cookie).expect(200);
    expect(webhooks.text).toContain('<h1>Webhooks</h1>');
    expect((await t.http().get('/').set('Cookie', cookie).expect(303)).headers.location).toBe('/conversations');
    expect((await t.http().get('/').expect(303)).headers.location).toBe('/sign-in');
  });

  it('a link works once: a second use (and its page) answers 410 "already used"', async () => {
    const token = await newLink();
    await useLink(token).expect(303);
    const again = await useLink(token).expect(410);
    expect(again.text).toContain('already used');
    expect(again.text).toContain('href="/sign-in"');
    expect(again.headers['set-cookie']).toBeUndefined();
    expect((await t.http().get(`/sign-in/link?token=${token}`).expect(410)).text).toContain('already used');
  });

  it('of concurrent uses of one link, exactly one signs in', async () => {
    const token = await newLink();
    const answers = await Promise.all(Array.from({ length: 6 }, () => useLink(token)));
    expect(answers.map((a) => a.status).sort()).toEqual([303, 410, 410, 410, 410, 410]);
  });

  it('an expired link (past 15 minutes) answers 410 "expired" and signs nobody in', async () => {
    const token = await newLink();
    clock.offsetMs = 15 * 60_000 + 1_000;
    expect((await t.http().get(`/sign-in/link?token=${token}`).expect(410)).text).toContain('has expired');
    const res = await useLink(token).expect(410);
    expect(res.text).toContain('has expired');
    expect(res.headers['set-cookie']).toBeUndefined();
    clock.offsetMs = 14 * 60_000;
    expect((await t.http().get(`/sign-in/link?token=${token}`)).status).toBe(200);
  });

  it('a tampered or made-up token answers 400 "not valid"', async () => {
    const token = await newLink();
    const tampered = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect((await t.http().get(`/sign-in/link?token=${tampered}`).expect(400)).text).toContain('not valid');
    expect((await useLink(tampered).expect(400)).text).toContain('not valid');
    expect((await t.http().get('/sign-in/link?token=nonsense').expect(400)).text).toContain('not valid');
    expect((await t.http().get('/sign-in/link').expect(400)).text).toContain('not valid');
    await useLink(token).expect(303); // the real one is untouched
  });

  it('/sign-in has a labelled Email field and answers a known and an unknown address identically, mailing only the known one', async () => {
    const form = await t.http().get('/sign-in').expect(200);
    expect(form.text).toContain('<label for="email">Email</label>');
    expect(form.text).toContain('<input id="email" name="email" type="email"');
    expect(form.text).toContain('<button type="submit">Email me a sign-in link</button>');

    const unknown = `nobody-${randomUUID()}@web.example`;
    mailer.sent.length = 0;
    const post = (address: string) => t.http().post('/sign-in').set('Origin', ORIGIN).type('form').send({ email: address });
    const known = await post(email.toUpperCase());
    const other = await post(unknown);
    await t.app.get(SignInRequests).settled();
    expect([known.status, other.status]).toEqual([200, 200]);
    expect(known.text).toBe(other.text);
    expect(known.text).toContain('If this address belongs to an account');
    expect(mailer.sent.map((m) => m.to)).toEqual([email]);
    const token = new URL(mailer.sent[0].url).searchParams.get('token')!;
    await useLink(token).expect(303);
    expect((await post('not an address')).status).toBe(400);
  });

  it('limits sign-in requests per address (429 with Retry-After beyond 5 per window), known or not', async () => {
    const address = `limited-${randomUUID()}@web.example`;
    const post = () => t.http().post('/sign-in').set('Origin', ORIGIN).type('form').send({ email: address });
    for (let i = 0; i < 5; i++) await post().expect(200);
    const refused = await post().expect(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.text).toContain('Too many sign-in links');
    await t
      .http()
      .post('/sign-in')
      .set('Origin', ORIGIN)
      .type('form')
      .send({ email: `other-${randomUUID()}@web.example` })
      .expect(200);
  });

  it('signed in, /sign-in leads on to the app; sign-out revokes the session at once and clears the cookie', async () => {
    const cookie = await signIn();
    // Signed in, the sign-in page and / lead on to the app.
    expect((await t.http().get('/sign-in').set('Cookie', cookie).expect(303)).headers.location).toBe('/conversations');
    expect((await t.http().get('/').set('Cookie', cookie).expect(303)).headers.location).toBe('/conversations');
    const csrf = await csrfOf(cookie);
    const res = await signOut(cookie, { _csrf: csrf }).expect(303);
    expect(res.headers.location).toBe('/sign-in');
    // Signed out, the same cookie gets the sign-in form again.
    expect((await t.http().get('/sign-in').set('Cookie', cookie).expect(200)).text).toContain('Email');
    expect(String(res.headers['set-cookie'][0])).toMatch(/^mss_session=; Max-Age=0; Path=\/; HttpOnly; SameSite=Lax$/);
    const after = await t.http().get('/settings/api-keys').set('Cookie', cookie).expect(303);
    expect(after.headers.location).toBe('/sign-in');
    const [row] = await db.query(`SELECT count(*)::int AS n FROM web_sessions WHERE user_id = $1 AND revoked_at IS NOT NULL`, [userId]);
    expect(row.n).toBeGreaterThan(0);
  });

  it('without a session: a page GET goes to /sign-in, a POST gets a 403 page', async () => {
    expect((await t.http().get('/settings/webhooks').expect(303)).headers.location).toBe('/sign-in');
    expect((await t.http().get('/settings/webhooks').set('Cookie', 'mss_session=ses_forged').expect(303)).headers.location).toBe('/sign-in');
    const post = await t
      .http()
      .post('/settings/api-keys')
      .set('Cookie', 'mss_session=nothing')
      .set('Origin', ORIGIN)
      .type('form')
      .send({ _csrf: 'x', name: 'k' });
    expect(post.status).toBe(403);
    expect(post.headers['content-type']).toMatch(/^text\/html/);
  });

  it('/settings leads to the first settings page; an unknown settings path is the 404 page, not JSON', async () => {
    const cookie = await signIn();
    expect((await t.http().get('/settings').set('Cookie', cookie).expect(303)).headers.location).toBe('/settings/api-keys');
    const missing = await t.http().get('/settings/no-such-page/42').set('Cookie', cookie).expect(404);
    expect(missing.headers['content-type']).toMatch(/^text\/html/);
    expect(missing.text).toContain('There is no such settings page.');
    expect((await t.http().get('/settings/no-such-page').expect(303)).headers.location).toBe('/sign-in');
    // The real pages are not shadowed.
    expect((await t.http().get('/settings/webhooks').set('Cookie', cookie)).status).toBe(200);
  });

  it('signing out with a session that already ended clears the dead cookie and leads to /sign-in (not a 403 that kept it)', async () => {
    const cookie = await signIn();
    const csrf = await csrfOf(cookie);
    await t.admin.delete(`/admin/users/${userId}/sessions`).expect(204);
    const res = await signOut(cookie, { _csrf: csrf }).expect(303);
    expect(res.headers.location).toBe('/sign-in');
    expect(String(res.headers['set-cookie'][0])).toMatch(/^mss_session=; Max-Age=0;/);
    // A live session still needs its CSRF token, and a cross-site form is still refused.
    const live = await signIn();
    expect((await signOut(live, { _csrf: 'wrong' })).status).toBe(403);
    expect((await signOut(live, { _csrf: await csrfOf(live) }, 'https://evil.example')).status).toBe(403);
    expect(await isSignedIn(live)).toBe(true);
  });

  it('admin: lists sessions without tokens, revokes them all at once, 404 naming userId for an unknown user', async () => {
    const other = await newUser();
    const [a, b] = [await signIn(other.userId), await signIn(other.userId)];
    expect(a).not.toBe(b);
    const list = await t.admin.get(`/admin/users/${other.userId}/sessions`).expect(200);
    expect(list.body).toHaveLength(2);
    expect(Object.keys(list.body[0]).sort()).toEqual(['active', 'createdAt', 'expiresAt', 'id', 'ip', 'lastSeenAt', 'revokedAt', 'userAgent']);
    expect(list.body.every((s: any) => s.active && s.revokedAt === null)).toBe(true);
    await t.admin.delete(`/admin/users/${other.userId}/sessions`).expect(204);
    expect([await isSignedIn(a), await isSignedIn(b)]).toEqual([false, false]);
    const after = await t.admin.get(`/admin/users/${other.userId}/sessions`).expect(200);
    expect(after.body.every((s: any) => !s.active && s.revokedAt !== null)).toBe(true);

    const missing = randomUUID();
    for (const res of [
      await t.admin.post(`/admin/users/${missing}/sign-in-links`),
      await t.admin.get(`/admin/users/${missing}/sessions`),
      await t.admin.delete(`/admin/users/${missing}/sessions`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.field).toBe('userId');
    }
    await t.http().post(`/admin/users/${other.userId}/sign-in-links`).expect(401);
  });

  it('a session ends after 30 idle minutes; activity keeps it, until 2 hours after sign-in', async () => {
    const idle = await signIn();
    clock.offsetMs = 31 * 60_000;
    expect(await isSignedIn(idle)).toBe(false);

    clock.offsetMs = 0;
    const active = await signIn();
    for (const minutes of [20, 40, 60, 80, 100, 118]) {
      clock.offsetMs = minutes * 60_000;
      expect({ minutes, signedIn: await isSignedIn(active) }).toEqual({ minutes, signedIn: true });
    }
    clock.offsetMs = 121 * 60_000;
    expect(await isSignedIn(active)).toBe(false);
  });

  it('a cross-site POST gets 403 and changes nothing: sign-out, sign-in and the link', async () => {
    const cookie = await signIn();
    const csrf = await csrfOf(cookie);
    expect((await signOut(cookie, { _csrf: csrf }, 'https://evil.example').expect(403)).headers['content-type']).toMatch(/^text\/html/);
    await signOut(cookie, { _csrf: csrf }, null).expect(403); // neither Origin nor Sec-Fetch-Site
    await t.http().post('/sign-out').set('Cookie', cookie).set('Sec-Fetch-Site', 'cross-site').type('form').send({ _csrf: csrf }).expect(403);
    expect(await isSignedIn(cookie)).toBe(true);

    mailer.sent.length = 0;
    await t.http().post('/sign-in').set('Origin', 'https://evil.example').type('form').send({ email }).expect(403);
    await t.http().post('/sign-in').set('Sec-Fetch-Site', 'same-site').type('form').send({ email }).expect(403);
    await t.app.get(SignInRequests).settled();
    expect(mailer.sent).toEqual([]);

    const token = await newLink();
    await t.http().post('/sign-in/link').set('Origin', 'https://evil.example').type('form').send({ token }).expect(403);
    await t.http().post('/sign-in/link').set('Sec-Fetch-Site', 'same-origin').type('form').send({ token }).expect(303);

    await t.http().post('/sign-out').set('Cookie', cookie).set('Sec-Fetch-Site', 'same-origin').type('form').send({ _csrf: csrf }).expect(303);
    expect(await isSignedIn(cookie)).toBe(false);
  });

  it('a POST without its _csrf field, or with a wrong one, gets 403 and changes nothing', async () => {
    const cookie = await signIn();
    const csrf = await csrfOf(cookie);
    await signOut(cookie, {}).expect(403);
    await signOut(cookie, { _csrf: csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A') }).expect(403);
    await signOut(cookie, { _csrf: await csrfOf(await signIn()) }).expect(403); // another session's token
    await t.http().post('/sign-out').set('Cookie', cookie).set('Origin', ORIGIN).send({ _csrf: csrf }).expect(403); // JSON is not a form
    expect(await isSignedIn(cookie)).toBe(true);
    await signOut(cookie, { _csrf: csrf }).expect(303);
  });

  it('pages carry the CSP, X-Frame-Options, Referrer-Policy and no-store; /api/mcp, /admin and /health keep their headers', async () => {
    const cookie = await signIn();
    for (const res of [
      await t.http().get('/sign-in'),
      await t.http().get('/settings/api-keys').set('Cookie', cookie),
      await t.http().get('/settings/api-keys'),
      await t.http().post('/sign-in').set('Origin', 'https://evil.example').type('form').send({ email }),
    ]) {
      expect(res.headers['content-security-policy']).toBe(CSP);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('same-origin');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['strict-transport-security']).toBeUndefined(); // http PUBLIC_BASE_URL
    }
    const css = await t.http().get('/static/app.css').expect(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.headers['content-security-policy']).toBe(CSP);
    expect((await t.http().get('/static/app.js').expect(200)).headers['content-type']).toMatch(/^text\/javascript/);
    for (const res of [
      await t.http().get('/api/mcp'),
      await t.http().post('/api/mcp').send({}),
      await t.admin.get(`/admin/users/${userId}`),
      await t.http().get('/health'),
    ]) {
      expect(res.headers['content-security-policy']).toBeUndefined();
      expect(res.headers['x-frame-options']).toBeUndefined();
      expect(res.headers['referrer-policy']).toBeUndefined();
    }
  });

  it('retention deletes links and sessions 30 days after they ended, and keeps everything younger', async () => {
    const person = await newUser();
    const countsOf = async () =>
      (
        await db.query(
          `SELECT (SELECT count(*)::int FROM sign_in_links WHERE user_id = $1) AS links, (SELECT count(*)::int FROM web_sessions WHERE user_id = $1) AS sessions`,
          [person.userId],
        )
      )[0];
    const revoked = await signIn(person.userId); // its link used, the session then signed out
    await signOut(revoked, { _csrf: await csrfOf(revoked) }).expect(303);
    const live = await signIn(person.userId);
    await newLink(person.userId); // never used
    expect(await countsOf()).toEqual({ links: 3, sessions: 2 });
    // Moved back in time (only this person's rows: other tests' stay as they are): every link
    // expired 31 days ago; the signed-out session was revoked 31 days ago; the other one reached
    // its absolute end 29 days ago.
    const shift = (days: number) => `interval '${days} days'`;
    await db.query(`UPDATE sign_in_links SET created_at = created_at - ${shift(31)}, expires_at = expires_at - ${shift(31)} WHERE user_id = $1`, [
      person.userId,
    ]);
    await db.query(
      `UPDATE web_sessions SET created_at = created_at - ${shift(31)}, last_seen_at = last_seen_at - ${shift(31)}, revoked_at = revoked_at - ${shift(31)}
        WHERE user_id = $1 AND revoked_at IS NOT NULL`,
      [person.userId],
    );
    await db.query(
      `UPDATE web_sessions SET created_at = now() - ${shift(30)}, last_seen_at = now() - ${shift(30)}, expires_at = now() - ${shift(29)}
        WHERE user_id = $1 AND revoked_at IS NULL`,
      [person.userId],
    );
    const retention = t.app.get(WebSessionsRetention);

    expect(await retention.prune()).toEqual({ links: expect.any(Number), sessions: expect.any(Number) });
    expect(await countsOf()).toEqual({ links: 0, sessions: 1 });
    expect(await isSignedIn(live)).toBe(false); // ended, though still listed for the admin

    await db.query(`UPDATE web_sessions SET created_at = created_at - ${shift(2)}, expires_at = expires_at - ${shift(2)} WHERE user_id = $1`, [person.userId]);
    await retention.prune();
    expect(await countsOf()).toEqual({ links: 0, sessions: 0 });
  });
});
