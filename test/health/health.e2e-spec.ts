import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';
import { ADMIN_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';

const ADMIN = { Authorization: `Bearer ${ADMIN_TOKEN}` };

describe('health, readiness and the admin OpenAPI docs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('GET /health answers 200 without credentials', async () => {
    const res = await t.http().get('/health');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ status: 'ok', info: {}, error: {}, details: {} });
  });

  it('GET /ready answers 200 with the queue, PostgreSQL writes and the outbox relay up', async () => {
    // The Redis client connects in the background after boot, so a probe polls (as an orchestrator would).
    const res = await waitUntil(
      async () => {
        const answer = await t.http().get('/ready');
        return answer.status === 200 && answer;
      },
      '/ready to answer 200',
      { timeoutMs: 5000, intervalMs: 100 },
    );
    const up = { queue: { status: 'up' }, postgres: { status: 'up' }, outbox: { status: 'up' }, delivery_log: { status: 'up' } };
    expect(res.body).toEqual({ status: 'ok', info: up, error: {}, details: up });
  });

  it("GET /ready still answers 200 while every connection of the app's pool is busy", async () => {
    const db = t.app.get(DataSource);
    const poolSize = (db.options.extra as { max: number }).max;
    const busy = Array.from({ length: poolSize }, () => db.query('SELECT pg_sleep(4)').catch(() => undefined)); // cancelled at the end
    const observer = new Client({ connectionString: (db.options as { url: string }).url });
    await observer.connect();
    try {
      const sleeping = async () =>
        (
          await observer.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT pg_sleep(4)' AND state = 'active'`,
          )
        ).rows[0].n;
      await waitUntil(async () => (await sleeping()) === poolSize, `all ${poolSize} connections of the pool busy`, { timeoutMs: 5000 });
      const res = await t.http().get('/ready');
      expect(res.status).toBe(200);
      expect(res.body.info).toEqual({ queue: { status: 'up' }, postgres: { status: 'up' }, outbox: { status: 'up' }, delivery_log: { status: 'up' } });
    } finally {
      // The pool's connections are freed now rather than when their 4 s sleeps end.
      await observer.query(
        `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT pg_sleep(4)' AND state = 'active'`,
      );
      await observer.end();
      await Promise.allSettled(busy);
    }
  });

  it('every answer carries a request id: a sane X-Request-Id is echoed, anything else replaced', async () => {
    const given = await t.http().get('/health').set('X-Request-Id', 'trace-abc.123');
    expect(given.headers['x-request-id']).toBe('trace-abc.123');
    const bad = await t.http().get('/health').set('X-Request-Id', 'bad id with spaces');
    expect(bad.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const none = await t.http().get('/admin/orgs/not-a-uuid');
    expect(none.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('GET /admin/docs serves the Swagger UI with its assets (admin token)', async () => {
    const res = await t.http().get('/admin/docs').set(ADMIN);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Swagger UI');
    expect(res.text).toContain('swagger-ui-bundle.js');
    const init = await t.http().get('/admin/docs/swagger-ui-init.js').set(ADMIN);
    expect(init.status).toBe(200);
    expect(init.text).toContain('Messaging sync service: admin API');
    const css = await t.http().get('/admin/docs/swagger-ui.css').set(ADMIN);
    expect(css.status).toBe(200);
  });

  it.each([
    '/admin/docs',
    '/admin/docs/',
    '/admin/docs-json',
    '/admin/docs-yaml',
    '/admin/docs/swagger-ui-init.js',
    '/admin/docs/swagger-ui.css',
    '/ADMIN/DOCS-JSON',
    '/admin/Docs',
  ])('GET %s in production needs the admin token: 401 without it or with another token', async (path) => {
    for (const authorization of [undefined, 'Bearer not-the-admin-token-0123456789', `Bearer ${process.env.INGEST_TOKEN}`]) {
      const req = t.http().get(path);
      if (authorization) req.set('Authorization', authorization);
      const res = await req;
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="messaging-sync"/);
      expect(res.body).toMatchObject({ statusCode: 401, message: 'a valid admin token is required' });
      expect(res.text).not.toContain('Messaging sync service: admin API');
    }
  });

  it('GET /admin/docs-json describes every admin route with bearer auth', async () => {
    const res = await t.http().get('/admin/docs-json').set(ADMIN);
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(res.body.info.title).toBe('Messaging sync service: admin API');
    const paths = res.body.paths as Record<string, Record<string, { security?: unknown[] }>>;
    const operations = Object.entries(paths)
      .filter(([path]) => path.startsWith('/admin/'))
      .flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    // Other modules may add admin routes of their own; these are the foundation's.
    expect(operations).toEqual(
      expect.arrayContaining([
        'DELETE /admin/api-keys/{keyId}',
        'DELETE /admin/lines/{lineId}',
        'DELETE /admin/lines/{lineId}/members/{userId}',
        'DELETE /admin/orgs/{orgId}/endpoint-cap',
        'GET /admin/orgs/{orgId}',
        'GET /admin/orgs/{orgId}/endpoint-cap',
        'GET /admin/users/{userId}',
        'GET /admin/users/{userId}/api-keys',
        'PATCH /admin/api-keys/{keyId}',
        'PATCH /admin/orgs/{orgId}',
        'POST /admin/orgs',
        'POST /admin/orgs/{orgId}/lines',
        'POST /admin/orgs/{orgId}/users',
        'POST /admin/users/{userId}/api-keys',
        'PUT /admin/lines/{lineId}/members/{userId}',
        'PUT /admin/orgs/{orgId}/endpoint-cap',
      ]),
    );
    expect(operations.length).toBeGreaterThanOrEqual(16);
    for (const [path, methods] of Object.entries(paths)) {
      if (!path.startsWith('/admin/')) continue;
      for (const op of Object.values(methods)) expect(op.security).toEqual([{ bearer: [] }]);
    }
    expect(res.body.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(Object.keys(res.body.components.schemas)).toEqual(
      expect.arrayContaining(['CreateOrgDto', 'CreateUserDto', 'CreateLineDto', 'CreateApiKeyDto', 'ChannelAccessDto', 'SetEndpointCapDto']),
    );
  });
});

describe('the admin OpenAPI docs in development', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { APP_ENV: 'development' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('are open without a token (a developer browses them)', async () => {
    const ui = await t.http().get('/admin/docs');
    expect(ui.status).toBe(200);
    expect(ui.text).toContain('Swagger UI');
    const json = await t.http().get('/admin/docs-json');
    expect(json.status).toBe(200);
    expect(json.body.info.title).toBe('Messaging sync service: admin API');
  });

  it('while the admin API itself still needs the token', async () => {
    expect((await t.http().get('/admin/orgs/00000000-0000-4000-8000-000000000000')).status).toBe(401);
  });
});
