import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { TestApp } from './app';

/** Where the test's MCP hosts say they return: nothing listens there, the test reads the redirect. */
export const REDIRECT = 'http://127.0.0.1:9/callback';

/** An MCP host as the SDK drives it: client registration, PKCE verifier and tokens kept in memory. */
export class Host implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  /** A Client ID Metadata Document URL: the SDK uses it as client_id when the server supports them. */
  clientMetadataUrl?: string;
  get redirectUrl(): string {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'E2E Agent',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state(): string {
    return 'state-42';
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
  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** An authorization request to the app at `base` (code, REDIRECT, state xyz, the MCP resource) with `params` over it; `undefined` leaves one out. */
export function authorizationUrl(base: string, params: Record<string, string | undefined>): URL {
  const url = new URL(`${base}/oauth/authorize`);
  const all: Record<string, string | undefined> = { response_type: 'code', redirect_uri: REDIRECT, state: 'xyz', resource: `${base}/api/mcp`, ...params };
  for (const [k, v] of Object.entries(all)) if (v !== undefined) url.searchParams.set(k, v);
  return url;
}

function decode(html: string): string {
  return html
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&#39;/g, "'");
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
    const hidden = Object.fromEntries([...b.page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1], decode(m[2])]));
    const res = await t
      .http()
      .post('/oauth/authorize')
      .set('Cookie', b.cookie)
      .set('Origin', origin ?? base)
      .type('form')
      .send({ ...hidden, ...choice });
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
