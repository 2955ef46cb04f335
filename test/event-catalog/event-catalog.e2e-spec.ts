import { asyncApiDocument } from '../../src/event-catalog/asyncapi-document';
import { dataSchema, payloadSchema } from '../../src/event-catalog/event-schemas';
import { EVENT_KINDS } from '../../src/events/event-kinds';
import { createTestApp, TestApp } from '../support/app';

const BASE = 'https://sync.example.com';

describe('the event catalog is served without credentials, cacheable', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { PUBLIC_BASE_URL: `${BASE}/` } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('GET /events/schemas lists every kind with the URLs of its documents, which are their $ids', async () => {
    const res = await t.http().get('/events/schemas');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=3600');
    expect(res.body.asyncapi).toBe(`${BASE}/events/asyncapi.json`);
    expect(res.body.kinds.map((k: { kind: string }) => k.kind)).toEqual([...EVENT_KINDS]);
    expect(res.body.kinds[0]).toEqual({
      kind: 'message.received',
      title: 'Message received',
      firesWhen: expect.stringContaining('inbound SMS or email'),
      schemas: {
        concise: { payload: `${BASE}/events/schemas/message.received/concise`, data: `${BASE}/events/schemas/message.received/concise/data` },
        verbose: { payload: `${BASE}/events/schemas/message.received/verbose`, data: `${BASE}/events/schemas/message.received/verbose/data` },
      },
    });
  });

  it.each(EVENT_KINDS.flatMap((kind) => (['concise', 'verbose'] as const).map((mode) => [kind, mode] as const)))(
    'GET /events/schemas/%s/%s serves the schema of the body, /data that of its data',
    async (kind, mode) => {
      const path = `/events/schemas/${kind}/${mode}`;
      const res = await t.http().get(path);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/schema+json; charset=utf-8');
      expect(res.headers['cache-control']).toBe('public, max-age=3600');
      const body = JSON.parse(res.text);
      expect(body.$id).toBe(`${BASE}${path}`);
      expect(body).toEqual(payloadSchema(kind, mode, BASE));
      const data = await t.http().get(`${path}/data`);
      expect(data.status).toBe(200);
      expect(JSON.parse(data.text)).toEqual(dataSchema(kind, mode, BASE));
    },
  );

  it('answers a repeated request with 304 when the ETag matches', async () => {
    const first = await t.http().get('/events/schemas/contact.merged/concise');
    expect(first.headers.etag).toEqual(expect.any(String));
    const again = await t.http().get('/events/schemas/contact.merged/concise').set('If-None-Match', first.headers.etag);
    expect(again.status).toBe(304);
  });

  it('GET /events/asyncapi.json serves the AsyncAPI document with ids under PUBLIC_BASE_URL', async () => {
    const res = await t.http().get('/events/asyncapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=3600');
    expect(res.body).toEqual(asyncApiDocument(BASE));
    expect(res.body.id).toBe(`${BASE}/events/asyncapi.json`);
  });

  it.each([
    ['/events/schemas/message.deleted/concise', 'kind', 'no event kind "message.deleted"'],
    ['/events/schemas/message.received/brief', 'mode', 'no payload mode "brief"'],
    ['/events/schemas/message.received/brief/data', 'mode', 'no payload mode "brief"'],
    [`/events/schemas/${'x'.repeat(3000)}/concise`, 'kind', `no event kind "${'x'.repeat(80)}"; one of`],
  ])('GET %s is 404 naming the field', async (path, field, message) => {
    const res = await t.http().get(path);
    expect(res.status).toBe(404);
    expect(res.body.field).toBe(field);
    expect(res.body.message).toContain(message);
    expect(res.body.message.length).toBeLessThan(400);
  });
});
