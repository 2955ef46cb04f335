import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Client as PgClient } from 'pg';
import { Pool } from 'undici';
import { fillLargeOrg, LARGE_ORG_WORDS, largeOrgId } from '../../test/support/large-org';
import { connectOverHttp } from '../../test/support/oauth-http';
import { seedLineWithEndpoints, ServiceApi } from '../lib/api';
import { Child, startBareApp, stopChild } from '../lib/children';
import { RunContext, Scenario3Result, startScenarioService, ToolLevelResult, windows } from '../lib/context';
import { Monitor } from '../lib/monitor';
import { Call, drive, rawToolCall } from '../lib/tool-load';
import { fmtMs, fmtNum, log, percentilesOf, resetProgress } from '../lib/util';

/** The per-key limits scenario 3 runs with: as many calls at once as its highest level, no practical rate limit. */
export const s3LimitsEnv = (levels: number[]): Record<string, string> => ({
  MCP_KEY_CONCURRENCY: String(Math.max(8, ...levels)),
  MCP_RATE_LIMIT: '100000000',
});

/** The hot mix's conversations: threads on the scenario's line, 10 messages each (test/support/large-org.ts). */
const HOT_MIX_THREADS = 2_000;
const HOT_MIX_MESSAGES_PER_THREAD = 10;

/**
 * The agent's hot mix, one call in five of each: list_threads (the first page), get_thread,
 * get_message, search_messages (a word in 0.1 % of the messages, or one in 10 %, in turn) and
 * reply_to_thread (an SMS reply, which the worker then hands to the carrier).
 */
async function fillHotMix(ctx: RunContext, orgId: string, line: { id: string; address: string }, userId: string) {
  const db = new PgClient({ connectionString: ctx.databaseUrl });
  await db.connect();
  try {
    await fillLargeOrg(db, {
      orgId,
      lines: [{ ...line, type: 'PHONE_NUMBER' }],
      threads: HOT_MIX_THREADS,
      messagesPerThread: HOT_MIX_MESSAGES_PER_THREAD,
      userId,
    });
    await db.query('VACUUM messages, threads');
  } finally {
    await db.end();
  }
  const thread = (i: number) => largeOrgId(orgId, 'thread', (i * 7919) % HOT_MIX_THREADS);
  const messages = HOT_MIX_THREADS * HOT_MIX_MESSAGES_PER_THREAD;
  return {
    call(i: number): [string, Record<string, unknown>] {
      switch (i % 5) {
        case 0:
          return ['list_threads', {}];
        case 1:
          return ['get_thread', { threadId: thread(i) }];
        case 2:
          return ['get_message', { messageId: largeOrgId(orgId, 'message', (i * 104729) % messages) }];
        case 3:
          return ['search_messages', { query: i % 2 === 0 ? LARGE_ORG_WORDS.perMille(i) : LARGE_ORG_WORDS.tenPercent(i) }];
        default:
          return ['reply_to_thread', { threadId: thread(i), body: `Thanks, noted (${i})` }];
      }
    },
  };
}

/**
 * Scenario 3, the tool endpoint: tools/call list_webhooks and get_webhook (alternating) at
 * increasing concurrency through the official MCP SDK client (one Client per concurrent caller)
 * and through raw HTTP (undici), with the user's API key and then with an OAuth access token of
 * the same user and access; then the agent's hot mix on conversations (fillHotMix), raw HTTP;
 * the limit is a bare Nest app doing the webhook read (bench/bare-app.ts).
 */
