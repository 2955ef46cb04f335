import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/clock';
import { ClientMetadataDocuments, FAILURE_CACHE_SECONDS } from '../../src/oauth/client-metadata-documents';
import { UNUSABLE_CLIENT_PAGE } from '../../src/oauth/oauth.service';
import { createTestApp, TestApp } from '../support/app';
import { MovableClock } from '../support/last-use';
import { inboundSms, partnerPhone } from '../support/messaging-hooks';
import { authorizationUrl, decodeHtml, freePort, Host, oauthBrowser, REDIRECT, s256 } from '../support/oauth';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';
import { signInBrowser } from '../support/web';

type Route = (req: IncomingMessage, res: ServerResponse) => void;

/** A client's web server: serves metadata documents (and worse) at the paths the test sets, counting fetches. */
class DocumentServer {
  private readonly routes = new Map<string, Route>();
  readonly fetches = new Map<string, number>();
  private readonly sockets = new Set<Socket>();
  private server?: Server;
  origin = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const path = req.url ?? '/';
      this.fetches.set(path, (this.fetches.get(path) ?? 0) + 1);
      const route = this.routes.get(path);
      if (route) route(req, res);
      else res.writeHead(404).end();
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** A new path on this server, answered by `route`; its full URL (the client_id). */
  at(route: Route): string {
    const path = `/clients/${randomBytes(6).toString('hex')}/metadata.json`;
    this.routes.set(path, route);
    return `${this.origin}${path}`;
  }

  /** A path serving `document(url)` as JSON. */
  json(document: (url: string) => unknown, headers: Record<string, string> = {}): string {
    let url = '';
    url = this.at((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(document(url)));
    });
    return url;
  }

  count(url: string): number {
    return this.fetches.get(new URL(url).pathname) ?? 0;
  }
}

/** A metadata document as an MCP host publishes it. */
function registration(url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    client_id: url,
    client_name: 'Document Agent',
    client_uri: 'https://agent.example',
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...extra,
  };
}

