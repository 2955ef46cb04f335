import { connect } from 'node:net';
import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import { DataSource } from 'typeorm';
import { BodyBudget } from '../../src/common/body-budget';
import { MAX_JSON_DEPTH } from '../../src/common/json-depth';
import { createTestApp, TestApp } from '../support/app';
import { hangUpWhileLocked, settled } from '../support/hang-up';
import { MCP_URL } from '../support/mcp';
import { listen, RawConnection } from '../support/raw-http';
import { createSession, Session } from '../support/session';
import { ADMIN_TOKEN, INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';

/**
 * Issue 10 §2 (unauthenticated memory exhaustion) and the deep-JSON item: bodies are read only
 * after authentication, compressed bodies are refused, the bytes held at once are bounded, slow
 * clients are cut off, and JSON nesting is limited. Real HTTP over TCP sockets where supertest
 * cannot show it (an answer before the body was sent, 100 Continue, a closed connection).
 */

const MB = 1024 * 1024;
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('request bodies: read only after authentication', () => {
  let t: TestApp;
  let port: number;
  let s: Session;
  let phone: string;
  beforeAll(async () => {
    t = await createTestApp();
    port = await listen(t.app.getHttpServer());
    s = await createSession(t.admin);
    phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!.address;
  });
  afterAll(async () => {
    await t.close();
  });

  const BIG = 24 * MB;
  it.each<[string, string, Record<string, string>]>([
    ['/ingest/email/inbound without a token', '/ingest/email/inbound', { 'Content-Type': 'message/rfc822' }],
    ['/ingest/email/inbound with the admin token', '/ingest/email/inbound', { 'Content-Type': 'message/rfc822', Authorization: `Bearer ${ADMIN_TOKEN}` }],
    [
      '/ingest/sms/inbound with a wrong token',
      '/ingest/sms/inbound',
      { 'Content-Type': 'application/json', Authorization: 'Bearer not-the-ingest-token-012345' },
    ],
    ['/api/mcp without a key', `/${MCP_URL.replace(/^\//, '')}`, { 'Content-Type': 'application/json' }],
    ['/api/mcp with an unknown key', MCP_URL, { 'Content-Type': 'application/json', Authorization: `Bearer csk_${'0'.repeat(48)}` }],
    ['/admin/orgs with a wrong token', '/admin/orgs', { 'Content-Type': 'application/json', Authorization: 'Bearer wrong-admin-token-0123456789' }],
  ])('POST %s: 401 while the 24 MB body is still unsent, then the connection closes', async (_, path, headers) => {
    const c = await RawConnection.open(port);
    try {
      c.head('POST', path, { ...headers, 'Content-Length': BIG });
      c.write(Buffer.alloc(64 * 1024, 0x61));
      // The rest of the body is never sent: an answer proves the server did not wait for it.
      const res = await c.response(5000);
      expect(res?.status).toBe(401);
      expect(res!.headers['www-authenticate']).toMatch(/^Bearer realm="messaging-sync"/);
      expect(res!.headers.connection).toBe('close');
      expect(JSON.parse(res!.body)).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
      expect(await c.closedWithin(2000)).toBe(true);
    } finally {
      c.destroy();
    }
  });

  it('a client still sending its body when the 401 comes reads the 401, not a connection reset', async () => {
    // The server answers before reading the body and closes the connection. Closing a socket with
    // request bytes unread, or still arriving, makes the kernel reset it, and a reset throws away
    // what the client has received but not yet read: the client sees ECONNRESET or EPIPE instead
    // of the 401 (found by the MCP fuzz, through undici). This client reads nothing until it has
    // written more of its body after the answer came; the server reads and drops it (up to 4 MB,
    // for up to 2 s), so the 401 survives.
    const socket = connect({ port, host: '127.0.0.1' });
    await new Promise<void>((done, fail) => socket.once('connect', done).once('error', fail));
    let error: string | undefined;
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    try {
      socket.pause();
      socket.write(`POST ${MCP_URL} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${3 * MB}\r\n\r\n`);
      socket.write(Buffer.alloc(256 * 1024, 0x5b));
      await new Promise((done) => setTimeout(done, 300)); // the 401 is sent meanwhile
      socket.write(Buffer.alloc(MB, 0x5b));
      await new Promise((done) => setTimeout(done, 300));
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      const closed = new Promise<void>((done) => socket.once('close', () => done()));
      socket.resume();
      await Promise.race([closed, new Promise((done) => setTimeout(done, 5000))]);
      expect({ error, answer: Buffer.concat(received).toString('latin1').split('\r\n')[0] }).toEqual({ error: undefined, answer: 'HTTP/1.1 401 Unauthorized' });
    } finally {
      socket.destroy();
    }
  });

  it('Expect: 100-continue gets no 100 without a token (401 at once), and a 100 before the body with one', async () => {
    const body = Buffer.from(JSON.stringify({ to: phone, from: '+15550001111', body: 'hello', providerMessageId: `expect-${Date.now()}` }));
    const refused = await RawConnection.open(port);
    try {
      refused.head('POST', '/ingest/sms/inbound', { 'Content-Type': 'application/json', 'Content-Length': body.length, Expect: '100-continue' });
      const first = await refused.response(5000);
      expect(first?.status).toBe(401);
      expect(await refused.closedWithin(2000)).toBe(true);
    } finally {
      refused.destroy();
    }

    const served = await RawConnection.open(port);
    try {
      served.head('POST', '/ingest/sms/inbound', {
        'Content-Type': 'application/json',
        'Content-Length': body.length,
        Expect: '100-continue',
        Authorization: `Bearer ${INGEST_TOKEN}`,
      });
      expect((await served.response(5000))?.status).toBe(100);
      served.write(body);
      const answer = await served.response(5000);
      expect(answer?.status).toBe(201);
      expect(JSON.parse(answer!.body)).toMatchObject({ messageId: expect.any(String), threadId: expect.any(String) });
    } finally {
      served.destroy();
    }
  });

  it('a small body with a wrong key gets 401 and the connection stays open for the next request', async () => {
    const c = await RawConnection.open(port);
    try {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
      c.head('POST', MCP_URL, { 'Content-Type': 'application/json', 'Content-Length': body.length, Authorization: 'Bearer csk_wrong' });
      c.write(body);
      const refused = await c.response(5000);
      expect(refused?.status).toBe(401);
      expect(refused!.headers.connection).not.toBe('close');
      c.head('POST', MCP_URL, { 'Content-Type': 'application/json', 'Content-Length': body.length, Authorization: `Bearer ${s.apiKey}` });
      c.write(body);
      const served = await c.response(5000);
      expect(served?.status).toBe(200);
      expect(JSON.parse(served!.body)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    } finally {
      c.destroy();
    }
  });

  describe('compressed bodies are refused, never inflated', () => {
    const sms = () => ({ to: phone, from: '+15550002222', body: 'zipped', providerMessageId: `gz-${Date.now()}-${Math.random()}` });

    it('a gzip bomb to /ingest/email/inbound (25 KB that would inflate to 25 MB) is 415 naming Content-Encoding', async () => {
      const bomb = gzipSync(Buffer.alloc(25 * MB - 1, 0x61));
      expect(bomb.length).toBeLessThan(100 * 1024);
      const res = await t
        .http()
        .post('/ingest/email/inbound')
        .set('Authorization', `Bearer ${INGEST_TOKEN}`)
        .set('Content-Type', 'message/rfc822')
        .set('Content-Encoding', 'gzip')
        .send(bomb);
      expect(res.status).toBe(415);
      expect(res.headers['accept-encoding']).toBe('identity');
      expect(res.body).toEqual({
        statusCode: 415,
        error: 'Unsupported Media Type',
        message: 'Content-Encoding gzip is not accepted: send the request body uncompressed',
        field: 'Content-Encoding',
      });
    });

    it.each<[string, (b: Buffer) => Buffer]>([
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
      ['GZip', gzipSync],
    ])('Content-Encoding %s on a JSON route is 415 and stores nothing', async (encoding, compress) => {
      const body = sms();
      const res = await t
        .http()
        .post('/ingest/sms/inbound')
        .set('Authorization', `Bearer ${INGEST_TOKEN}`)
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', encoding)
        .send(compress(Buffer.from(JSON.stringify(body))));
      expect(res.status).toBe(415);
      expect(res.body.message).toContain(`Content-Encoding ${encoding.toLowerCase()}`);
      const [{ count }] = await t.app
        .get(DataSource)
        .query('SELECT count(*)::int AS count FROM messages WHERE provider_message_id = $1', [body.providerMessageId]);
      expect(count).toBe(0);
    });

    it('Content-Encoding identity is the same as none', async () => {
      const res = await t.http().post('/ingest/sms/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).set('Content-Encoding', 'identity').send(sms());
      expect(res.status).toBe(201);
    });

    it('on /api/mcp: 415 as a JSON-RPC error; without a key: 401 first', async () => {
      const zipped = gzipSync(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })));
      const res = await t
        .http()
        .post(MCP_URL)
        .set('Authorization', `Bearer ${s.apiKey}`)
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'gzip')
        .send(zipped);
      expect(res.status).toBe(415);
      expect(res.headers['accept-encoding']).toBe('identity');
      expect(res.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringContaining('Content-Encoding gzip') } });
      const anonymous = await t.http().post(MCP_URL).set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').send(zipped);
      expect(anonymous.status).toBe(401);
    });
  });

  describe(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`, () => {
    const deep = nested(400_000);

    it('400,000 levels: 400 naming the limit on /admin and /ingest, and the service keeps answering', async () => {
      const admin = await t
        .http()
        .post('/admin/orgs')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .set('Content-Type', 'application/json')
        .send(`{"name":"deep","tier":"PRO","extra":${deep}}`);
      expect(admin.status).toBe(400);
      expect(admin.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: `the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
        field: 'body',
      });
      const ingest = await t
        .http()
        .post('/ingest/sms/inbound')
        .set('Authorization', `Bearer ${INGEST_TOKEN}`)
        .set('Content-Type', 'application/json')
        .send(`{"to":"${phone}","from":"+15550003333","body":"x","providerMessageId":"deep","media":${deep}}`);
      expect(ingest.status).toBe(400);
      expect(ingest.body.message).toContain(String(MAX_JSON_DEPTH));
      expect((await t.http().get('/health')).status).toBe(200);
    });

    it('400,000 levels in tools/call arguments: HTTP 400 with -32700 naming the limit', async () => {
      const res = await t
        .http()
        .post(MCP_URL)
        .set('Authorization', `Bearer ${s.apiKey}`)
        .set('Content-Type', 'application/json')
        .send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_webhooks","arguments":{"x":${deep}}}}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.stringContaining(`deeper than ${MAX_JSON_DEPTH} levels`) } });
    });

    it(`exactly ${MAX_JSON_DEPTH} levels is served; ${MAX_JSON_DEPTH + 1} is refused`, async () => {
      // The request object and params are 2 levels; the rest is arrays.
      const at = (depth: number) => `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":${nested(depth - 2)}}}`;
      const ok = await t.http().post(MCP_URL).set('Authorization', `Bearer ${s.apiKey}`).set('Content-Type', 'application/json').send(at(MAX_JSON_DEPTH));
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
      const over = await t
        .http()
        .post(MCP_URL)
        .set('Authorization', `Bearer ${s.apiKey}`)
        .set('Content-Type', 'application/json')
        .send(at(MAX_JSON_DEPTH + 1));
      expect(over.status).toBe(400);
      expect(over.body.error.code).toBe(-32700);
      const rest = await t
        .http()
        .post('/admin/orgs')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .set('Content-Type', 'application/json')
        .send(`{"name":"n","tier":"PRO","extra":${nested(MAX_JSON_DEPTH - 1)}}`);
      expect(rest.status).toBe(400);
      expect(rest.body.message).toMatch(/extra should not exist/);
    });
  });

  describe('REST JSON bodies as before', () => {
    const post = (body: string | Buffer, type = 'application/json') =>
      t.http().post('/admin/orgs').set('Authorization', `Bearer ${ADMIN_TOKEN}`).set('Content-Type', type).send(body);

    it.each(['{"name":', '{"name":"x",}', "{'name':'x'}", '"a string"', '42', '   '])('%j is 400 "not valid JSON"', async (body) => {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message: 'the request body is not valid JSON', field: 'body' });
    });

    it('a body over 1 MB is 413 naming the limit', async () => {
      const res = await post(JSON.stringify({ name: 'x'.repeat(MB), tier: 'PRO' }));
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ statusCode: 413, error: 'Payload Too Large', message: `the request body is larger than ${MB} bytes`, field: 'body' });
    });

    it('a JSON charset other than UTF-8 is 415', async () => {
      const res = await post(JSON.stringify({ name: 'x', tier: 'PRO' }), 'application/json; charset=latin1');
      expect(res.status).toBe(415);
      expect(res.body.message).toMatch(/UTF-8/);
    });

    it('a valid body is served, with or without charset=utf-8', async () => {
      expect((await post(JSON.stringify({ name: 'plain', tier: 'PRO' }))).status).toBe(201);
      expect((await post(JSON.stringify({ name: 'utf8', tier: 'PRO' }), 'application/json; charset=UTF-8')).status).toBe(201);
    });
  });
});

