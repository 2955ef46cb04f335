import { ALLOWED_URLS, ForbiddenUrl, FORBIDDEN_URLS, refusedWith } from '../fixtures/forbidden-urls';
import { describeRange } from '../../src/outbound-http/url-policy';
import { createSession, Session } from '../support/session';
import { createMcpTestApp, McpTestApp, toolError, toolOk } from '../support/mcp';

/** The words a refusal of this case must contain. */
function expectedWords(item: ForbiddenUrl): string | RegExp {
  switch (item.reason) {
    case 'address':
      return describeRange(item.range!);
    case 'http':
      return 'url must use https';
    case 'credentials':
      return 'url must not contain credentials';
    case 'scheme':
      return /^url scheme \S+ is not allowed/;
    case 'name':
      return 'is a local-only name';
    case 'unresolvable':
      return 'does not resolve to any address';
    case 'syntax':
      return /\burl\b/;
  }
}

const label = (item: ForbiddenUrl) => `${JSON.stringify(item.url.length > 80 ? `${item.url.slice(0, 60)}...` : item.url)} (${item.why})`;

/** An app under one configuration, and a user whose cap never gets in the way. */
async function setUp(env: Record<string, string>): Promise<{ t: McpTestApp; s: Session }> {
  const t = await createMcpTestApp(env);
  const s = await createSession(t.admin, { tier: 'POWER' });
  const grant = await t.admin.put(`/admin/orgs/${s.orgId}/endpoint-cap`, { maxEndpointsPerUser: 1000, reason: 'url policy corpus' });
  expect(grant.status).toBe(200);
  return { t, s };
}

async function endpointCount(t: McpTestApp, s: Session): Promise<number> {
  const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM webhook_endpoints WHERE user_id = $1', [s.userId]);
  return count;
}

