import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { inboundSms, partnerPhone } from '../../support/messaging-hooks';
import { McpHost } from '../../support/oauth';
import { createSession, Session } from '../../support/session';
import { BrowserFixture } from './browser';

/**
 * The MCP host's web server on 127.0.0.1: keeps every authorization response its /callback
 * receives, serves JSON documents at the paths a test gives (a Client ID Metadata Document), and
 * any other path `page` (the cross-site form of a test).
 */
export class RedirectTarget {
  readonly received: URL[] = [];
  private readonly documents = new Map<string, unknown>();
  private readonly server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', this.origin);
    if (this.documents.has(url.pathname)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(this.documents.get(url.pathname)));
      return;
    }
    if (url.pathname === '/callback') this.received.push(url);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(url.pathname === '/callback' ? '<!doctype html><html lang="en"><title>Connected</title><p>You can close this window.</p></html>' : this.page);
  });
  origin = '';
  /** What any other path serves (the cross-site form of a test). */
  page = '<!doctype html><html lang="en"><title>Other site</title></html>';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }
  get redirectUri(): string {
    return `${this.origin}/callback`;
  }
  /** Serves `document` as JSON at `path`; its full URL. */
  serveJson(path: string, document: (url: string) => unknown): string {
    const url = `${this.origin}${path}`;
    this.documents.set(path, document(url));
    return url;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * The SDK's first step: (unless `clientId` names a metadata document the host already holds)
 * registration, then the browser sent to the authorization URL, which lands on sign-in. The host
 * asks for `scope` (left out: what the server's metadata lists, every permission).
 */
export async function startConnecting(
  b: BrowserFixture,
  target: RedirectTarget,
  name: string,
  clientId?: string,
  scope?: string,
): Promise<{ host: McpHost; serverUrl: string }> {
  const serverUrl = `${b.baseUrl}/api/mcp`;
  const host = new McpHost(target.redirectUri, name, async (url) => {
    await b.page.goto(url.href);
  });
  // The SDK client takes an https clientMetadataUrl only; a test's document is http (development), so the host holds it as its client information.
  if (clientId) host.info = { client_id: clientId, issuer: b.baseUrl } as McpHost['info'];
  expect(await auth(host, { serverUrl, scope })).toBe('REDIRECT');
  await b.page.waitForURL('**/sign-in');
  return { host, serverUrl };
}

/** Signs in with an admin-made link, as the other browser tests do, and comes back to the authorization request. */
export async function signInBackToConsent(b: BrowserFixture, session: Session, host: McpHost): Promise<void> {
  const link = await b.app.admin.post(`/admin/users/${session.userId}/sign-in-links`).expect(201);
  await b.page.goto(link.body.url);
  await b.page.getByRole('button', { name: 'Sign in' }).click();
  await b.page.waitForURL((url) => url.pathname === '/oauth/authorize');
  expect(b.page.url()).toBe(host.authorizationUrl!.href);
  await b.page.getByRole('heading', { name: `Connect ${host.clientMetadata.client_name}` }).waitFor();
}

/** Call at the top of a describe: a fresh RedirectTarget for each test, closed after it. */
export function useRedirectTarget(): () => RedirectTarget {
  let target: RedirectTarget | undefined;
  beforeEach(async () => {
    target = await new RedirectTarget().start();
  });
  afterEach(async () => {
    await target?.close();
  });
  return () => target!;
}

/** An owner with two phone lines and one inbound thread on each: a grant of the first line sees `onLine` only. */
export async function ownerWithTwoLines(b: BrowserFixture) {
  const owner = await createSession(b.app.admin, { role: 'OWNER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
  const [line, other] = owner.lines;
  const onLine = await inboundSms(b.app, line.address, partnerPhone(), 'on the chosen line');
  await inboundSms(b.app, other.address, partnerPhone(), 'on the other line');
  return { owner, line, onLine };
}

/** The host's last step: the SDK exchanges the code its redirect URI received, then an MCP client connects with the tokens (close it after). */
export async function exchangeAndConnect(
  host: McpHost,
  serverUrl: string,
  code: string | null,
  name: string,
): Promise<{ issued: OAuthTokens; client: Client }> {
  expect(code).toEqual(expect.any(String));
  expect(await auth(host, { serverUrl, authorizationCode: code! })).toBe('AUTHORIZED');
  const issued = host.saved!;
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: host }));
  return { issued, client };
}
