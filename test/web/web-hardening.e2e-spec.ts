import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import { GUARDS_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DataSource } from 'typeorm';
import { AUTH_KIND } from '../../src/identity/auth.decorators';
import { CsrfTokenGuard } from '../../src/identity/csrf-token.guard';
import { SecretBox } from '../../src/common/secret-box';
import { PAGE_CONTROLLERS } from '../../src/web/web.module';
import { HOST_RESOLVER } from '../../src/outbound-http/url-policy';
import { createTestApp, TestApp } from '../support/app';
import { MutableResolver } from '../support/delivery';
import { listen } from '../support/raw-http';
import { createSession, Session, uniquePhone } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';
import { PAGE_ORIGIN, signInBrowser } from '../support/web';

/** The origin of PUBLIC_BASE_URL in the test environment (test/support/env.ts). */
const ORIGIN = PAGE_ORIGIN;

interface Browser {
  cookie: string;
  csrf: string;
  session: Session;
}

/** A form POST from the service's own page, its body given as the bytes to send. */
const postBody = (t: TestApp, b: Browser, path: string, body: string) =>
  t.http().post(path).set('Cookie', b.cookie).set('Origin', ORIGIN).set('Content-Type', 'application/x-www-form-urlencoded').send(body);

/**
 * Everything a signed-in person's forms act on (a mailbox, a webhook endpoint with a delivery, a
 * sign-in link, a connected app, a conversation with a draft awaiting approval), every POST route of
 * the web app with fields that would change it, and `state()`, the rows they would change.
 */
