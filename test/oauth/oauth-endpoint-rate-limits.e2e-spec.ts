import { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';
import { registerClient } from '../support/oauth';
import { privateQueuePrefix } from '../support/test-env';

/**
 * Issue 31: the token, revocation and registration endpoints are limited per client address by the
 * service's own limits, counted in Redis (OAUTH_TOKEN_RATE_LIMIT, shared by token and revocation,
 * and OAUTH_REGISTER_RATE_LIMIT per PUBLIC_RATE_WINDOW_SECONDS), not by the SDK's in-memory
 * limiter: two replicas on one Redis share the count, and a refusal is the OAuth error
 * `too_many_requests` with Retry-After.
 */
describe('OAuth token, revocation and registration endpoints: per-address limits', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    // Two replicas of the service on one database and one Redis prefix.
    const env = {
      OAUTH_TOKEN_RATE_LIMIT: '3',
      OAUTH_REGISTER_RATE_LIMIT: '2',
      PUBLIC_RATE_WINDOW_SECONDS: '600',
      QUEUE_PREFIX: privateQueuePrefix('oauth-limits'),
    };
    a = await createTestApp({ env });
    b = await createTestApp({ env });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  function expectRefused(res: Response, variable: string) {
    expect(res.status).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.body).toEqual({ error: 'too_many_requests', error_description: expect.stringContaining(variable) });
  }

  let clientId: string;

  it('answers OAUTH_REGISTER_RATE_LIMIT registrations of one address across replicas, then 429 and no client', async () => {
    clientId = await registerClient(a);
    await registerClient(b);
    const register = (t: TestApp) =>
      t
        .http()
        .post('/oauth/register')
        .send({ client_name: 'One too many', redirect_uris: ['http://127.0.0.1:9/callback'], token_endpoint_auth_method: 'none' });
    expectRefused(await register(a), 'OAUTH_REGISTER_RATE_LIMIT');
    expectRefused(await register(b), 'OAUTH_REGISTER_RATE_LIMIT');
    const [{ count }] = await a.app.get(DataSource).query(`SELECT count(*)::int AS count FROM oauth_clients WHERE client_name = 'One too many'`);
    expect(count).toBe(0);
  });

  it('answers OAUTH_TOKEN_RATE_LIMIT token and revocation requests of one address across replicas, then 429', async () => {
    const refresh = (t: TestApp) =>
      t.http().post('/oauth/token').type('form').send({ grant_type: 'refresh_token', client_id: clientId, refresh_token: 'csr_not-a-token' });
    for (const t of [a, b]) {
      const res = await refresh(t);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_grant');
    }
    // Revocation counts against the same budget; a forwarded address is not believed (TRUST_PROXY is off).
    const revoked = await b
      .http()
      .post('/oauth/revoke')
      .set('X-Forwarded-For', '203.0.113.9')
      .type('form')
      .send({ client_id: clientId, token: 'csa_not-a-token' });
    expect(revoked.status).toBe(200);

    expectRefused(await refresh(a), 'OAUTH_TOKEN_RATE_LIMIT');
    expectRefused(await refresh(b).set('X-Forwarded-For', '203.0.113.10'), 'OAUTH_TOKEN_RATE_LIMIT');
    expectRefused(await a.http().post('/oauth/revoke').type('form').send({ client_id: clientId, token: 'csa_not-a-token' }), 'OAUTH_TOKEN_RATE_LIMIT');
    // A CORS preflight is not counted nor refused: a browser client still reads the 429.
    const preflight = await a.http().options('/oauth/token').set('Origin', 'https://app.example').set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).toBe(204);
  });
});
