import { createHash, randomBytes } from 'node:crypto';
import { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/**
 * OAuth over plain HTTP, without jest: the benchmark uses it too (bench/scenarios/s3-tools.ts).
 */

/** The PKCE S256 challenge of a verifier (RFC 7636). */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** Text of an HTML attribute value as the page wrote it. */
export function decodeHtml(html: string): string {
  return html
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&#39;/g, "'");
}

/** The hidden fields of a page's forms (the consent form posts the request back with them, and _csrf). */
export function hiddenFields(page: string): Record<string, string> {
  return Object.fromEntries([...page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1], decodeHtml(m[2])]));
}

/**
 * The access form's fields for a choice (consent, a connected app's Change access, an API key's
 * edit): Specific lines (by id) or All channels, and the permissions ticked; none of the permission
 * fields when `permissions` is left out (the form did not show them).
 */
export function accessChoice(choice: { lineIds?: string[]; permissions?: string[] }): Record<string, string> {
  return {
    access: choice.lineIds ? 'LINES' : 'ALL',
    ...Object.fromEntries((choice.lineIds ?? []).map((id) => [`line-${id}`, 'on'])),
    ...(choice.permissions ? { 'permissions-shown': 'on', ...Object.fromEntries(choice.permissions.map((p) => [`permission-${p}`, 'on'])) } : {}),
  };
}

/** The consent form's fields for a choice: Allow, and accessChoice's. */
export function consentChoice(choice: { lineIds?: string[]; permissions: string[] }): Record<string, string> {
  return { decision: 'allow', ...accessChoice(choice) };
}

export interface ConnectedClient {
  clientId: string;
  redirectUri: string;
  tokens: OAuthTokens;
}

/**
 * An OAuth connection driven over plain HTTP, as a host and a person's browser would: Dynamic
 * Client Registration, sign-in with a link (the `token` of an admin-made sign-in link), the
 * authorization request with PKCE, consent to `choice`, and the code exchanged for tokens.
 * `url` is where the service listens; `origin` is its PUBLIC_BASE_URL (the browser's Origin, and
 * the resource is `${origin}/api/mcp`). Throws naming the step that answered unexpectedly.
 */
export async function connectOverHttp(
  server: { url: string; origin: string },
  signInToken: string,
  choice: { lineIds?: string[]; permissions: string[] },
  redirectUri = 'http://127.0.0.1:9/callback',
): Promise<ConnectedClient> {
  const step = async (what: string, res: Response, status: number): Promise<string> => {
    const text = await res.text();
    if (res.status !== status) throw new Error(`OAuth over HTTP: ${what} answered ${res.status} (want ${status}): ${text.slice(0, 300)}`);
    return text;
  };
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const formType = { 'content-type': 'application/x-www-form-urlencoded' };

  const registered = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'HTTP agent', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
  });
  const clientId = (JSON.parse(await step('registration', registered, 201)) as { client_id: string }).client_id;

  const signedIn = await fetch(`${server.url}/sign-in/link`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...formType, origin: server.origin },
    body: form({ token: signInToken }),
  });
  await step('sign-in', signedIn, 303);
  const cookie = signedIn.headers.getSetCookie()[0].split(';')[0];

  const verifier = randomBytes(32).toString('base64url');
  const request = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: s256(verifier),
    code_challenge_method: 'S256',
    state: 'http-state',
    resource: `${server.origin}/api/mcp`,
    scope: choice.permissions.join(' '),
  });
  const page = await step('the consent page', await fetch(`${server.url}/oauth/authorize?${request}`, { headers: { cookie }, redirect: 'manual' }), 200);
  const consented = await fetch(`${server.url}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...formType, cookie, origin: server.origin },
    body: form({ ...hiddenFields(page), ...consentChoice(choice) }),
  });
  await step('consent', consented, 303);
  const code = new URL(consented.headers.get('location')!).searchParams.get('code');
  if (!code) throw new Error(`OAuth over HTTP: consent sent the browser to ${consented.headers.get('location')}, with no code`);

  const token = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: formType,
    body: form({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: redirectUri }),
  });
  return { clientId, redirectUri, tokens: JSON.parse(await step('the token exchange', token, 200)) as OAuthTokens };
}