async function formsOf(t: TestApp, db: DataSource, b: Browser) {
  const mailboxLine = b.session.lines[1].id;
  // A connected mailbox, stored as the service stores one (its connect check needs real mail servers: test/web-mailboxes).
  const sealed = t.app.get(SecretBox).seal('mailbox-password');
  await db.query(
    `INSERT INTO mailboxes (line_id, imap_host, imap_port, imap_tls, imap_username, imap_password_sealed, smtp_host, smtp_port, smtp_tls, smtp_username, smtp_password_sealed)
     VALUES ($1, 'imap.example.org', 993, 'implicit', 'pat', $2, 'smtp.example.org', 465, 'implicit', 'pat', $2)`,
    [mailboxLine, sealed],
  );
  const created = await postBody(
    t,
    b,
    '/settings/webhooks',
    `_csrf=${b.csrf}&url=https://hooks.example.org/in&events.message.received=on&mode=concise&scope=all`,
  ).expect(201);
  const endpointId = /href="\/settings\/webhooks\/([0-9a-f-]{36})"/.exec(created.text)![1];
  const link = await t.admin.post(`/admin/users/${b.session.userId}/sign-in-links`).expect(201);
  const token = new URL(link.body.url).searchParams.get('token')!;
  // A connected app (an OAuth grant), stored as the service stores one (the flow itself: test/oauth).
  const clientId = randomUUID();
  const grantId = `${randomUUID().slice(0, 14)}8${randomUUID().slice(15)}`;
  await db.query(`INSERT INTO oauth_clients (client_id, client_name, redirect_uris, metadata) VALUES ($1, 'Hardening app', $2, '{}')`, [
    clientId,
    ['http://127.0.0.1:9/callback'],
  ]);
  await db.query(
    `INSERT INTO oauth_grants (id, user_id, client_id, resource, channel_access_mode, permissions, requested_scopes) VALUES ($1, $2, $3, $4, 'ALL', '{read}', '{read,send}')`,
    [grantId, b.session.userId, clientId, `${ORIGIN}/api/mcp`],
  );
  // A conversation (an inbound SMS) for the Conversations forms, and a draft awaiting approval on it (Approvals):
  // a DRAFT agent's reply on a thread of the phone line.
  const agentId = (await t.admin.post(`/admin/lines/${b.session.lines[0].id}/agents`, { name: 'Hardening bot', mode: 'DRAFT' }).expect(201)).body.id;
  const inbound = await t
    .http()
    .post('/ingest/sms/inbound')
    .set('Authorization', `Bearer ${INGEST_TOKEN}`)
    .send({ to: b.session.lines[0].address, from: uniquePhone(), body: 'Hello', providerMessageId: `p-${randomUUID()}` })
    .expect(201);
  const threadId = inbound.body.threadId as string;
  const turnId = (
    await t.http().post(`/api/agents/${agentId}/turns`).set('Authorization', `Bearer ${b.session.apiKey}`).send({ threadId, body: 'Draft' }).expect(201)
  ).body.turn.id;
  // Its message.received is delivered to the endpoint above: wait for that before taking the state.
  await waitUntil(async () => (await db.query('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1', [endpointId])).length === 1, 'the SMS delivery');
  const state = async () => ({
    turns: await db.query('SELECT id, status, body, message_id FROM agent_turns WHERE id = $1', [turnId]),
    endpoints: await db.query('SELECT id, url, status, events, secret_sealed FROM webhook_endpoints WHERE user_id = $1 ORDER BY id', [b.session.userId]),
    keys: await db.query('SELECT id, channel_access_mode, allowed_addresses FROM api_keys WHERE user_id = $1 ORDER BY id', [b.session.userId]),
    deliveries: await db.query('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1', [endpointId]),
    sessions: await db.query('SELECT id, revoked_at FROM web_sessions WHERE user_id = $1 ORDER BY id', [b.session.userId]),
    links: await db.query('SELECT used_at FROM sign_in_links WHERE user_id = $1 ORDER BY id', [b.session.userId]),
    mailboxes: await db.query('SELECT * FROM mailboxes WHERE line_id = $1', [mailboxLine]),
    messages: await db.query('SELECT id, status FROM messages WHERE thread_id = $1 ORDER BY id', [threadId]),
    labels: await db.query('SELECT label_id FROM thread_labels WHERE thread_id = $1', [threadId]),
    contacts: await db.query('SELECT id, notes FROM contacts WHERE org_id = $1', [b.session.orgId]),
    grants: await db.query(
      `SELECT g.id, g.channel_access_mode, g.allowed_addresses, g.permissions, (SELECT count(*)::int FROM oauth_codes c WHERE c.grant_id = g.id) AS codes
         FROM oauth_grants g WHERE user_id = $1`,
      [b.session.userId],
    ),
  });

  const base = `/settings/webhooks/${endpointId}`;
  const routes: Array<[string, string]> = [
    ['/sign-in', `email=${encodeURIComponent(b.session.email)}`],
    ['/sign-in/link', `token=${token}`],
    ['/sign-out', ''],
    ['/settings/api-keys', 'name=forged&access=ALL'],
    [`/settings/api-keys/${b.session.apiKeyId}/edit`, `access=LINES&line-${b.session.lines[0].id}=on`],
    [`/settings/api-keys/${b.session.apiKeyId}/revoke`, ''],
    ['/settings/webhooks', 'url=https://hooks.example.org/forged&events.message.received=on&mode=concise&scope=all'],
    [`${base}/edit`, 'url=https://hooks.example.org/forged&events.message.received=on&mode=concise&scope=all'],
    [`${base}/rotate-secret`, ''],
    [`${base}/disable`, ''],
    [`${base}/enable`, ''],
    [`${base}/delete`, ''],
    [`${base}/recover`, `since=${new Date(Date.now() - 3_600_000).toISOString()}`],
    [`${base}/deliveries/${randomUUID()}/resend`, ''],
    [
      `/settings/mailboxes/${mailboxLine}`,
      'imap.host=evil.example&imap.port=993&imap.tls=implicit&imap.username=x&imap.password=x&smtp.host=evil.example&smtp.port=465&smtp.tls=implicit&smtp.username=x&smtp.password=x',
    ],
    [`/settings/mailboxes/${mailboxLine}/disconnect`, ''],
    [`/settings/connected-apps/${grantId}/edit`, `access=LINES&line-${b.session.lines[0].id}=on&permissions-shown=on&permission-send=on`],
    [`/settings/connected-apps/${grantId}/revoke`, ''],
    [`/conversations/${threadId}/reply`, `body=forged&idempotencyKey=${randomUUID()}`],
    [`/conversations/${threadId}/labels`, 'label=forged'],
    [`/conversations/${threadId}/labels/remove`, 'label=forged'],
    [`/conversations/${threadId}/contact`, 'displayName=Forged'],
    [`/conversations/${threadId}/contact/notes`, 'notes=forged'],
    [`/approvals/${turnId}/approve`, ''],
    [`/approvals/${turnId}/edit`, 'body=forged'],
    [`/approvals/${turnId}/reject`, ''],
    [
      '/oauth/authorize',
      `client_id=${clientId}&redirect_uri=${encodeURIComponent('http://127.0.0.1:9/callback')}&response_type=code&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256&resource=${encodeURIComponent(`${ORIGIN}/api/mcp`)}&decision=allow&access=ALL&permissions-shown=on&permission-read=on`,
    ],
  ];
  return { routes, state, mailboxLine, threadId };
}

