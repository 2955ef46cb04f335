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
