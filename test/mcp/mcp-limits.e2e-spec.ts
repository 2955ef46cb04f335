import { request as httpRequest } from 'node:http';
import { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Logger } from '@nestjs/common';
import { PrivateRedis } from '../reliability/support/stack';
import { createSession, Session } from '../support/session';
import { createMcpTestApp, hookUrl, mcpPost, McpTestApp, rpc, rpcError } from '../support/mcp';
import { sleep, waitUntil } from '../support/wait';

/**
 * Issue 10, sections 3 and 5: one API key must not stall everyone. A batch is capped and runs a
 * few messages at a time, a revoked key stops its batch, and each key has a rate limit (counted
 * in Redis) and a cap on calls running at once.
 */
const MAX_BATCH = 50;
const BATCH_CONCURRENCY = 4;

interface LookupProbe {
  inFlight: number;
  maxInFlight: number;
  /** When each lookup began (ms since the epoch). */
  starts: number[];
}

/**
 * Makes every host lookup of the app's URL policy take `ms`, and records how many run at once:
 * register_webhook looks its URL's host up once, so this counts the batch messages in flight.
 */
function slowLookups(t: McpTestApp, ms: number): LookupProbe {
  const original = t.resolver.resolve.bind(t.resolver);
  const probe: LookupProbe = { inFlight: 0, maxInFlight: 0, starts: [] };
  t.resolver.resolve = async (host: string) => {
    probe.inFlight += 1;
    probe.maxInFlight = Math.max(probe.maxInFlight, probe.inFlight);
    probe.starts.push(Date.now());
    try {
      await sleep(ms);
      return await original(host);
    } finally {
      probe.inFlight -= 1;
    }
  };
  return probe;
}

function registerBatch(count: number, firstId = 1): object[] {
  return Array.from({ length: count }, (_, i) => ({
    jsonrpc: '2.0',
    id: firstId + i,
    method: 'tools/call',
    params: { name: 'register_webhook', arguments: { url: hookUrl(), events: ['message.received'] } },
  }));
}