/** The web app as an attacker, and a careless client, would use it (docs/web.md, "CSRF and headers"). */
describe('web: hardening of the page forms', () => {
  let t: TestApp;
  let db: DataSource;
  const resolver = new MutableResolver(); // every host name answers a public address
  let mailboxLine: string | undefined; // a mailbox stored by a test, deleted after

  beforeAll(async () => {
    t = await createTestApp({
      // MAIL_SYNCS_PER_WORKER=0: the mailbox the test stores is never synced.
      env: { SIGN_IN_RATE_LIMIT_PER_IP: '1000', MAIL_SYNCS_PER_WORKER: '0' },
      overrides: (b) => b.overrideProvider(HOST_RESOLVER).useValue(resolver),
    });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    if (mailboxLine) await db.query('DELETE FROM mailboxes WHERE line_id = $1', [mailboxLine]);
    await t?.close();
  });

  async function signIn(session: Session): Promise<Browser> {
    return { ...(await signInBrowser(t, session.userId)), session };
  }

  const postRaw = (b: Browser, path: string, body: string) => postBody(t, b, path, body);

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

  it('every POST page route is a session route with the CSRF token guard, or a same-origin form; no page GET is one', () => {
    const seen: string[] = [];
    for (const controller of PAGE_CONTROLLERS) {
      const proto = controller.prototype as unknown as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        const handler = proto[name];
        if (name === 'constructor' || typeof handler !== 'function' || Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod;
        const kind = (Reflect.getMetadata(AUTH_KIND, handler) ?? Reflect.getMetadata(AUTH_KIND, controller)) as string | undefined;
        const guards = [...(Reflect.getMetadata(GUARDS_METADATA, controller) ?? []), ...(Reflect.getMetadata(GUARDS_METADATA, handler) ?? [])];
        const route = `${RequestMethod[method]} ${controller.name}.${name}`;
        seen.push(route);
        if (method === RequestMethod.GET) {
          expect({ route, kind }).toEqual({ route, kind: expect.stringMatching(/^(public|session)$/) });
          continue;
        }
        expect({ route, method: RequestMethod[method] }).toEqual({ route, method: 'POST' });
        expect({ route, kind }).toEqual({ route, kind: expect.stringMatching(/^(session|same-origin)$/) });
        if (kind === 'session') expect({ route, csrf: guards.includes(CsrfTokenGuard) }).toEqual({ route, csrf: true });
      }
    }
    expect(seen.filter((route) => route.startsWith('POST')).length).toBe(32);
  });

  it('every POST of the web app refuses a cross-site Origin, a missing Origin, a missing or wrong _csrf, and changes nothing', async () => {
    const b = await signIn(await createSession(t.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] }));
    const { routes, state, mailboxLine: line } = await formsOf(t, db, b);
    mailboxLine = line;
    const before = await state();
    const signedIn = (path: string) =>
      path.startsWith('/settings') || path.startsWith('/conversations') || path.startsWith('/approvals') || path === '/sign-out' || path === '/oauth/authorize';
    for (const [path, fields] of routes) {
      const variants: Array<{ what: string; origin?: string; fetchSite?: string; csrf?: string }> = [
        { what: 'cross-site Origin', origin: 'https://evil.example', csrf: b.csrf },
        { what: 'a sibling subdomain', origin: 'http://evil.127.0.0.1:3000', csrf: b.csrf },
        { what: 'Origin null', origin: 'null', csrf: b.csrf },
        { what: 'no Origin, Sec-Fetch-Site cross-site', fetchSite: 'cross-site', csrf: b.csrf },
        { what: 'no Origin, Sec-Fetch-Site same-site', fetchSite: 'same-site', csrf: b.csrf },
        { what: 'no Origin, no Sec-Fetch-Site', csrf: b.csrf },
        ...(signedIn(path)
          ? [
              { what: 'no _csrf', origin: ORIGIN },
              { what: 'a wrong _csrf', origin: ORIGIN, csrf: `${b.csrf.slice(0, -1)}${b.csrf.endsWith('A') ? 'B' : 'A'}` },
              { what: 'an empty _csrf', origin: ORIGIN, csrf: '' },
            ]
          : []),
      ];
      for (const variant of variants) {
        let req = t.http().post(path).set('Cookie', b.cookie).type('form');
        if (variant.origin !== undefined) req = req.set('Origin', variant.origin);
        if (variant.fetchSite !== undefined) req = req.set('Sec-Fetch-Site', variant.fetchSite);
        const body = [variant.csrf === undefined ? '' : `_csrf=${encodeURIComponent(variant.csrf)}`, fields].filter(Boolean).join('&');
        const res = await req.send(body);
        expect({ path, variant: variant.what, status: res.status }).toEqual({ path, variant: variant.what, status: 403 });
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.headers['set-cookie']).toBeUndefined();
      }
    }
    expect(await state()).toEqual(before);
    expect(before.mailboxes).toHaveLength(1);
    await t.http().get('/settings/api-keys').set('Cookie', b.cookie).expect(200);
  });
});

