/**
 * Example MCP client that connects by OAuth, as Claude's or ChatGPT's connectors do, with the
 * official v2 TypeScript SDK (`@modelcontextprotocol/client`) on MCP revision 2026-07-28.
 *
 *   npx ts-node examples/mcp-oauth-client.ts http://127.0.0.1:3000/api/mcp
 *
 * It prints an address: open it in a browser, sign in to the service, choose what the app may do
 * (channel access, permissions) and Allow. The browser comes back to this program's own loopback
 * address (CALLBACK_PORT, default 8090), which finishes the sign-in; the program then lists the
 * tools it may call and the phone lines it may use.
 *
 * What it shows:
 * - the SDK does the protocol: it finds the authorization server from the endpoint's 401 and
 *   Protected Resource Metadata, registers the client (Dynamic Client Registration, with
 *   application_type native for a loopback redirect), sends the person to the consent page with
 *   PKCE and the `resource` of the endpoint, and exchanges the code, checking the `iss` the
 *   service returns (RFC 9207);
 * - the program compares `state` on the way back, and connects again on a fresh transport;
 * - tokens are refreshed by the SDK when they expire (an access token lasts an hour).
 *
 * Kept in memory only, for the example: a real host keeps the tokens in the system's keychain.
 * A host with a public HTTPS address can use a Client ID Metadata Document instead of registering
 * (set `clientMetadataUrl` on the provider; docs/mcp.md, "Client ID Metadata Documents").
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import {
  Client,
  OAuthClientInformationContext,
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  OAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';

/**
 * The SDK's storage and redirect surface: registrations keyed by the authorization server that
 * issued them (a client id is never sent to another), one token pair, the PKCE verifier, and what
 * discovery found before the redirect (the SDK checks the code goes back to the same server).
 */
class LoopbackHost implements OAuthClientProvider {
  private readonly registrations = new Map<string, OAuthClientInformationMixed>();
  private saved?: OAuthTokens;
  private verifier?: string;
  private discovered?: OAuthDiscoveryState;
  lastState?: string;

  constructor(readonly redirectUrl: string) {}

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'MCP OAuth example', redirect_uris: [this.redirectUrl], application_type: 'native', token_endpoint_auth_method: 'none' };
  }
  state(): string {
    return (this.lastState = randomUUID());
  }
  clientInformation(ctx?: OAuthClientInformationContext) {
    return ctx ? this.registrations.get(ctx.issuer) : undefined;
  }
  saveClientInformation(registration: OAuthClientInformationMixed, ctx?: OAuthClientInformationContext): void {
    if (ctx) this.registrations.set(ctx.issuer, registration);
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovered = state;
  }
  discoveryState() {
    return this.discovered;
  }
  redirectToAuthorization(url: URL): void {
    console.log(`Open this address in your browser to connect the app:\n${url.href}`);
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    if (!this.verifier) throw new Error('no PKCE verifier: the authorization was not started here');
    return this.verifier;
  }
}

/** The browser's way back to `port`'s /callback: its query once it comes (answered with a short page), and a way to stop waiting. */
function callback(port: number): { query: Promise<URLSearchParams>; close: () => void } {
  const server = createServer();
  const query = new Promise<URLSearchParams>((resolve, reject) => {
    server.on('request', (req, res) => {
      const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
      if (url.pathname !== '/callback') return void res.writeHead(404).end();
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' }).end('Connected: you can close this tab.\n');
      server.close();
      resolve(url.searchParams);
    });
    server.once('error', reject);
  });
  server.listen(port, '127.0.0.1');
  return { query, close: () => server.close() };
}

async function main(): Promise<void> {
  const endpoint = new URL(process.argv[2] ?? 'http://127.0.0.1:3000/api/mcp');
  const port = Number(process.env.CALLBACK_PORT ?? 8090);
  const host = new LoopbackHost(`http://127.0.0.1:${port}/callback`);
  const back = callback(port);
  const client = new Client({ name: 'mcp-oauth-example', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });

  const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: host });
  try {
    await client.connect(transport); // a token from an earlier run would be used at once
    back.close();
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    const query = await back.query; // the person allowed (or denied) in the browser
    if (query.get('state') !== host.lastState) throw new Error('the answer does not belong to this sign-in (state differs)');
    if (query.has('error')) throw new Error(`not connected: ${query.get('error')}`); // never show error_description: it is the server's text
    await transport.finishAuth(query); // checks iss, exchanges the code for tokens
    await client.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: host }));
  }

  const { tools } = await client.listTools();
  console.log(`Connected (${client.getProtocolEra()} era). Tools this app may call: ${tools.map((tool) => tool.name).join(', ')}`);
  const result = await client.callTool({ name: 'list_phone_numbers', arguments: {} });
  if (result.isError) throw new Error(`list_phone_numbers failed: ${JSON.stringify(result.content)}`);
  const { phoneNumbers } = result.structuredContent as { phoneNumbers: Array<{ phoneNumber: string }> };
  console.log(`Phone lines: ${phoneNumbers.map((line) => line.phoneNumber).join(', ') || 'none'}`);
  await client.close();
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
