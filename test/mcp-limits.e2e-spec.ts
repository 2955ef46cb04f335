import { createSession, Session } from './support/session';
import { createMcpTestApp, hookUrl, mcpPost, McpTestApp, rpcError } from './support/mcp';

/**
 * Issue 10, section 3: one API key must not stall everyone. A batch is capped and runs a few
 * messages at a time.
 */
const MAX_BATCH = 50;
const BATCH_CONCURRENCY = 4;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
    const probe = slowLookups(t, 40);

    const batch = mcpPost(t, s.apiKey).send(registerBatch(MAX_BATCH)).then((res) => res);
    for (let i = 0; i < 200 && probe.starts.length < 8; i++) await sleep(5);
    expect(probe.starts.length).toBeGreaterThanOrEqual(8);
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
      error: { code: -32001, message: expect.stringMatching(/^the API key was revoked while this batch ran: \d+ of its 50 messages had started, the others did not run$/) },
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
    await sleep(200);
    expect(await endpoints()).toBe(rows);

    // And the key stays refused.
    const next = await mcpPost(t, s.apiKey).send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(next.status).toBe(401);
  });
});