describe('URL policy at registration', () => {
  it('the corpus holds at least 60 forms, some of them http and some loopback', () => {
    expect(FORBIDDEN_URLS.length).toBeGreaterThanOrEqual(60);
    expect(FORBIDDEN_URLS.filter((item) => item.reason === 'http').length).toBeGreaterThan(0);
    expect(FORBIDDEN_URLS.filter((item) => item.loopback).length).toBeGreaterThan(0);
  });

  describe('production (https only, no allowlist)', () => {
    let t: McpTestApp;
    let s: Session;
    beforeAll(async () => {
      ({ t, s } = await setUp({ APP_ENV: 'production', WEBHOOK_ALLOWED_CIDRS: '' }));
    });
    afterAll(async () => {
      // Nothing of the forbidden corpus was stored; the allowed corpus was.
      expect(await endpointCount(t, s)).toBe(ALLOWED_URLS.length);
      await t.close();
    });

    it.each(FORBIDDEN_URLS.map((item) => [label(item), item] as const))('refuses %s', async (_, item) => {
      const message = await toolError(t, s.apiKey, 'register_webhook', { url: item.url, events: ['message.received'] });
      expect(message).toMatch(/\burl\b/);
      const words = expectedWords(item);
      if (typeof words === 'string') expect(message).toContain(words);
      else expect(message).toMatch(words);
    });

    it('refuses local-only names and IP literals without looking them up', () => {
      const looked = new Set(t.resolver.calls);
      for (const item of FORBIDDEN_URLS.filter((x) => x.reason === 'name')) {
        const host = new URL(item.url).hostname.replace(/\.$/, '');
        expect({ url: item.url, looked: looked.has(host) }).toEqual({ url: item.url, looked: false });
      }
      for (const call of looked) expect(call).not.toMatch(/^[\d.]+$|:/);
    });

    it.each(ALLOWED_URLS.map((item) => [item.url, item] as const))('accepts %s and stores it normalized', async (_, item) => {
      const { endpoint } = await toolOk(t, s.apiKey, 'register_webhook', { url: item.url, events: ['message.received'] });
      expect(endpoint.url).toBe(item.href ?? item.url);
      expect(endpoint.status).toBe('active');
    });

    it('refuses a bad URL on update_webhook too, and keeps the old one', async () => {
      const url = 'https://hooks.example.com/keep';
      const { endpoint } = await toolOk(t, s.apiKey, 'register_webhook', { url, events: ['message.received'] });
      for (const bad of ['https://10.0.0.1/', 'http://hooks.example.com/', 'https://metadata.rebind.example/hook', 'https://[::1]/']) {
        expect(await toolError(t, s.apiKey, 'update_webhook', { endpointId: endpoint.id, url: bad })).toMatch(/\burl\b/);
      }
      expect((await toolOk(t, s.apiKey, 'get_webhook', { endpointId: endpoint.id })).endpoint.url).toBe(url);
      await toolOk(t, s.apiKey, 'delete_webhook', { endpointId: endpoint.id });
    });
  });

  describe('development with WEBHOOK_ALLOWED_CIDRS=none (http:// accepted too, loopback not)', () => {
    let t: McpTestApp;
    let s: Session;
    beforeAll(async () => {
      ({ t, s } = await setUp({ APP_ENV: 'development', WEBHOOK_ALLOWED_CIDRS: 'none' }));
    });
    afterAll(async () => {
      await t.close();
    });

    it.each(FORBIDDEN_URLS.filter((item) => item.reason === 'http').map((item) => [item.url, item] as const))('accepts %s', async (_, item) => {
      const { endpoint } = await toolOk(t, s.apiKey, 'register_webhook', { url: item.url, events: ['message.received'] });
      expect(endpoint.url).toBe(item.url);
    });

    it.each(refusedWith({ allowHttp: true, loopbackAllowed: false }).map((item) => [label(item), item] as const))('still refuses %s', async (_, item) => {
      expect(await toolError(t, s.apiKey, 'register_webhook', { url: item.url, events: ['message.received'] })).toMatch(/\burl\b/);
    });

    it('still refuses http:// to a loopback or private address', async () => {
      for (const url of ['http://127.0.0.1:3000/hook', 'http://localhost/hook', 'http://192.168.1.1/']) {
        expect(await toolError(t, s.apiKey, 'register_webhook', { url, events: ['message.received'] })).toMatch(/\burl\b/);
      }
    });
  });

  describe('production with WEBHOOK_ALLOWED_CIDRS=127.0.0.0/8', () => {
    let t: McpTestApp;
    let s: Session;
    beforeAll(async () => {
      ({ t, s } = await setUp({ APP_ENV: 'production', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' }));
    });
    afterAll(async () => {
      await t.close();
    });

    it('accepts https://127.0.0.1', async () => {
      const { endpoint } = await toolOk(t, s.apiKey, 'register_webhook', { url: 'https://127.0.0.1:8443/hook', events: ['message.received'] });
      expect(endpoint.url).toBe('https://127.0.0.1:8443/hook');
    });

    it.each(FORBIDDEN_URLS.filter((item) => item.loopback).map((item) => [label(item), item] as const))('accepts the loopback form %s', async (_, item) => {
      const { endpoint } = await toolOk(t, s.apiKey, 'register_webhook', { url: item.url, events: ['message.received'] });
      expect(endpoint.status).toBe('active');
    });

    it.each(refusedWith({ allowHttp: false, loopbackAllowed: true }).map((item) => [label(item), item] as const))('still refuses %s', async (_, item) => {
      expect(await toolError(t, s.apiKey, 'register_webhook', { url: item.url, events: ['message.received'] })).toMatch(/\burl\b/);
    });

    it('still refuses http:// to 127.0.0.1 (https only outside development)', async () => {
      expect(await toolError(t, s.apiKey, 'register_webhook', { url: 'http://127.0.0.1/hook', events: ['message.received'] })).toContain('url must use https');
    });
  });
});