describe('MCP batches: a size cap and bounded concurrency', () => {
  let t: McpTestApp;
  let s: Session;
  const endpointsOf = async (userId: string) =>
    Number((await t.db.query(`SELECT count(*)::int AS n FROM webhook_endpoints WHERE user_id = $1`, [userId]))[0].n);

  beforeAll(async () => {
    t = await createMcpTestApp({ MCP_MAX_BATCH: String(MAX_BATCH), MCP_BATCH_CONCURRENCY: String(BATCH_CONCURRENCY) });
    s = await createSession(t.admin, { tier: 'POWER' });
    const grant = await t.admin.put(`/admin/orgs/${s.orgId}/endpoint-cap`, { maxEndpointsPerUser: 500, reason: 'batch tests' });
    expect(grant.status).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a batch over MCP_MAX_BATCH with 400 and -32600 naming the limit and the size, and runs none of it', async () => {
    const probe = slowLookups(t, 0);
    const res = await mcpPost(t, s.apiKey).send(registerBatch(MAX_BATCH + 1));
    expect(rpcError(res)).toEqual({
      status: 400,
      id: null,
      code: -32600,
      message: `a batch may hold at most ${MAX_BATCH} messages (MCP_MAX_BATCH); this one holds ${MAX_BATCH + 1}, and none of them ran`,
    });
    expect(Array.isArray(res.body)).toBe(false);
    expect(probe.starts).toHaveLength(0);
    expect(await endpointsOf(s.userId)).toBe(0);
  });

  it('runs a batch at the cap a few messages at a time and answers every message, in order', async () => {
    const probe = slowLookups(t, 30);
    const before = await endpointsOf(s.userId);
    const res = await mcpPost(t, s.apiKey).send(registerBatch(MAX_BATCH, 1000));
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(MAX_BATCH);
    expect((res.body as Array<{ id: number }>).map((a) => a.id)).toEqual(Array.from({ length: MAX_BATCH }, (_, i) => 1000 + i));
    for (const answer of res.body as Array<{ result?: { isError?: boolean; structuredContent?: { secret?: string } } }>) {
      expect(answer.result?.isError).toBeUndefined();
      expect(answer.result?.structuredContent?.secret).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(probe.starts).toHaveLength(MAX_BATCH);
    expect(probe.maxInFlight).toBe(BATCH_CONCURRENCY);
    expect(await endpointsOf(s.userId)).toBe(before + MAX_BATCH);
  });
});

describe('MCP batches: a key revoked while its batch runs', () => {
  let t: McpTestApp;
  beforeAll(async () => {
    t = await createMcpTestApp({ MCP_MAX_BATCH: String(MAX_BATCH), MCP_BATCH_CONCURRENCY: String(BATCH_CONCURRENCY) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('starts no message once the revoke has answered, and answers 401 with a JSON-RPC error', async () => {
    const s = await createSession(t.admin, { tier: 'POWER' });
    expect((await t.admin.put(`/admin/orgs/${s.orgId}/endpoint-cap`, { maxEndpointsPerUser: 500, reason: 'revoke test' })).status).toBe(200);
    const endpoints = async () => Number((await t.db.query(`SELECT count(*)::int AS n FROM webhook_endpoints WHERE user_id = $1`, [s.userId]))[0].n);
    const probe = slowLookups(t, 80);

    const batch = mcpPost(t, s.apiKey)
      .send(registerBatch(MAX_BATCH))
      .then((res) => res);
    await waitUntil(
      () => probe.starts.length >= 8,
      () => `8 messages of the batch started (${probe.starts.length})`,
      { intervalMs: 5 },
    );
    expect((await t.admin.delete(`/admin/api-keys/${s.apiKeyId}`)).status).toBe(204);
    const revokedAt = Date.now();
    const rowsAtRevoke = await endpoints();

    const res = await batch;
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="messaging-sync", error="invalid_token"');
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -32001,
        message: expect.stringMatching(/^the API key was revoked while this batch ran: \d+ of its 50 messages had started, the others did not run$/),
      },
    });
    const started = Number(/: (\d+) of/.exec(res.body.error.message)![1]);
    // Every message that started looked its host up once; none of them after the revoke answered.
    expect(probe.starts).toHaveLength(started);
    expect(probe.starts.filter((at) => at > revokedAt)).toEqual([]);
    expect(started).toBeLessThan(MAX_BATCH);
    // Rows only from the messages that started; those still in flight at the revoke (at most
    // MCP_BATCH_CONCURRENCY) finished after it.
    const rows = await endpoints();
    expect(rows).toBe(started);
    expect(rows - rowsAtRevoke).toBeLessThanOrEqual(BATCH_CONCURRENCY);

    // And the key stays refused.
    const next = await mcpPost(t, s.apiKey).send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(next.status).toBe(401);
  });
});

function pingBatch(count: number): object[] {
  return Array.from({ length: count }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'ping' }));
}

/** The answer of a request refused by a per-key limit: 429, Retry-After, one JSON-RPC -32000 error. */
function expectRefused(res: { status: number; headers: Record<string, string>; body: unknown }, message: RegExp): number {
  expect(res.status).toBe(429);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const retryAfter = Number(res.headers['retry-after']);
  expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
  expect(res.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: expect.stringMatching(message) } });
  expect((res.body as { error: { message: string } }).error.message).toContain(`retry after ${retryAfter} s`);
  return retryAfter;
}

