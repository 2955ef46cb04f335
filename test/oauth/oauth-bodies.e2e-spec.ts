import { gzipSync } from 'node:zlib';
import { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { OAUTH_FORM_LIMIT, OAUTH_REGISTRATION_LIMIT } from '../../src/oauth/oauth-routes';
import { createTestApp, TestApp } from '../support/app';
import { REDIRECT, registerClient } from '../support/oauth';
import { listen, RawConnection } from '../support/raw-http';

/**
 * The bodies of the OAuth protocol routes (/oauth/token, /oauth/register, /oauth/revoke) are read
 * by the service's own reader, as every body read before authentication (docs/security.md): small
 * explicit limits, no compression, one value per parameter; every refusal is an OAuth error in
 * JSON with its own status, never a 500.
 */
describe('OAuth protocol routes: request bodies', () => {
  let t: TestApp;
  let clientId: string;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp();
    port = await listen(t.app.getHttpServer());
    clientId = await registerClient(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** An OAuth error answer: the status, the JSON body, readable from any origin, not cached. */
  function expectOAuthError(res: Response, status: number, error: string, description: string | RegExp) {
    expect({ status: res.status, body: res.body }).toEqual({
      status,
      body: { error, error_description: typeof description === 'string' ? description : expect.stringMatching(description) },
    });
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['cache-control']).toBe('no-store');
  }

  const big = 150 * 1024;
  const tokenForm = (extra: string) => `grant_type=refresh_token&client_id=${clientId}&refresh_token=csr_x&pad=${extra}`;

  it('a 150 KB body is 413 invalid_request at the token, registration and revocation endpoints, and nothing is registered', async () => {
    const token = await t
      .http()
      .post('/oauth/token')
      .type('form')
      .send(tokenForm('a'.repeat(big)));
    expectOAuthError(token, 413, 'invalid_request', `the request body is larger than ${OAUTH_FORM_LIMIT} bytes`);
    const revoke = await t
      .http()
      .post('/oauth/revoke')
      .type('form')
      .send(`client_id=${clientId}&token=${'a'.repeat(big)}`);
    expectOAuthError(revoke, 413, 'invalid_request', `the request body is larger than ${OAUTH_FORM_LIMIT} bytes`);
    const register = await t
      .http()
      .post('/oauth/register')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ client_name: 'Big body', redirect_uris: [REDIRECT], padding: 'a'.repeat(big) }));
    expectOAuthError(register, 413, 'invalid_request', `the request body is larger than ${OAUTH_REGISTRATION_LIMIT} bytes`);
    const [{ count }] = await t.app.get(DataSource).query(`SELECT count(*)::int AS count FROM oauth_clients WHERE client_name = 'Big body'`);
    expect(count).toBe(0);
  });

  it('a declared 150 KB body is refused before it is sent, and the connection closed', async () => {
    const c = await RawConnection.open(port);
    try {
      c.head('POST', '/oauth/token', { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': big });
      c.write('grant_type=refresh_token&client_id=x&pad=');
      const res = await c.response(5000);
      expect(res?.status).toBe(413);
      expect(res!.headers.connection).toBe('close');
      expect(JSON.parse(res!.body)).toEqual({ error: 'invalid_request', error_description: `the request body is larger than ${OAUTH_FORM_LIMIT} bytes` });
    } finally {
      c.destroy();
    }
  });

  it('a chunked body (no Content-Length) is cut with 413 once it passes the limit', async () => {
    const c = await RawConnection.open(port);
    try {
      c.head('POST', '/oauth/revoke', { 'Content-Type': 'application/x-www-form-urlencoded', 'Transfer-Encoding': 'chunked' });
      const chunk = 'a'.repeat(4096);
      for (let sent = 0; sent < big && !c.isClosed; sent += chunk.length) c.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      const res = await c.response(5000);
      expect(res?.status).toBe(413);
      expect(JSON.parse(res!.body)).toEqual({ error: 'invalid_request', error_description: `the request body is larger than ${OAUTH_FORM_LIMIT} bytes` });
    } finally {
      c.destroy();
    }
  });

  it('JSON that does not parse at registration is 400 invalid_request', async () => {
    const res = await t.http().post('/oauth/register').set('Content-Type', 'application/json').send('{"redirect_uris": [');
    expectOAuthError(res, 400, 'invalid_request', 'the request body is not valid JSON');
  });

  it('a compressed body is 415 (never inflated); a body of another type is 415 naming the type wanted', async () => {
    const gzipped = gzipSync(Buffer.from(tokenForm('')));
    const token = await t.http().post('/oauth/token').set('Content-Type', 'application/x-www-form-urlencoded').set('Content-Encoding', 'gzip').send(gzipped);
    expectOAuthError(token, 415, 'invalid_request', 'Content-Encoding gzip is not accepted: send the request body uncompressed');
    expect(token.headers['accept-encoding']).toBe('identity');
    const json = await t.http().post('/oauth/token').send({ grant_type: 'refresh_token', client_id: clientId, refresh_token: 'csr_x' });
    expectOAuthError(json, 415, 'invalid_request', 'the request body must be application/x-www-form-urlencoded');
    const form = await t.http().post('/oauth/register').type('form').send({ redirect_uris: REDIRECT });
    expectOAuthError(form, 415, 'invalid_request', 'the request body must be application/json');
  });

  it('a parameter given twice is 400 invalid_request naming it (RFC 6749 §3.1)', async () => {
    const res = await t.http().post('/oauth/token').type('form').send(`grant_type=refresh_token&client_id=${clientId}&client_id=other&refresh_token=csr_x`);
    expectOAuthError(res, 400, 'invalid_request', 'the field "client_id" is given more than once');
  });

  it('a small, well-formed body reaches the protocol as before', async () => {
    const token = await t.http().post('/oauth/token').type('form').send({ grant_type: 'refresh_token', client_id: clientId, refresh_token: 'csr_unknown' });
    expectOAuthError(token, 400, 'invalid_grant', 'the refresh token is unknown');
    const revoke = await t.http().post('/oauth/revoke').type('form').send({ client_id: clientId, token: 'csr_unknown' });
    expect(revoke.status).toBe(200);
  });
});
