import { ServiceQueues } from '../../src/queue/queue.module';
import { createTestApp, TestApp } from '../support/app';
import { ADMIN_TOKEN } from '../support/test-env';

const BEARER = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const basic = (password: string) => ({ Authorization: `Basic ${Buffer.from(`operator:${password}`).toString('base64')}` });
const PUBLIC_BASE_URL = 'https://sync.example.com';

/**
 * Bull Board at /admin/queues: every queue of the service, for the admin token only (Bearer for
 * scripts, Basic for a browser), and no change made with a browser's Basic credentials from
 * another site.
 */
describe('queue dashboard', () => {
  let t: TestApp;
  let names: string[];

  beforeAll(async () => {
    t = await createTestApp({ env: { PUBLIC_BASE_URL } });
    names = t.app
      .get(ServiceQueues)
      .all()
      .map((queue) => queue.name)
      .sort();
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['no credentials', {}],
    ['a wrong Bearer token', { Authorization: 'Bearer not-the-admin-token-000' }],
    ['a wrong Basic password', basic('not-the-admin-token')],
    ['the ingest token', { Authorization: 'Bearer test-ingest-token-0123456789abcdef' }],
  ])('answers 401 with a Basic challenge to %s, for the page, its assets and its API', async (_, headers) => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues', '/admin/queues/static/favicon-32x32.png']) {
      const res = await t.http().get(path).set(headers);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Basic realm="Messaging Sync queues", charset="UTF-8"');
      expect(res.body.message).toBe('the admin token is required: Authorization: Bearer <ADMIN_TOKEN>, or as the password of Basic credentials');
      expect(res.text).not.toContain(ADMIN_TOKEN);
    }
  });

  it('serves the board to the admin token, as Bearer or as a Basic password, listing every queue of the service', async () => {
    expect(names).toEqual(expect.arrayContaining(['webhook-delivery']));
    for (const auth of [BEARER, basic(ADMIN_TOKEN)]) {
      const page = await t.http().get('/admin/queues').set(auth);
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['cache-control']).toBe('no-store');
      expect(page.text).toContain('<base href="/admin/queues/" />');
      expect(page.text).toContain('<title>Messaging Sync</title>');

      const api = await t.http().get('/admin/queues/api/queues').set(auth);
      expect(api.status).toBe(200);
      expect(api.body.queues.map((q: { name: string }) => q.name).sort()).toEqual(names);
    }
  });

  it('takes a change made with Basic credentials only from its own pages; Bearer callers are scripts, not browsers', async () => {
    const queue = t.app.get(ServiceQueues).all()[0];
    const path = `/admin/queues/api/queues/${encodeURIComponent(queue.name)}`;
    const crossSite = await t.http().put(`${path}/pause`).set(basic(ADMIN_TOKEN)).set('Origin', 'https://evil.example');
    expect(crossSite.status).toBe(403);
    expect(crossSite.body.message).toBe("this change was not sent from the queue dashboard's own pages");
    const noOrigin = await t.http().put(`${path}/pause`).set(basic(ADMIN_TOKEN)).set('Sec-Fetch-Site', 'cross-site');
    expect(noOrigin.status).toBe(403);
    expect(await queue.isPaused()).toBe(false);

    const own = await t.http().put(`${path}/pause`).set(basic(ADMIN_TOKEN)).set('Origin', PUBLIC_BASE_URL);
    expect(own.status).toBe(200);
    expect(await queue.isPaused()).toBe(true);
    const script = await t.http().put(`${path}/resume`).set(BEARER);
    expect(script.status).toBe(200);
    expect(await queue.isPaused()).toBe(false);
  });
});