describe('MCP per-key limits: calls per window and calls at once', () => {
  // Long enough that the calls of a test fit in one window even on a busy machine.
  const WINDOW = 3;
  const RATE = 20;
  const KEY_CONCURRENCY = 3;
  let t: McpTestApp;
  const poweredSession = async () => {
    const s = await createSession(t.admin, { tier: 'POWER' });
    expect((await t.admin.put(`/admin/orgs/${s.orgId}/endpoint-cap`, { maxEndpointsPerUser: 500, reason: 'limit tests' })).status).toBe(200);
    return s;
  };
  const endpointsOf = async (userId: string) =>
    Number((await t.db.query(`SELECT count(*)::int AS n FROM webhook_endpoints WHERE user_id = $1`, [userId]))[0].n);

  beforeAll(async () => {
    t = await createMcpTestApp({
      MCP_MAX_BATCH: '10',
      MCP_BATCH_CONCURRENCY: '4',
      MCP_RATE_LIMIT: String(RATE),
      MCP_RATE_WINDOW_SECONDS: String(WINDOW),
      MCP_KEY_CONCURRENCY: String(KEY_CONCURRENCY),
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses calls over MCP_RATE_LIMIT with 429 and Retry-After, runs none of them, and admits the key again after the window', async () => {
    const a = await poweredSession();
    const b = await createSession(t.admin);
    const probe = slowLookups(t, 0);
    for (let i = 0; i < RATE - 5; i++) expect((await rpc(t, a.apiKey, 'ping')).status).toBe(200);

    // A batch of 10 counts as 10 calls: 15 + 10 is over 20, so none of it runs.
    const refused = await mcpPost(t, a.apiKey).send(registerBatch(10));
    const retryAfter = expectRefused(
      refused,
      new RegExp(`^rate limit reached: this API key may make ${RATE} calls per ${WINDOW} s \\(MCP_RATE_LIMIT\\); retry after \\d+ s$`),
    );
    expect(retryAfter).toBeLessThanOrEqual(WINDOW);
    expect(probe.starts).toHaveLength(0);
    expect(await endpointsOf(a.userId)).toBe(0);
    // Refused calls count too: the key stays refused for the rest of the window.
    expect((await rpc(t, a.apiKey, 'ping')).status).toBe(429);

    // Another key (another org) is not affected.
    expect((await rpc(t, b.apiKey, 'ping')).status).toBe(200);
    expect((await mcpPost(t, b.apiKey).send(pingBatch(10))).status).toBe(200);

    await sleep(retryAfter * 1000 + 100);
    const again = await mcpPost(t, a.apiKey).send(registerBatch(10));
    expect(again.status).toBe(200);
    expect(again.body).toHaveLength(10);
    expect(await endpointsOf(a.userId)).toBe(10);
  });

  it('makes the official SDK client reject with a StreamableHTTPError 429 whose message says when to retry', async () => {
    const s = await createSession(t.admin);
    const server = t.app.getHttpServer();
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const client = new Client({ name: 'e2e-limits', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/api/mcp`), { requestInit: { headers: { Authorization: `Bearer ${s.apiKey}` } } }),
    ); // initialize + notifications/initialized: 2 calls
    try {
      let refused: unknown;
      for (let i = 0; i < 3 * RATE && refused === undefined; i++) {
        refused = await client.callTool({ name: 'list_webhooks', arguments: {} }).then(
          (result) => expect(result.isError).toBeFalsy(),
          (error: unknown) => error,
        );
      }
      expect(refused).toBeInstanceOf(StreamableHTTPError);
      expect((refused as StreamableHTTPError).code).toBe(429);
      expect((refused as Error).message).toMatch(
        new RegExp(`rate limit reached: this API key may make ${RATE} calls per ${WINDOW} s \\(MCP_RATE_LIMIT\\); retry after \\d+ s`),
      );
    } finally {
      await client.close();
    }
  });

  it('refuses a call beyond MCP_KEY_CONCURRENCY running at once with 429 right away, and leaves other keys alone', async () => {
    const a = await poweredSession();
    const b = await poweredSession();
    const probe = slowLookups(t, 400);
    // A batch would run 4 at a time, but the key may only have 3 calls running.
    const batch = mcpPost(t, a.apiKey)
      .send(registerBatch(6))
      .then((res) => res);
    await waitUntil(
      () => probe.inFlight === KEY_CONCURRENCY,
      () => `${KEY_CONCURRENCY} calls in flight (${probe.inFlight})`,
      { intervalMs: 5 },
    );

    const busy = await rpc(t, a.apiKey, 'ping');
    expect(probe.inFlight).toBeGreaterThan(0); // answered while the batch still ran, not after it
    expectRefused(
      busy,
      new RegExp(
        `^too many calls at once: this API key may have ${KEY_CONCURRENCY} calls running at the same time \\(MCP_KEY_CONCURRENCY\\); retry after 1 s$`,
      ),
    );
    expect(busy.headers['retry-after']).toBe('1');

    // Another key runs meanwhile.
    const other = await mcpPost(t, b.apiKey).send(registerBatch(1));
    expect(other.status).toBe(200);
    expect(other.body[0].result.structuredContent.secret).toMatch(/^[0-9a-f]{64}$/);

    const done = await batch;
    expect(done.status).toBe(200);
    expect(done.body).toHaveLength(6);
    expect(probe.maxInFlight).toBe(KEY_CONCURRENCY + 1); // a's 3, and b's 1 while they ran
    expect(await endpointsOf(a.userId)).toBe(6);
    // The slots are given back.
    expect((await rpc(t, a.apiKey, 'ping')).status).toBe(200);
  });
});

describe('MCP per-key limits: a client that hangs up', () => {
  let t: McpTestApp;
  beforeAll(async () => {
    t = await createMcpTestApp({ MCP_MAX_BATCH: '10', MCP_BATCH_CONCURRENCY: '4', MCP_KEY_CONCURRENCY: '3' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('keeps its slots until the calls it started are done', async () => {
    const s = await createSession(t.admin, { tier: 'POWER' });
    const probe = slowLookups(t, 500);
    const server = t.app.getHttpServer();
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const body = JSON.stringify(registerBatch(3));
    const hungUp = httpRequest({
      host: '127.0.0.1',
      port,
      path: '/api/mcp',
      method: 'POST',
      headers: { Authorization: `Bearer ${s.apiKey}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    });
    hungUp.on('error', () => undefined);
    hungUp.end(body);
    await waitUntil(
      () => probe.inFlight === 3,
      () => `3 calls in flight (${probe.inFlight})`,
      { intervalMs: 5 },
    );
    const connections = () =>
      new Promise<number>((resolve, reject) => server.getConnections((error: Error | null, n: number) => (error ? reject(error) : resolve(n))));
    const withClient = await connections();
    hungUp.destroy();
    await waitUntil(async () => (await connections()) < withClient, 'the server to see the client hang up');

    // The batch still runs 3 calls: the key has no slot free although its client is gone.
    expect((await rpc(t, s.apiKey, 'ping')).status).toBe(429);
    // Once they are done, the key has its slots back.
    await waitUntil(() => probe.inFlight === 0, 'the 3 calls to end', { intervalMs: 10 });
    await waitUntil(async () => (await rpc(t, s.apiKey, 'ping')).status === 200, 'a ping to be admitted again');
  });
});

describe('MCP per-key limits when Redis cannot count', () => {
  let redis: PrivateRedis;
  let t: McpTestApp;
  const LIMIT = 10;
  beforeAll(async () => {
    redis = await PrivateRedis.start();
    t = await createMcpTestApp({ REDIS_URL: redis.url, MCP_MAX_BATCH: '10', MCP_RATE_LIMIT: String(LIMIT), MCP_RATE_WINDOW_SECONDS: '60' });
  });
  afterAll(async () => {
    await t?.close();
    await redis?.stop();
  });

  const callsUntilRefused = async (key: string, most: number): Promise<number> => {
    for (let i = 0; i < most; i++) {
      const res = await rpc(t, key, 'ping');
      if (res.status === 429) return i;
      expect(res.status).toBe(200);
    }
    return most;
  };

  it('lets calls through and logs a warning while Redis is down or stalled, and limits again once it answers', async () => {
    const counted = await createSession(t.admin);
    expect(await callsUntilRefused(counted.apiKey, LIMIT + 5)).toBe(LIMIT);

    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      const open = await createSession(t.admin);
      await redis.stop();
      expect(await callsUntilRefused(open.apiKey, LIMIT + 5)).toBe(LIMIT + 5);
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/^rate limits are not enforced: Redis did not answer the mcp check/));

      // Redis answers again (empty, as after a restart without persistence): the limit is back.
      await redis.start();
      const back = await createSession(t.admin);
      await waitUntil(async () => (await t.http().get('/ready')).status === 200, 'the app to see Redis again', { intervalMs: 100 });
      expect(await callsUntilRefused(back.apiKey, LIMIT + 5)).toBe(LIMIT);

      // A stalled Redis (the process stopped, its socket open) lets calls through after 250 ms.
      const stalled = await createSession(t.admin);
      redis.child!.kill('SIGSTOP');
      try {
        expect(await callsUntilRefused(stalled.apiKey, LIMIT + 2)).toBe(LIMIT + 2);
      } finally {
        redis.child!.kill('SIGCONT');
      }
    } finally {
      warn.mockRestore();
    }
  });
});
