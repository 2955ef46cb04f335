import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';
import { inboundSms, partnerPhone } from '../support/messaging-hooks';
import { authorizationUrl, freePort, Host, oauthBrowser, REDIRECT, s256 } from '../support/oauth';
import { createSession, Session } from '../support/session';

describe('OAuth 2.1 for the MCP endpoint (DCR, PKCE, consent, tokens)', () => {
  let t: TestApp;
  let base: string;
  let s: Session;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_BASE_URL: base } });
    await t.app.listen(port, '127.0.0.1');
    s = await createSession(t.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
  });
  afterAll(async () => {
    await t?.close();
  });

  const { browserTo, consent, tools } = oauthBrowser(() => ({ t, base, userId: s.userId }));

  it('publishes the metadata, and names it in the 401 of /api/mcp without credentials; API keys work as before', async () => {
    const prm = await t.http().get('/.well-known/oauth-protected-resource/api/mcp').expect(200);
    expect(prm.body).toEqual({
      resource: `${base}/api/mcp`,
      authorization_servers: [base],
      scopes_supported: ['read', 'send', 'draft', 'webhooks'],
      bearer_methods_supported: ['header'],
      resource_name: 'Messaging Sync MCP',
    });
    expect((await t.http().get('/.well-known/oauth-protected-resource').expect(200)).body).toEqual(prm.body);
    const as = await t.http().get('/.well-known/oauth-authorization-server').expect(200);
    expect(as.body).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      revocation_endpoint: `${base}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    });

    const none = await t.http().post('/api/mcp').send({ jsonrpc: '2.0', id: 1, method: 'tools/list' }).expect(401);
    expect(none.headers['www-authenticate']).toBe(
      `Bearer realm="messaging-sync", resource_metadata="${base}/.well-known/oauth-protected-resource/api/mcp", scope="read send draft webhooks"`,
    );
    expect((await tools(s.apiKey)).status).toBe(200);
  });

  it('connects the SDK client: DCR, sign-in, consent to one line read-only, tools, refresh, revocation', async () => {
    const [line, other] = s.lines;
    const onLine = await inboundSms(t, line.address, partnerPhone(), 'on the granted line');
    await inboundSms(t, other.address, partnerPhone(), 'on the other line');

    const host = new Host();
    const serverUrl = `${base}/api/mcp`;
    expect(await auth(host, { serverUrl })).toBe('REDIRECT');
    expect(host.info?.client_id).toEqual(expect.any(String));
    const url = host.authorizationUrl!;
    expect(url.searchParams.get('resource')).toBe(serverUrl);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');

    const b = await browserTo(url.href);
    expect(b.page).toContain('E2E Agent');
    expect(b.page).toContain('127.0.0.1:9');
    // A cross-site POST to consent is refused, and issues nothing.
    expect(
      (
        await consent(
          b,
          { decision: 'allow', access: 'LINES', [`line-${line.id}`]: 'on', 'permissions-shown': 'on', 'permission-read': 'on' },
          'https://evil.example',
        )
      ).status,
    ).toBe(403);
    const back = await consent(b, { decision: 'allow', access: 'LINES', [`line-${line.id}`]: 'on', 'permissions-shown': 'on', 'permission-read': 'on' });
    expect(back.status).toBe(303);
    const response = new URL(back.location);
    expect(response.origin + response.pathname).toBe(REDIRECT);
    expect(response.searchParams.get('state')).toBe('state-42');
    expect(response.searchParams.get('iss')).toBe(base);
    const code = response.searchParams.get('code')!;

    expect(await auth(host, { serverUrl, authorizationCode: code })).toBe('AUTHORIZED');
    const first = host.saved!;
    expect(first).toMatchObject({ token_type: expect.stringMatching(/^bearer$/i), expires_in: 3600, scope: 'read', refresh_token: expect.any(String) });

    const client = new Client({ name: 'e2e-oauth', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: host }));
    try {
      const { tools: listed } = await client.listTools();
      const names = listed.map((tool) => tool.name);
      expect(names).toContain('list_threads');
      expect(names).not.toContain('send_sms');
      expect(names).not.toContain('register_webhook');
      const threads = (await client.callTool({ name: 'list_threads', arguments: {} })).structuredContent as any;
      expect(threads.threads.map((x: any) => x.thread.id)).toEqual([onLine.threadId]);
    } finally {
      await client.close();
    }
    // The token acts on the MCP resource only, not on other routes.
    const rest = await t.http().post(`/api/agent-turns/${onLine.threadId}/approve`).set('Authorization', `Bearer ${first.access_token}`).send({});
    expect(rest.status).toBe(401);
    expect(rest.headers['www-authenticate']).toBe('Bearer realm="messaging-sync", error="invalid_token"');

    // Refresh rotates: a new pair; the old access token is gone; the old refresh token used again revokes the grant.
    expect(await auth(host, { serverUrl })).toBe('AUTHORIZED');
    const second = host.saved!;
    expect(second.access_token).not.toBe(first.access_token);
    expect((await tools(first.access_token)).status).toBe(401);
    expect((await tools(second.access_token)).status).toBe(200);

    // Revocation (RFC 7009): the next call is 401.
    await t.http().post('/oauth/revoke').type('form').send({ token: second.refresh_token, client_id: host.info!.client_id }).expect(200);
    const revoked = await tools(second.access_token);
    expect(revoked.status).toBe(401);
  });

  describe('refusals', () => {
    let clientId: string;
    let cookie: string | undefined;
    beforeAll(async () => {
      const reg = await t
        .http()
        .post('/oauth/register')
        .send({ client_name: 'Raw', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' })
        .expect(201);
      clientId = reg.body.client_id;
      expect(reg.body.client_secret).toBeUndefined();
    });

    function authorizeUrl(params: Record<string, string | undefined>): string {
      return authorizationUrl(base, { client_id: clientId, ...params }).href;
    }

    async function errorOf(params: Record<string, string | undefined>): Promise<URL> {
      const res = await t.http().get(authorizeUrl(params).slice(base.length)).expect(302);
      const url = new URL(res.headers.location);
      expect(url.searchParams.get('state')).toBe('xyz');
      expect(url.searchParams.get('iss')).toBe(base);
      return url;
    }

    /** A code through consent (All channels, read), for its verifier. */
    async function codeFor(verifier: string): Promise<string> {
      const b = await browserTo(authorizeUrl({ code_challenge: s256(verifier), code_challenge_method: 'S256' }), cookie);
      cookie = b.cookie;
      const back = await consent(b, { decision: 'allow', access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on' });
      expect(back.status).toBe(303);
      return new URL(back.location).searchParams.get('code')!;
    }

    const db = () => t.app.get(DataSource);
    const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

    /** The grant a code belongs to (codes and tokens are stored only as SHA-256 hashes). */
    async function grantOfCode(code: string): Promise<string> {
      const [row] = await db().query(`SELECT grant_id FROM oauth_codes WHERE code_hash = $1`, [sha256(code)]);
      return row.grant_id;
    }

    /** How many access and refresh tokens the grant has. */
    async function tokensOf(grantId: string): Promise<number> {
      const [row] = await db().query(`SELECT count(*)::int AS n FROM oauth_tokens WHERE grant_id = $1`, [grantId]);
      return row.n;
    }

    function token(fields: Record<string, string>) {
      return t
        .http()
        .post('/oauth/token')
        .type('form')
        .send({ client_id: clientId, redirect_uri: REDIRECT, ...fields });
    }

    it('refuses registration with a redirect URI that is neither https nor loopback http', async () => {
      const res = await t
        .http()
        .post('/oauth/register')
        .send({ redirect_uris: ['http://example.com/cb'], token_endpoint_auth_method: 'none' })
        .expect(400);
      expect(res.body.error).toBe('invalid_client_metadata');
    });

    it('refuses no PKCE and plain PKCE (invalid_request), a missing or foreign resource (invalid_target)', async () => {
      const challenge = s256(randomBytes(32).toString('base64url'));
      expect((await errorOf({})).searchParams.get('error')).toBe('invalid_request');
      expect((await errorOf({ code_challenge: challenge, code_challenge_method: 'plain' })).searchParams.get('error')).toBe('invalid_request');
      expect((await errorOf({ code_challenge: challenge, code_challenge_method: 'S256', resource: undefined })).searchParams.get('error')).toBe(
        'invalid_target',
      );
      expect(
        (await errorOf({ code_challenge: challenge, code_challenge_method: 'S256', resource: 'https://other.example/api/mcp' })).searchParams.get('error'),
      ).toBe('invalid_target');
    });

    it('does not redirect to an unregistered redirect_uri, even another loopback port', async () => {
      const res = await t
        .http()
        .get(
          authorizeUrl({ redirect_uri: 'http://127.0.0.1:10/callback', code_challenge: s256('x'.repeat(43)), code_challenge_method: 'S256' }).slice(
            base.length,
          ),
        );
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).toContain('is not registered');
    });

    it('refuses a wrong verifier, then a reused code (invalid_grant), and the reuse revokes what the code issued', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const code = await codeFor(verifier);
      const wrong = await token({ grant_type: 'authorization_code', code, code_verifier: randomBytes(32).toString('base64url') }).expect(400);
      expect(wrong.body.error).toBe('invalid_grant');
      const ok = await token({ grant_type: 'authorization_code', code, code_verifier: verifier }).expect(200);
      expect((await tools(ok.body.access_token)).status).toBe(200);
      const again = await token({ grant_type: 'authorization_code', code, code_verifier: verifier }).expect(400);
      expect(again.body.error).toBe('invalid_grant');
      expect((await tools(ok.body.access_token)).status).toBe(401);
    });

    it('revokes the whole family when a refresh token is used twice', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const code = await codeFor(verifier);
      const issued = await token({ grant_type: 'authorization_code', code, code_verifier: verifier }).expect(200);
      const grantId = await grantOfCode(code);
      const rotated = await token({ grant_type: 'refresh_token', refresh_token: issued.body.refresh_token }).expect(200);
      expect((await tools(rotated.body.access_token)).status).toBe(200);
      const reused = await token({ grant_type: 'refresh_token', refresh_token: issued.body.refresh_token }).expect(400);
      expect(reused.body.error).toBe('invalid_grant');
      // The family: what the first rotation issued is refused too, and nothing of the grant is left.
      expect((await tools(rotated.body.access_token)).status).toBe(401);
      expect((await token({ grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token })).body.error).toBe('invalid_grant');
      expect(await tokensOf(grantId)).toBe(0);
    });

    it('refuses an expired code (invalid_grant) and issues nothing', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const code = await codeFor(verifier);
      const grantId = await grantOfCode(code);
      await db().query(`UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE code_hash = $1`, [sha256(code)]);
      const expired = await token({ grant_type: 'authorization_code', code, code_verifier: verifier }).expect(400);
      expect(expired.body.error).toBe('invalid_grant');
      expect(expired.body.access_token).toBeUndefined();
      expect(await tokensOf(grantId)).toBe(0);
    });

    it('accepts an access token only for the MCP resource: 401 on another API route, and 401 when its grant is for another resource', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const code = await codeFor(verifier);
      const grantId = await grantOfCode(code);
      const issued = await token({ grant_type: 'authorization_code', code, code_verifier: verifier }).expect(200);
      expect((await tools(issued.body.access_token)).status).toBe(200);

      // Another route that takes an API key: the same person's key gets past authentication, the token does not.
      const agent = (await t.admin.post(`/admin/lines/${s.lines[0].id}/agents`, { name: 'Resource bot', mode: 'DRAFT' }).expect(201)).body;
      const turn = (key: string) =>
        t.http().post(`/api/agents/${agent.id}/turns`).set('Authorization', `Bearer ${key}`).send({ threadId: randomUUID(), body: 'x' });
      expect((await turn(s.apiKey)).status).toBe(404);
      const rest = await turn(issued.body.access_token);
      expect(rest.status).toBe(401);
      expect(rest.headers['www-authenticate']).toBe('Bearer realm="messaging-sync", error="invalid_token"');

      // A grant whose resource is another server's MCP endpoint: its token is refused here.
      await db().query(`UPDATE oauth_grants SET resource = 'https://other.example/api/mcp' WHERE id = $1`, [grantId]);
      expect((await tools(issued.body.access_token)).status).toBe(401);
      await db().query(`UPDATE oauth_grants SET resource = $2 WHERE id = $1`, [grantId, `${base}/api/mcp`]);
      expect((await tools(issued.body.access_token)).status).toBe(200);
    });
  });
});