describe('request bodies: memory budget and timeouts', () => {
  let t: TestApp;
  let port: number;
  let s: Session;
  const LIMIT = 20 * MB;
  beforeAll(async () => {
    t = await createTestApp({
      env: {
        MCP_MAX_BODY_BYTES: String(LIMIT),
        HTTP_BODY_BUDGET_BYTES: String(32 * MB),
        HTTP_REQUEST_TIMEOUT_MS: '4000',
        HTTP_HEADERS_TIMEOUT_MS: '1000',
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000',
      },
    });
    port = await listen(t.app.getHttpServer());
    s = await createSession(t.admin);
  });
  afterAll(async () => {
    await t.close();
  });

  /** Opens a connection and declares a 20 MB MCP body (with `headers`), sending only `send` bytes of it. */
  async function declareLarge(send: number, headers: Record<string, string> = {}): Promise<RawConnection> {
    const c = await RawConnection.open(port);
    c.head('POST', MCP_URL, { 'Content-Type': 'application/json', 'Content-Length': LIMIT, Authorization: `Bearer ${s.apiKey}`, ...headers });
    if (send) c.write(Buffer.alloc(send, 0x20));
    return c;
  }

  /** Sends a whole 20 MB body (spaces around a bad token): admitted, it is read and answered -32700. */
  async function sendLarge(): Promise<{ status: number; body: string } | null> {
    const c = await declareLarge(0);
    try {
      c.write(Buffer.concat([Buffer.alloc(LIMIT - 1, 0x20), Buffer.from('x')]));
      return await c.response(15_000);
    } finally {
      c.destroy();
    }
  }

  it('a body that does not fit the budget now gets 503 with Retry-After; small requests still pass', async () => {
    // The server answers the holder's Expect with 100 Continue once it is authenticated and its
    // 20 of the 32 MB are reserved (until it finishes): then, not after some time, the budget is short.
    const holder = await declareLarge(0, { Expect: '100-continue' });
    try {
      expect((await holder.response(15_000))?.status).toBe(100);
      holder.write(Buffer.alloc(1024, 0x20));
      expect(holder.isClosed).toBe(false);
      const refused = await declareLarge(1024);
      const res = await refused.response(5000);
      refused.destroy();
      expect(res?.status).toBe(503);
      expect(res!.headers['retry-after']).toBe('1');
      expect(res!.headers.connection).toBe('close');
      expect(JSON.parse(res!.body)).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringContaining('retry shortly') } });

      const small = await t.http().post(MCP_URL).set('Authorization', `Bearer ${s.apiKey}`).send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      expect(small.status).toBe(200);
      expect(small.body.result.tools.length).toBeGreaterThan(0);
    } finally {
      holder.destroy();
    }
    // The holder's share comes back when its connection ends.
    const { answer } = await waitUntil(
      async () => {
        const sent = await sendLarge();
        return sent?.status !== 503 && { answer: sent };
      },
      'a large body to be read again (not 503)',
      { timeoutMs: 5000, intervalMs: 100 },
    );
    expect(answer?.status).toBe(400);
    expect(JSON.parse(answer!.body).error.code).toBe(-32700);
  });

  it('a client that hangs up while its key is looked up gives its budget share back', async () => {
    const reserving = jest.spyOn(BodyBudget.prototype, 'tryReserve');
    try {
      await hangUpWhileLocked(t.app, 'api_keys', '%SELECT k.key_hash, k.id AS key_id%', async () => {
        const c = await declareLarge(0);
        return () => c.destroy();
      });
      await settled(reserving, 1, 'the hung-up request to reserve its 20 of the 32 MB');
    } finally {
      reserving.mockRestore();
    }
    // Its 20 MB came back: another 20 MB body is read (and answered -32700), not refused with 503.
    const answer = await sendLarge();
    expect(answer?.status).toBe(400);
    expect(JSON.parse(answer!.body).error.code).toBe(-32700);
  });

  it('a client that sends its headers too slowly gets 408 and is disconnected (HTTP_HEADERS_TIMEOUT_MS)', async () => {
    const c = await RawConnection.open(port);
    try {
      c.write('POST /api/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      const dripping = setInterval(() => c.write('X-Slow: 1\r\n'), 200);
      const closed = await c.closedWithin(4000);
      clearInterval(dripping);
      expect(closed).toBe(true);
      expect((await c.response(100))?.status).toBe(408);
    } finally {
      c.destroy();
    }
  });

  it('an authenticated client that trickles its body gets 408 (HTTP_REQUEST_TIMEOUT_MS) and its budget share comes back', async () => {
    const c = await declareLarge(0);
    try {
      const trickling = c.trickle(LIMIT, 1024, 100, 0x20);
      expect(await c.closedWithin(9000)).toBe(true);
      await trickling;
      expect(c.sent).toBeLessThan(LIMIT);
      expect((await c.response(100))?.status).toBe(408);
    } finally {
      c.destroy();
    }
    const answer = await sendLarge();
    expect(answer?.status).toBe(400);
  });

  it('an idle keep-alive connection is closed (HTTP_KEEP_ALIVE_TIMEOUT_MS)', async () => {
    const c = await RawConnection.open(port);
    try {
      c.head('GET', '/health', {});
      const res = await c.response(5000);
      expect(res?.status).toBe(200);
      expect(res!.headers['keep-alive']).toBe('timeout=1');
      expect(await c.closedWithin(4000)).toBe(true);
    } finally {
      c.destroy();
    }
  });
});
