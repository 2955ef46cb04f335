import { createMessagingTestApp, MessagingTestApp } from '../support/messaging-hooks';

/**
 * Issue 31: the authorization endpoint is public and may fetch a Client ID Metadata Document from
 * the URL it is given, so each client address may open it OAUTH_AUTHORIZE_RATE_LIMIT times a
 * window (429 with Retry-After past that, as the service's other per-address limits).
 */
describe('OAuth authorization endpoint: per-address limit', () => {
  let m: MessagingTestApp;
  beforeAll(async () => {
    m = await createMessagingTestApp({ OAUTH_AUTHORIZE_RATE_LIMIT: '3', PUBLIC_RATE_WINDOW_SECONDS: '600' });
  });
  afterAll(async () => {
    await m?.close();
  });

  it('answers OAUTH_AUTHORIZE_RATE_LIMIT requests of one address, then 429 with Retry-After', async () => {
    const documentUrl = 'http://127.0.0.1:9/client.json';
    const open = () => m.http().get('/oauth/authorize').query({ client_id: documentUrl, response_type: 'code' });
    for (let i = 0; i < 3; i++) {
      const res = await open();
      expect(res.status).toBe(400); // the document cannot be fetched: a page that names why
      expect(res.headers.location).toBeUndefined();
    }
    const refused = await open();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['content-type']).toMatch(/^text\/html/);
    expect(refused.text).toContain('OAUTH_AUTHORIZE_RATE_LIMIT');
  });
});