describe('OAuth Client ID Metadata Documents (a client_id that is the URL of its registration)', () => {
  let t: TestApp;
  let db: DataSource;
  let base: string;
  let s: Session;
  /** A signed-in person's session cookie: the pages that refuse a client tell them why. */
  let cookie: string;
  const docs = new DocumentServer();
  const clock = new MovableClock();
  const { browserTo, consent, tools } = oauthBrowser(() => ({ t, base, userId: s.userId }));

  beforeAll(async () => {
    await docs.start();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // Development with the loopback allowlist, as for webhooks: the test's http document server is
    // admitted. The authorization limit (its own test) is out of the way of this file's many requests.
    t = await createTestApp({
      env: { PUBLIC_BASE_URL: base, APP_ENV: 'development', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', OAUTH_AUTHORIZE_RATE_LIMIT: '1000' },
      overrides: (b) => b.overrideProvider(Clock).useValue(clock),
    });
    await t.app.listen(port, '127.0.0.1');
    db = t.app.get(DataSource);
    s = await createSession(t.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    cookie = (await signInBrowser(t, s.userId, base)).cookie;
  });
  afterAll(async () => {
    await t?.close();
    await docs.stop();
  });

  function authorizePath(clientId: string, params: Record<string, string | undefined> = {}): string {
    const challenge = s256(randomBytes(32).toString('base64url'));
    const url = authorizationUrl(base, { client_id: clientId, code_challenge: challenge, code_challenge_method: 'S256', ...params });
    return url.pathname + url.search;
  }

  async function grantsOf(clientId: string): Promise<number> {
    const rows = await db.query(`SELECT count(*)::int AS n FROM oauth_grants WHERE client_id = $1`, [clientId]);
    return rows[0].n;
  }

  /** What a person not signed in reads when the client cannot be used, whatever the reason. */
  const PUBLIC_REFUSAL = `This authorization request cannot be used ${UNUSABLE_CLIENT_PAGE} Back to the start`;

  /** The text of a page's main element, as a person reads it. */
  function mainText(html: string): string {
    return decodeHtml(/<main[^>]*>([\s\S]*)<\/main>/.exec(html)![1].replace(/<[^>]+>/g, ' '))
      .replace(/\s+/g, ' ')
      .trim();
  }

  /**
   * The authorization request with this client_id is answered by a page (400, never a redirect:
   * the document's redirect URIs cannot be trusted) that names the problem to a signed-in person,
   * and says only invalid_client to anybody else (unless `shownToAnyone`: a problem of the request,
   * not of the client); the token endpoint refuses the client (invalid_client: no person approved
   * it, so it is not known there), and no grant exists for it. Returns what the signed-in person reads.
   */
  async function refused(clientId: string, params: Record<string, string | undefined> = {}, shownToAnyone = false): Promise<string> {
    const path = authorizePath(clientId, params);
    const anonymous = await t.http().get(path);
    expect(anonymous.status).toBe(400);
    expect(anonymous.headers.location).toBeUndefined();
    const page = await t.http().get(path).set('Cookie', cookie);
    expect(page.status).toBe(400);
    expect(page.headers.location).toBeUndefined();
    const reason = mainText(page.text);
    if (shownToAnyone) expect(mainText(anonymous.text)).toBe(reason);
    else {
      expect(mainText(anonymous.text)).toBe(PUBLIC_REFUSAL);
      expect(reason).not.toContain(UNUSABLE_CLIENT_PAGE);
    }
    const token = await t
      .http()
      .post('/oauth/token')
      .type('form')
      .send({ grant_type: 'authorization_code', client_id: clientId, code: 'x'.repeat(43), code_verifier: 'y'.repeat(43), redirect_uri: REDIRECT });
    expect(token.status).toBe(400);
    expect(token.body).toEqual({ error: 'invalid_client', error_description: 'Invalid client_id' });
    expect(await grantsOf(clientId)).toBe(0);
    return reason;
  }

  it('advertises client_id_metadata_document_supported, and the SDK client then uses an https document URL as its client_id', async () => {
    // Metadata documents preferred, Dynamic Client Registration (deprecated by MCP 2026-07-28) still offered.
    const as = await t.http().get('/.well-known/oauth-authorization-server').expect(200);
    expect(as.body.client_id_metadata_document_supported).toBe(true);
    expect(as.body.registration_endpoint).toBe(`${base}/oauth/register`);

    const [{ count: registrations }] = await db.query(`SELECT count(*)::int AS count FROM oauth_clients`);
    const host = new Host();
    host.clientMetadataUrl = 'https://client.invalid/oauth/client.json';
    expect(await auth(host, { serverUrl: `${base}/api/mcp` })).toBe('REDIRECT');
    expect(host.info?.client_id).toBe(host.clientMetadataUrl);
    // The SDK client offered both chose the document: it did not register.
    expect((await db.query(`SELECT count(*)::int AS count FROM oauth_clients`))[0].count).toBe(registrations);
    expect(host.authorizationUrl!.searchParams.get('client_id')).toBe(host.clientMetadataUrl);
    // No such host: the page says the document could not be fetched, and nothing is redirected.
    const text = await refused(host.clientMetadataUrl);
    expect(text).toContain('client.invalid');
    expect(text).toContain('metadata document');
  });

  it('connects an SDK client known by its metadata document: consent names the document host, tools, refresh, revocation', async () => {
    const [line, other] = s.lines;
    const onLine = await inboundSms(t, line.address, partnerPhone(), 'on the granted line');
    await inboundSms(t, other.address, partnerPhone(), 'on the other line');
    // A field the service does not understand is left out of what it keeps.
    const documentUrl = docs.json((url) => registration(url, { 'x-vendor': { anything: 'x'.repeat(500) } }), { 'cache-control': 'max-age=600' });

    // The SDK client takes an https clientMetadataUrl only; the test's document is http (development), so the host holds it as its client information.
    const host = new Host();
    host.info = { client_id: documentUrl, issuer: base } as Host['info'];
    const serverUrl = `${base}/api/mcp`;
    expect(await auth(host, { serverUrl })).toBe('REDIRECT');
    const url = host.authorizationUrl!;
    expect(url.searchParams.get('client_id')).toBe(documentUrl);

    const b = await browserTo(url.href);
    expect(b.page).toContain('Document Agent');
    expect(b.page).toContain('metadata document at <strong>' + new URL(documentUrl).host + '</strong>');
    expect(b.page).not.toContain('registered itself');
    const back = await consent(b, { decision: 'allow', access: 'LINES', [`line-${line.id}`]: 'on', 'permissions-shown': 'on', 'permission-read': 'on' });
    expect(back.status).toBe(303);
    const response = new URL(back.location);
    expect(response.origin + response.pathname).toBe(REDIRECT);
    expect(response.searchParams.get('iss')).toBe(base);
    const code = response.searchParams.get('code')!;
    // The grant's client row: the document's registration as approved, without what the service does not understand.
    const [row] = await db.query(`SELECT client_name, metadata FROM oauth_clients WHERE client_id = $1`, [documentUrl]);
    const { client_id: _id, ...understood } = registration(documentUrl);
    expect(row).toEqual({ client_name: 'Document Agent', metadata: { ...understood, metadata_document: true } });

    expect(await auth(host, { serverUrl, authorizationCode: code })).toBe('AUTHORIZED');
    const first = host.saved!;
    expect(first).toMatchObject({ expires_in: 3600, scope: 'read', refresh_token: expect.any(String) });

    const client = new Client({ name: 'e2e-oauth-cimd', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: host }));
    try {
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toContain('list_threads');
      expect(names).not.toContain('send_sms');
      const threads = (await client.callTool({ name: 'list_threads', arguments: {} })).structuredContent as any;
      expect(threads.threads.map((x: any) => x.thread.id)).toEqual([onLine.threadId]);
    } finally {
      await client.close();
    }

    expect(await auth(host, { serverUrl })).toBe('AUTHORIZED');
    const second = host.saved!;
    expect(second.access_token).not.toBe(first.access_token);
    expect((await tools(second.access_token)).status).toBe(200);
    // One fetch served the authorization request, the consent, the code exchange and the refresh (max-age=600).
    expect(docs.count(documentUrl)).toBe(1);

    await t.http().post('/oauth/revoke').type('form').send({ token: second.refresh_token, client_id: documentUrl }).expect(200);
    expect((await tools(second.access_token)).status).toBe(401);
  });

  it('the token and revocation endpoints never fetch a document: a URL no person approved is invalid_client at once', async () => {
    // Documents that would validate, at 200 distinct URLs: naming one at these endpoints must not fetch it.
    const urls = Array.from({ length: 200 }, () => docs.json((url) => registration(url)));
    const answers: Array<{ status: number; body: unknown }> = [];
    for (let i = 0; i < urls.length; i += 20) {
      const batch = urls.slice(i, i + 20).map((clientId, j) =>
        t
          .http()
          .post('/oauth/token')
          .type('form')
          .send(
            j % 2 === 0
              ? { grant_type: 'authorization_code', client_id: clientId, code: 'x'.repeat(43), code_verifier: 'y'.repeat(43), redirect_uri: REDIRECT }
              : { grant_type: 'refresh_token', client_id: clientId, refresh_token: `csr_${'0'.repeat(48)}` },
          ),
      );
      answers.push(...(await Promise.all(batch)).map((res) => ({ status: res.status, body: res.body })));
    }
    const revoked = await Promise.all(
      urls.slice(0, 20).map((clientId) =>
        t
          .http()
          .post('/oauth/revoke')
          .type('form')
          .send({ client_id: clientId, token: `csr_${'0'.repeat(48)}` }),
      ),
    );
    answers.push(...revoked.map((res) => ({ status: res.status, body: res.body })));
    expect(answers).toHaveLength(220);
    for (const answer of answers) expect(answer).toEqual({ status: 400, body: { error: 'invalid_client', error_description: 'Invalid client_id' } });
    expect(urls.reduce((n, url) => n + docs.count(url), 0)).toBe(0);
    // The control: the authorization endpoint does fetch one of them.
    await t.http().get(authorizePath(urls[0])).expect(303);
    expect(docs.count(urls[0])).toBe(1);
  });

  it('fetches a failing document once per negative-cache window at the authorization endpoint, and a fixed one after the window', async () => {
    let fixed = false;
    let documentUrl = '';
    documentUrl = docs.at((_req, res) => {
      if (fixed) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(registration(documentUrl)));
      else res.writeHead(404).end();
    });
    for (let i = 0; i < 5; i++) expect((await t.http().get(authorizePath(documentUrl))).status).toBe(400);
    expect(docs.count(documentUrl)).toBe(1);
    // Fixed within the window: still the failure kept, and no fetch.
    fixed = true;
    expect((await t.http().get(authorizePath(documentUrl))).status).toBe(400);
    expect(docs.count(documentUrl)).toBe(1);
    // Once the window has passed, the next request fetches again and gets the fixed document (sign-in next).
    clock.offsetMs += (FAILURE_CACHE_SECONDS + 1) * 1000;
    try {
      await t.http().get(authorizePath(documentUrl)).expect(303);
      await t.http().get(authorizePath(documentUrl)).expect(303);
    } finally {
      clock.offsetMs = 0;
    }
    expect(docs.count(documentUrl)).toBe(2);
  });

  it('concurrent authorization requests for a failing document share one fetch', async () => {
    const documents = t.app.get(ClientMetadataDocuments);
    let resolving = 0;
    const resolve = documents.resolve.bind(documents);
    const spy = jest.spyOn(documents, 'resolve').mockImplementation((clientId) => {
      resolving += 1;
      return resolve(clientId);
    });
    try {
      // The document's host answers only once all ten requests are waiting for the one fetch.
      const documentUrl = docs.at((_req, res) => {
        void waitUntil(() => resolving >= 10, 'ten authorization requests resolving the document').then(() => res.writeHead(500).end());
      });
      const answers = await Promise.all(Array.from({ length: 10 }, () => t.http().get(authorizePath(documentUrl))));
      expect(answers.map((res) => res.status)).toEqual(Array(10).fill(400));
      expect(docs.count(documentUrl)).toBe(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('tells a person not signed in only "invalid client", whatever failed: 404, refused, bad JSON, a private address, an unknown id', async () => {
    const closedPort = await freePort();
    const notJson = docs.at((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"client_id": '));
    const failing = [
      `${docs.origin}/clients/nobody/metadata.json`,
      `http://127.0.0.1:${closedPort}/clients/metadata.json`,
      notJson,
      'http://10.1.2.3:8080/clients/agent.json',
      `${docs.origin}/`,
      randomUUID(),
    ];
    const reasons = new Set<string>();
    for (const clientId of failing) {
      const anonymous = await t.http().get(authorizePath(clientId)).expect(400);
      expect(mainText(anonymous.text)).toBe(PUBLIC_REFUSAL);
      expect(anonymous.text).not.toContain(new URL(docs.origin).port);
      expect(anonymous.text).not.toMatch(/404|ECONNREFUSED|JSON|10\.1\.2\.3|private/);
      reasons.add(mainText((await t.http().get(authorizePath(clientId)).set('Cookie', cookie).expect(400)).text));
    }
    // Signed in, each reason is told apart.
    expect(reasons.size).toBe(failing.length);
    expect([...reasons].join('\n')).toMatch(
      /was not found \(404\)[\s\S]*ECONNREFUSED[\s\S]*is not valid JSON[\s\S]*private \(RFC 1918\)[\s\S]*must have a path[\s\S]*No app .* is registered here/,
    );
  });

  it('refuses a redirect_uri the document does not list, and names it', async () => {
    const documentUrl = docs.json((url) => registration(url));
    const text = await refused(documentUrl, { redirect_uri: 'http://127.0.0.1:10/callback' }, true);
    expect(text).toContain('http://127.0.0.1:10/callback is not registered for this app');
  });

  it('refuses a document on an address outside the allowlist (a private network), without fetching', async () => {
    const text = await refused('http://10.1.2.3:8080/clients/agent.json');
    expect(text).toContain('10.1.2.3, a private (RFC 1918) address');
    expect(text).toContain('Documents must be on public addresses');
  });

  it('refuses a document larger than 5 KB', async () => {
    const documentUrl = docs.json((url) => registration(url, { client_name: 'x'.repeat(6000) }));
    expect(await refused(documentUrl)).toContain('is larger than 5120 bytes');
  });

  it('refuses a document whose client_id is not its own URL', async () => {
    const documentUrl = docs.json((url) => registration(url, { client_id: `${url}?other` }));
    expect(await refused(documentUrl)).toContain(`names client_id ${documentUrl}?other, not its own URL`);
  });

  it('does not follow a redirect from the document URL', async () => {
    const target = docs.json((url) => registration(url));
    const documentUrl = docs.at((_req, res) => res.writeHead(302, { location: target }).end());
    expect(await refused(documentUrl)).toContain('answered a redirect (302); redirects are not followed');
    expect(docs.count(target)).toBe(0);
  });

  it('refuses a document that does not answer within 5 s', async () => {
    const documentUrl = docs.at(() => undefined);
    expect(await refused(documentUrl)).toContain('did not answer within 5 s');
  }, 30_000);

  it('refuses a missing document, bad JSON, bad redirect_uris, a secret or another authentication method', async () => {
    expect(await refused(`${docs.origin}/clients/nobody/metadata.json`)).toContain('was not found (404)');
    const notJson = docs.at((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"client_id": '));
    expect(await refused(notJson)).toContain('is not valid JSON');
    const plainHttp = docs.json((url) => registration(url, { redirect_uris: ['http://agent.example/callback'] }));
    expect(await refused(plainHttp)).toContain('http://agent.example/callback must be https, or http on a loopback address');
    const secret = docs.json((url) => registration(url, { client_secret: 'shh' }));
    expect(await refused(secret)).toContain('must not contain client_secret');
    const jwt = docs.json((url) => registration(url, { token_endpoint_auth_method: 'private_key_jwt' }));
    expect(await refused(jwt)).toContain('token_endpoint_auth_method must be none');
    // The bounds of every registration (client-metadata.ts) hold for documents too.
    const longName = docs.json((url) => registration(url, { client_name: 'n'.repeat(201) }));
    expect(await refused(longName)).toContain('client_name must be at most 200 characters (it has 201)');
    const desktop = docs.json((url) => registration(url, { application_type: 'desktop' }));
    expect(await refused(desktop)).toContain('application_type must be native or web');
  });

  it('refuses client_id URLs the draft forbids, before any fetch', async () => {
    expect(await refused(`${docs.origin}/`)).toContain('it must have a path');
    expect(await refused(`${docs.origin}/clients/../metadata.json`)).toContain('must not contain . or .. path segments');
    expect(await refused(`http://user:pw@127.0.0.1:1/clients/metadata.json`)).toContain('must not contain credentials');
    expect(await refused(`${docs.origin}/clients/metadata.json#frag`)).toContain('must not have a fragment');
  });
});