export async function scenario3(ctx: RunContext): Promise<Scenario3Result> {
  const { options } = ctx;
  const w = windows(options);
  log(`\nScenario 3: tool endpoint (levels ${options.levels.join(', ')}; ${w.toolLevel / 1000}s per level and client)`);
  // One key drives every level, up to c=64: its limits are set out of the way (each call still goes
  // through the limiter, so its cost is measured), since this measures throughput, not the limits.
  const svc = await startScenarioService(ctx, 's3', s3LimitsEnv(options.levels));
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  let bare: Child | undefined;
  const levels: ToolLevelResult[] = [];
  try {
    const urls = Array.from({ length: 10 }, (_, i) => ctx.receiver.url(i, `/ok/s3-${i}`));
    const seeded = await seedLineWithEndpoints(api, { label: 's3', users: 1, urls, mode: 'concise' });
    const user = seeded.users[0];
    const endpointIds = user.endpoints.map((e) => e.id);

    const started = await startBareApp(ctx.root, ctx.databaseUrl);
    bare = started.child;
    const bareUrl = started.url;
    // The bare read must answer the same endpoints as the tool.
    const bareList = (await (await fetch(`${bareUrl}/webhooks?userId=${user.userId}`)).json()) as { endpoints: unknown[] };
    const toolList = await api.tool<{ endpoints: unknown[] }>(user.apiKey, 'list_webhooks', {});
    if (bareList.endpoints.length !== toolList.endpoints.length) {
      throw new Error(`bare app lists ${bareList.endpoints.length} endpoints, the tool ${toolList.endpoints.length}`);
    }

    // The conversations the hot mix reads and answers: the line filled with HOT_MIX_THREADS threads.
    const hotMix = await fillHotMix(ctx, seeded.orgId, seeded.line, user.userId);

    // The same user's OAuth access token (DCR, sign-in, consent to All channels and every permission, as the key has).
    const connected = await connectOverHttp({ url: svc.baseUrl, origin: svc.baseUrl }, await api.signInToken(user.userId), {
      permissions: ['read', 'send', 'webhooks'],
    });
    const accessToken = connected.tokens.access_token;

    const procs = { api: svc.api.pid, worker: svc.worker.pid, 'bare app': bare.pid };
    for (const level of options.levels) {
      // Bare Nest route: the limit.
      {
        resetProgress();
        const pool = new Pool(bareUrl, { connections: level, keepAliveTimeout: 30_000 });
        const call: Call = async (i) => {
          const path = i % 2 === 0 ? `/webhooks?userId=${user.userId}` : `/webhooks/${endpointIds[i % endpointIds.length]}?userId=${user.userId}`;
          const res = await pool.request({ method: 'GET', path });
          const text = await res.body.text();
          if (res.statusCode !== 200) throw new Error(`bare ${res.statusCode}`);
          JSON.parse(text);
        };
        const r = await drive(`S3 bare Nest   c=${level}`, level, Array(level).fill(call), w.toolWarmup, w.toolLevel, new Monitor(ctx.database, procs));
        await pool.close();
        levels.push({ concurrency: level, mode: 'bare', ...r });
        log(
          `  S3 c=${String(level).padStart(2)} bare Nest route: ${fmtNum(r.reqPerSec)} req/s, p99 ${fmtMs(r.latency.p99)}${r.errors ? `, ${r.errors} errors (${r.lastError})` : ''}`,
        );
      }
      // Raw HTTP JSON-RPC: with the API key, then with the OAuth access token (issue 31: within 5 %).
      for (const [mode, bearer, name] of [
        ['raw', user.apiKey, 'raw HTTP'],
        ['raw-oauth', accessToken, 'raw HTTP, OAuth'],
      ] as const) {
        resetProgress();
        const pool = new Pool(svc.baseUrl, { connections: level, keepAliveTimeout: 30_000 });
        let id = 1;
        const call: Call = (i) =>
          i % 2 === 0
            ? rawToolCall(pool, bearer, id++, 'list_webhooks', {})
            : rawToolCall(pool, bearer, id++, 'get_webhook', { endpointId: endpointIds[i % endpointIds.length] });
        const r = await drive(`S3 ${name.padEnd(15)} c=${level}`, level, Array(level).fill(call), w.toolWarmup, w.toolLevel, new Monitor(ctx.database, procs));
        await pool.close();
        levels.push({ concurrency: level, mode, ...r });
        log(
          `  S3 c=${String(level).padStart(2)} ${`${name}:`.padEnd(17)}${fmtNum(r.reqPerSec)} req/s, p99 ${fmtMs(r.latency.p99)}${r.errors ? `, ${r.errors} errors (${r.lastError})` : ''}`,
        );
      }
      // The agent's hot mix, raw HTTP with the API key: the tools an agent calls on its conversations.
      {
        resetProgress();
        const pool = new Pool(svc.baseUrl, { connections: level, keepAliveTimeout: 30_000 });
        let id = 1;
        // Each tool's own durations (warm-up included), to tell which one the mix waits on.
        const durations = new Map<string, number[]>();
        const call: Call = async (i) => {
          const [name, args] = hotMix.call(i);
          const t0 = performance.now();
          await rawToolCall(pool, user.apiKey, id++, name, args);
          const own = durations.get(name) ?? [];
          own.push(performance.now() - t0);
          durations.set(name, own);
        };
        const r = await drive(`S3 hot mix      c=${level}`, level, Array(level).fill(call), w.toolWarmup, w.toolLevel, new Monitor(ctx.database, procs));
        await pool.close();
        const perTool = [...durations].map(([tool, ms]) => ({ tool, calls: ms.length, latency: percentilesOf(ms) }));
        levels.push({ concurrency: level, mode: 'hot', ...r, perTool });
        log(
          `  S3 c=${String(level).padStart(2)} hot mix (raw):  ${fmtNum(r.reqPerSec)} req/s, p99 ${fmtMs(r.latency.p99)}${r.errors ? `, ${r.errors} errors (${r.lastError})` : ''} (` +
            perTool.map((t) => `${t.tool} p50 ${fmtMs(t.latency.p50)}`).join(', ') +
            ')',
        );
      }
      // The official MCP SDK client, one Client (and transport) per concurrent caller.
      {
        resetProgress();
        const clients: Client[] = [];
        for (let c = 0; c < level; c += 1) {
          const client = new Client({ name: `bench-${c}`, version: '1.0.0' });
          const transport = new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/api/mcp`), {
            requestInit: { headers: { Authorization: `Bearer ${user.apiKey}` } },
            fetch: ownAbortSignal,
          });
          await client.connect(transport);
          await client.listTools(); // as an agent does; the SDK then checks each result against its outputSchema
          clients.push(client);
        }
        const calls: Call[] = clients.map((client) => async (i: number) => {
          const result =
            i % 2 === 0
              ? await client.callTool({ name: 'list_webhooks', arguments: {} })
              : await client.callTool({ name: 'get_webhook', arguments: { endpointId: endpointIds[i % endpointIds.length] } });
          if (result.isError || !result.structuredContent) throw new Error(`tool failed: ${JSON.stringify(result).slice(0, 200)}`);
        });
        const r = await drive(`S3 MCP SDK     c=${level}`, level, calls, w.toolWarmup, w.toolLevel, new Monitor(ctx.database, procs));
        await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
        levels.push({ concurrency: level, mode: 'sdk', ...r });
        log(
          `  S3 c=${String(level).padStart(2)} MCP SDK client:  ${fmtNum(r.reqPerSec)} req/s, p99 ${fmtMs(r.latency.p99)}${r.errors ? `, ${r.errors} errors (${r.lastError})` : ''}`,
        );
      }
      svc.assertAlive();
    }
    return { endpointsListed: endpointIds.length, levels };
  } finally {
    if (bare) await stopChild(bare, 3000);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}

/**
 * The SDK's transport hands one connection-wide AbortSignal to every fetch, and Node's fetch
 * leaves a listener on it per request until garbage collection: thousands in a 10 s level, with a
 * MaxListenersExceededWarning for each and a client that slows as they pile up. Each request gets
 * a signal of its own here, tied to the shared one until the answer's headers arrive (the bench
 * never aborts a body it is reading, so the rest need not be tied).
 */
const ownAbortSignal: FetchLike = async (url, init) => {
  const shared = init?.signal;
  if (!shared) return fetch(url, init);
  const own = new AbortController();
  const abort = () => own.abort(shared.reason);
  if (shared.aborted) abort();
  else shared.addEventListener('abort', abort, { once: true });
  try {
    return await fetch(url, { ...init, signal: own.signal });
  } finally {
    shared.removeEventListener('abort', abort);
  }
};