/** WEB_ACTION_RATE_LIMIT: the session's counterpart of an API key's MCP_RATE_LIMIT (docs/web.md, "Limits"). */
describe('web: a person’s budget of actions', () => {
  const LIMIT = 3;
  let t: TestApp;
  let db: DataSource;
  let mailboxLine: string | undefined;

  beforeAll(async () => {
    t = await createTestApp({
      env: { WEB_ACTION_RATE_LIMIT: String(LIMIT), WEB_ACTION_RATE_WINDOW_SECONDS: '3600', MAIL_SYNCS_PER_WORKER: '0' },
      overrides: (b) => b.overrideProvider(HOST_RESOLVER).useValue(new MutableResolver()),
    });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    if (mailboxLine) await db.query('DELETE FROM mailboxes WHERE line_id = $1', [mailboxLine]);
    await t?.close();
  });

  const reply = (b: Browser, threadId: string, text: string) =>
    postBody(t, b, `/conversations/${threadId}/reply`, `_csrf=${encodeURIComponent(b.csrf)}&body=${text}&idempotencyKey=${randomUUID()}`);

  it('once spent, every counted POST of every session of the person is a 429 page with Retry-After and changes nothing; revoking, reading and colleagues are unaffected', async () => {
    const session = await createSession(t.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    const b: Browser = { ...(await signInBrowser(t, session.userId)), session };
    const { routes, state, mailboxLine: line, threadId } = await formsOf(t, db, b); // spends 1: the webhook endpoint it creates
    mailboxLine = line;
    const outbound = async () =>
      (await db.query(`SELECT body FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND' ORDER BY created_at`, [threadId])).map(
        (row: { body: string }) => row.body,
      );
    for (const text of ['first', 'second']) expect((await reply(b, threadId, text)).status).toBe(303);
    expect(await outbound()).toEqual(['first', 'second']);

    // The budget is the person's, not the session's: a second browser is refused as well.
    const other: Browser = { ...(await signInBrowser(t, session.userId)), session };
    const before = await state();
    const counted = routes.filter(([path]) => !path.startsWith('/sign-') && !path.endsWith('/revoke'));
    expect(counted.length).toBe(22);
    for (const [path, fields] of counted) {
      for (const browser of [b, other]) {
        const res = await postBody(t, browser, path, [`_csrf=${encodeURIComponent(browser.csrf)}`, fields].filter(Boolean).join('&'));
        expect({ path, status: res.status }).toEqual({ path, status: 429 });
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.text).toMatch(/Rate limit reached: your account may make 3 calls per 3600 s \(WEB_ACTION_RATE_LIMIT\); retry after \d+ s/);
      }
    }
    expect(await state()).toEqual(before);
    expect(await outbound()).toEqual(['first', 'second']);

    // Reading still works; a colleague in the same org has a budget of their own.
    await t.http().get(`/conversations/${threadId}`).set('Cookie', b.cookie).expect(200);
    const colleague = await createSession(t.admin, { orgId: session.orgId, role: 'MEMBER', lines: [] });
    await t.admin.put(`/admin/lines/${session.lines[0].id}/members/${colleague.userId}`).expect(200);
    const c: Browser = { ...(await signInBrowser(t, colleague.userId)), session: colleague };
    expect((await reply(c, threadId, 'colleague')).status).toBe(303);
    expect(await outbound()).toEqual(['first', 'second', 'colleague']);

    // Taking access away is never refused: the key and the connected app are revoked, and signing out works.
    for (const [path] of routes.filter(([path]) => path.endsWith('/revoke'))) {
      expect({ path, status: (await postBody(t, b, path, `_csrf=${encodeURIComponent(b.csrf)}`)).status }).toEqual({ path, status: 303 });
    }
    expect(await db.query('SELECT id FROM api_keys WHERE id = $1', [session.apiKeyId])).toEqual([]);
    expect(await db.query('SELECT count(*)::int AS n FROM oauth_grants WHERE user_id = $1', [session.userId])).toEqual([{ n: 0 }]);
    expect((await postBody(t, b, '/sign-out', `_csrf=${encodeURIComponent(b.csrf)}`)).status).toBe(303);
  });
});
