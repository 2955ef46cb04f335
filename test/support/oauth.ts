import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { TestApp } from './app';
import { PAGE_ORIGIN, PageBrowser } from './web';
import { hiddenFields, s256 } from './oauth-http';

export { accessChoice, connectOverHttp, consentChoice, decodeHtml, hiddenFields, s256 } from './oauth-http';
export type { ConnectedClient } from './oauth-http';

/** Where the test's MCP hosts say they return: nothing listens there, the test reads the redirect. */
export const REDIRECT = 'http://127.0.0.1:9/callback';

/**
 * An MCP host as the official SDK drives it (`auth()`, `StreamableHTTPClientTransport` with
 * `authProvider`): its registration, PKCE verifier and tokens kept in memory. `open` is where the
 * SDK sends the person: by default the URL is only kept (`authorizationUrl`); a browser test opens it.
 */
export class McpHost implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  /** A Client ID Metadata Document URL: the SDK uses it as client_id when the server supports them. */
  clientMetadataUrl?: string;

  constructor(
    private readonly redirect: string,
    private readonly name: string,
    private readonly open: (url: URL) => Promise<void> | void = () => undefined,
    private readonly stateValue = 'state-42',
  ) {}

  get redirectUrl(): string {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state(): string {
    return this.stateValue;
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }
  async redirectToAuthorization(url: URL): Promise<void> {
    this.authorizationUrl = url;
    await this.open(url);
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
}

/** The e2e tests' host: returns to REDIRECT (nothing listens there; the test reads the redirect). */
export class Host extends McpHost {
  constructor() {
    super(REDIRECT, 'E2E Agent');
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An authorization request to the app at `base` (code, REDIRECT, state xyz, the MCP resource) with `params` over it; `undefined` leaves one out. */
export function authorizationUrl(base: string, params: Record<string, string | undefined>): URL {
  const url = new URL(`${base}/oauth/authorize`);
  const all: Record<string, string | undefined> = { response_type: 'code', redirect_uri: REDIRECT, state: 'xyz', resource: `${base}/api/mcp`, ...params };
  for (const [k, v] of Object.entries(all)) if (v !== undefined) url.searchParams.set(k, v);
  return url;
}

/**
 * The person's browser against the app `t` listening at `base`: sign-in (by a link the admin API
 * mints for `userId`), consent, and what tools/list answers. `context` is read at each call (the
 * app starts in a beforeAll).
 */
export function oauthBrowser(context: () => { t: TestApp; base: string; userId: string }) {
  /** Follows an authorization URL, signing in when sent to /sign-in, back to the consent page. */
  async function browserTo(authorizationUrl: string, cookie?: string): Promise<{ cookie: string; page: string; path: string }> {
    const { t, base, userId } = context();
    const path = authorizationUrl.slice(base.length);
    let res = await t
      .http()
      .get(path)
      .set('Cookie', cookie ?? '');
    if (res.status === 303 && res.headers.location === '/sign-in') {
      const returnCookie = String(res.headers['set-cookie'][0]).split(';')[0];
      const link = await t.admin.post(`/admin/users/${userId}/sign-in-links`).expect(201);
      const token = new URL(link.body.url).searchParams.get('token')!;
      const signedIn = await t.http().post('/sign-in/link').set('Origin', base).set('Cookie', returnCookie).type('form').send({ token }).expect(303);
      expect(signedIn.headers.location).toBe(path);
      cookie = String(signedIn.headers['set-cookie'][0]).split(';')[0];
      res = await t.http().get(signedIn.headers.location).set('Cookie', cookie);
    }
    expect(res.status).toBe(200);
    expect(res.headers['x-frame-options']).toBe('DENY');
    return { cookie: cookie!, page: res.text, path };
  }

  /** Posts the consent form as shown, with the person's choice; returns where the browser is sent. */
  async function consent(b: { cookie: string; page: string }, choice: Record<string, string>, origin?: string): Promise<{ status: number; location: string }> {
    const { t, base } = context();
    const res = await postConsent(t, b.cookie, b.page, choice, origin ?? base);
    return { status: res.status, location: res.headers.location };
  }

  async function tools(token: string): Promise<{ status: number; body: any }> {
    const res = await context()
      .t.http()
      .post('/api/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    return { status: res.status, body: res.body };
  }

  return { browserTo, consent, tools };
}

/** The redirect URI of the test clients (REDIRECT), under the name the Connected apps tests use. */
export const OAUTH_REDIRECT = REDIRECT;

/** Posts the consent form as `page` shows it (its hidden fields), with the person's `choice`, from `origin`. */
export function postConsent(t: TestApp, cookie: string, page: string, choice: Record<string, string>, origin = PAGE_ORIGIN) {
  return t
    .http()
    .post('/oauth/authorize')
    .set('Cookie', cookie)
    .set('Origin', origin)
    .type('form')
    .send({ ...hiddenFields(page), ...choice });
}

/** Registers a public client by Dynamic Client Registration; its client_id. */
export async function registerClient(t: TestApp, clientName = 'E2E Agent'): Promise<string> {
  const res = await t
    .http()
    .post('/oauth/register')
    .send({ client_name: clientName, redirect_uris: [OAUTH_REDIRECT], token_endpoint_auth_method: 'none' })
    .expect(201);
  return res.body.client_id;
}

export interface ConnectedApp {
  clientId: string;
  accessToken: string;
  refreshToken: string;
}

/**
 * An app connected as a person does it, over HTTP: the client registers (unless `clientId` is
 * given), the signed-in browser opens the authorization request (asking for `scope`, all
 * permissions when left out) and posts the consent form with `choice` (All channels, Read unless
 * told), and the client exchanges the code with its verifier. The app's PUBLIC_BASE_URL must be
 * the test default (PAGE_ORIGIN).
 */
export async function connectApp(
  t: TestApp,
  browser: PageBrowser,
  options: { clientName?: string; clientId?: string; scope?: string; choice?: Record<string, string> } = {},
): Promise<ConnectedApp> {
  const clientId = options.clientId ?? (await registerClient(t, options.clientName));
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: OAUTH_REDIRECT,
    state: 'connect',
    code_challenge: s256(verifier),
    code_challenge_method: 'S256',
    resource: `${PAGE_ORIGIN}/api/mcp`,
  });
  if (options.scope !== undefined) query.set('scope', options.scope);
  const page = await t.http().get(`/oauth/authorize?${query.toString()}`).set('Cookie', browser.cookie).expect(200);
  const choice = options.choice ?? { access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on' };
  const consent = await postConsent(t, browser.cookie, page.text, { decision: 'allow', ...choice }).expect(303);
  const code = new URL(consent.headers.location).searchParams.get('code');
  if (!code) throw new Error(`consent did not answer with a code: ${consent.headers.location}`);
  const tokens = await t
    .http()
    .post('/oauth/token')
    .type('form')
    .send({ grant_type: 'authorization_code', client_id: clientId, redirect_uri: OAUTH_REDIRECT, code, code_verifier: verifier })
    .expect(200);
  return { clientId, accessToken: tokens.body.access_token, refreshToken: tokens.body.refresh_token };
}

/** The token endpoint's answer to a refresh: 200 with a new pair, or 400 with the RFC error. */
export function refreshTokens(t: TestApp, app: Pick<ConnectedApp, 'clientId' | 'refreshToken'>) {
  return t.http().post('/oauth/token').type('form').send({ grant_type: 'refresh_token', client_id: app.clientId, refresh_token: app.refreshToken });
}
