import { Client as PgClient } from 'pg';
import { Pool } from 'undici';
import { fillLargeOrg, largeOrgId } from '../../test/support/large-org';
import { seedLineWithEndpoints, ServiceApi } from '../lib/api';
import { Child, startSdkPeer, stopProfiled } from '../lib/children';
import { EraPath, EraPathResult, RunContext, Scenario10Result, startScenarioService } from '../lib/context';
import { Monitor } from '../lib/monitor';
import { Call, runCalls } from '../lib/tool-load';
import { fmtMs, fmtNum, log, percentilesOf, resetProgress } from '../lib/util';
import { s3LimitsEnv } from './s3-tools';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const CLIENT_INFO = { name: 'bench-s10', version: '1.0.0' };
const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
};

/** Threads on the scenario's line (ten messages each) for get_thread to read one of. */
const THREADS = 200;

/** The four paths, in the order of the first round (each later round starts one further on). */
export const ERA_PATHS: Array<{ path: EraPath; server: 'service' | 'peer'; era: 'legacy' | 'modern'; label: string }> = [
  { path: 'legacy', server: 'service', era: 'legacy', label: `service, ${LEGACY}` },
  { path: 'modern', server: 'service', era: 'modern', label: `service, ${MODERN}` },
  { path: 'sdk-modern', server: 'peer', era: 'modern', label: `SDK peer, ${MODERN}` },
  { path: 'sdk-legacy', server: 'peer', era: 'legacy', label: `SDK peer, ${LEGACY}` },
];

/** The process that serves each path, as the monitor names it. */
const SERVER_PROCESS = { service: 'api', peer: 'sdk peer' } as const;

const ACCEPT = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/**
 * tools/call as a client of each era sends it: legacy, plain JSON-RPC with the version negotiated
 * by initialize in MCP-Protocol-Version; modern, the `_meta` envelope the official v2 client sends
 * (version, clientInfo, clientCapabilities) and the headers that mirror the body.
 */
function toolCall(era: 'legacy' | 'modern', id: number, name: string, args: object): { headers: Record<string, string>; body: string } {
  if (era === 'legacy') {
    return {
      headers: { ...ACCEPT, 'mcp-protocol-version': LEGACY },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
    };
  }
  const _meta = { [META.protocolVersion]: MODERN, [META.clientInfo]: CLIENT_INFO, [META.clientCapabilities]: {} };
  return {
    headers: { ...ACCEPT, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta } }),
  };
}

interface ToolResult {
  structuredContent: unknown;
  resultType?: string;
}

/** The tool result of answer `id`, from a JSON body or a server-sent event stream; throws on any error. */
function resultOf(text: string, contentType: string, id: number): ToolResult {
  let message: { id?: unknown; result?: ToolResult & { isError?: boolean }; error?: { code: number; message: string } } | undefined;
  if (contentType.startsWith('text/event-stream')) {
    for (const line of text.split('\n')) {
      if (!line.startsWith('data:')) continue;
      const event = JSON.parse(line.slice(5)) as typeof message;
      if (event?.id === id) message = event;
    }
  } else message = JSON.parse(text) as typeof message;
  if (!message) throw new Error(`no answer to request ${id}: ${text.slice(0, 200)}`);
  if (message.error) throw new Error(`JSON-RPC error ${message.error.code}: ${message.error.message}`);
  if (!message.result || message.result.isError || !message.result.structuredContent) throw new Error(`tool failed: ${text.slice(0, 200)}`);
  return message.result;
}

/** One client of a path: an undici Pool to its server and the era it speaks. */
class PathClient {
  private id = 1;
  readonly pool: Pool;

  constructor(
    baseUrl: string,
    private readonly mcpPath: string,
    private readonly era: 'legacy' | 'modern',
    private readonly bearer: string,
    connections: number,
  ) {
    this.pool = new Pool(baseUrl, { connections, keepAliveTimeout: 30_000 });
  }

  /** A legacy client opens with initialize and notifications/initialized, as the v1 SDK's client does; a modern one has no handshake. */
  async handshake(): Promise<void> {
    if (this.era === 'modern') return;
    const id = this.id++;
    const init = await this.post(
      { ...ACCEPT },
      { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: CLIENT_INFO } },
    );
    if (init.status !== 200) throw new Error(`initialize answered ${init.status}: ${init.text.slice(0, 200)}`);
    const notified = await this.post({ ...ACCEPT, 'mcp-protocol-version': LEGACY }, { jsonrpc: '2.0', method: 'notifications/initialized' });
    if (notified.status !== 202) throw new Error(`notifications/initialized answered ${notified.status}: ${notified.text.slice(0, 200)}`);
  }

  /** tools/call; the result and the sizes of the request and the answer. */
  async call(name: string, args: object): Promise<{ result: ToolResult; requestBytes: number; answerBytes: number }> {
    const id = this.id++;
    const request = toolCall(this.era, id, name, args);
    const res = await this.pool.request({
      method: 'POST',
      path: this.mcpPath,
      headers: { ...request.headers, authorization: `Bearer ${this.bearer}` },
      body: request.body,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
    const result = resultOf(text, String(res.headers['content-type'] ?? ''), id);
    if (this.era === 'modern' && result.resultType !== 'complete') throw new Error(`a ${MODERN} result without resultType "complete": ${text.slice(0, 200)}`);
    return { result, requestBytes: Buffer.byteLength(request.body), answerBytes: Buffer.byteLength(text) };
  }

  private async post(headers: Record<string, string>, body: object): Promise<{ status: number; text: string }> {
    const res = await this.pool.request({
      method: 'POST',
      path: this.mcpPath,
      headers: { ...headers, authorization: `Bearer ${this.bearer}` },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, text: await res.body.text() };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/**
 * The order of the paths in each round: a Williams square, in which every path takes every place
 * once and follows every other path once (for an odd number, each row and its reverse). A fixed
 * order only turned round by round keeps each path's predecessor, so whatever one path leaves to
 * the next (garbage to collect, an api back from idling while the peer ran) always falls on the
 * same one: there the service's 2025-11-25 path always followed the peer's and its 2026-07-28 path
 * mostly followed 2025-11-25, and whole runs read 2026-07-28 at 96 to 109 % of 2025-11-25 on
 * list_webhooks, where the two alone, back to back in both orders, read 98 %.
 */
export function roundOrders(n: number): number[][] {
  const first: number[] = [];
  for (let i = 0, low = 0, high = n - 1; i < n; i += 1) first.push(i % 2 === 0 ? low++ : high--);
  const rows = Array.from({ length: n }, (_, r) => first.map((k) => (k + r) % n));
  return n % 2 === 0 ? rows : [...rows, ...rows.map((row) => [...row].reverse())];
}

/** Calls per path and round at `level`, and the warm-up before each: a fifth of them one at a time, where each call takes longer. */
export function s10Calls(ctx: RunContext, level: number): { calls: number; warmup: number } {
  const full = ctx.options.s10Calls ?? (ctx.options.quick ? 1_000 : 2_000);
  const calls = Math.max(100, Math.round((level === 1 ? full / 5 : full) * ctx.options.durationScale));
  const warmup = ctx.options.s10Warmup ?? 0.1;
  return { calls, warmup: Math.max(100, Math.round(calls * warmup)) };
}

/**
 * Scenario 10, protocol eras: the same read tool call, with the same arguments by the same API key,
 * on four paths: the service in revision 2025-11-25 (after one initialize per client) and in
 * 2026-07-28 (no handshake, envelope and headers checked), and a peer built on the official v2
 * SDK's createMcpHandler serving the service's own tool code from the same database
 * (bench/sdk-peer.ts), in both eras. One load generator (undici, raw HTTP), the same
 * concurrency and the same number of calls for every path, in short rounds whose orders make a
 * Williams square (roundOrders), so a machine that gets busier or quieter during the run weighs on
 * every path alike, and no path always runs after the same one.
 */
export async function scenario10(ctx: RunContext): Promise<Scenario10Result> {
  const { options } = ctx;
  const levels = options.s10Levels;
  // --s10-paths: some of the paths only (to compare two closely, or to profile one alone).
  const paths = ERA_PATHS.filter((p) => !options.s10Paths || options.s10Paths.includes(p.path));
  if (paths.length === 0) throw new Error(`--s10-paths names none of ${ERA_PATHS.map((p) => p.path).join(', ')}`);
  const orders = roundOrders(paths.length);
  // Four rounds per path (one with --quick), in whole squares.
  const rounds = options.s10Rounds ?? Math.ceil(((options.quick ? 1 : 4) * paths.length) / orders.length) * orders.length;
  log(
    `\nScenario 10: protocol eras (levels ${levels.join(', ')}; ${rounds} rounds of ${levels.map((l) => fmtNum(s10Calls(ctx, l).calls)).join(' / ')} calls per path)`,
  );
  const svc = await startScenarioService(ctx, 's10', s3LimitsEnv(levels));
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  let peer: Child | undefined;
  try {
    const urls = Array.from({ length: 10 }, (_, i) => ctx.receiver.url(i, `/ok/s10-${i}`));
    const seeded = await seedLineWithEndpoints(api, { label: 's10', users: 1, urls, mode: 'concise' });
    const user = seeded.users[0];
    const db = new PgClient({ connectionString: ctx.databaseUrl });
    await db.connect();
    try {
      await fillLargeOrg(db, {
        orgId: seeded.orgId,
        lines: [{ ...seeded.line, type: 'PHONE_NUMBER' }],
        threads: THREADS,
        messagesPerThread: 10,
        userId: user.userId,
      });
    } finally {
      await db.end();
    }
    const tools: Array<{ name: string; args: Record<string, unknown> }> = [
      { name: 'list_webhooks', args: {} },
      { name: 'get_thread', args: { threadId: largeOrgId(seeded.orgId, 'thread', 7) } },
    ].filter((t) => !options.s10Tools || options.s10Tools.includes(t.name));
    if (tools.length === 0) throw new Error('--s10-tools names neither list_webhooks nor get_thread');

    // The peer, unless every path measured is the service's.
    const started = paths.some((p) => p.server === 'peer')
      ? await startSdkPeer(ctx.root, {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NODE_ENV: 'production',
          ...svc.env,
          PROCESS_ROLE: 'api',
          PEER_TOOLS: tools.map((t) => t.name).join(','),
        })
      : undefined;
    peer = started?.child;
    const baseOf = { service: { url: svc.baseUrl, path: '/api/mcp' }, peer: { url: started?.url ?? '', path: '/mcp' } };
    const clientOf = (p: (typeof ERA_PATHS)[number], connections: number) =>
      new PathClient(baseOf[p.server].url, baseOf[p.server].path, p.era, user.apiKey, connections);

    // Every path answers the same result to the same call (checked before any clock starts).
    const sizes: Scenario10Result['sizes'] = [];
    for (const tool of tools) {
      let expected: string | undefined;
      for (const p of paths) {
        const client = clientOf(p, 1);
        try {
          await client.handshake();
          const { result, requestBytes, answerBytes } = await client.call(tool.name, tool.args);
          const text = JSON.stringify(result.structuredContent);
          expected ??= text;
          if (text !== expected) throw new Error(`${p.label} answers ${tool.name} differently: ${text.slice(0, 200)} against ${expected.slice(0, 200)}`);
          sizes.push({ tool: tool.name, path: p.path, requestBytes, answerBytes });
        } finally {
          await client.close();
        }
      }
    }

    const procs = { api: svc.api.pid, worker: svc.worker.pid, ...(peer ? { 'sdk peer': peer.pid } : {}) };
    const results: EraPathResult[] = [];
    for (const tool of tools) {
      for (const level of levels) {
        const { calls, warmup } = s10Calls(ctx, level);
        const clients = new Map(paths.map((p) => [p.path, clientOf(p, level)]));
        // One initialize per concurrent client of a legacy path, before the clock.
        for (const p of paths) await Promise.all(Array.from({ length: level }, () => clients.get(p.path)!.handshake()));
        const acc = new Map<
          EraPath,
          {
            latencies: number[];
            seconds: number;
            calls: number;
            server: number;
            postgres: number;
            harness: number;
            errors: number;
            lastError?: string;
            rounds: EraPathResult['rounds'];
          }
        >(paths.map((p) => [p.path, { latencies: [], seconds: 0, calls: 0, server: 0, postgres: 0, harness: 0, errors: 0, rounds: [] }]));
        for (let round = 0; round < rounds; round += 1) {
          for (const k of orders[round % orders.length]) {
            const p = paths[k];
            const client = clients.get(p.path)!;
            const call: Call = async () => void (await client.call(tool.name, tool.args));
            const label = `S10 ${tool.name} ${p.label.padEnd(22)} c=${level} round ${round + 1}`;
            resetProgress();
            await runCalls(`${label} (warm-up)`, level, call, warmup);
            const monitor = new Monitor(ctx.database, procs);
            await monitor.start();
            const run = await runCalls(label, level, call, calls);
            const cpu = await monitor.stop();
            const a = acc.get(p.path)!;
            const cpuSeconds = (name: string) => (Number.isFinite(cpu.cores[name]) ? cpu.cores[name] * cpu.seconds : 0);
            const server = cpuSeconds(SERVER_PROCESS[p.server]);
            a.latencies.push(...run.latencies);
            a.seconds += run.seconds;
            a.calls += run.latencies.length;
            a.server += server;
            a.postgres += cpuSeconds('postgres');
            a.harness += cpuSeconds('harness');
            a.errors += run.errors;
            a.lastError = run.lastError ?? a.lastError;
            const done = Math.max(1, run.latencies.length);
            a.rounds.push({ reqPerSec: run.latencies.length / run.seconds, serverCpuMs: (server * 1000) / done, machineBusy: cpu.machineBusy });
            log(
              `  ${label}: ${fmtNum(run.latencies.length / run.seconds)} req/s, p50 ${fmtMs(percentilesOf(run.latencies).p50)}, ` +
                `${SERVER_PROCESS[p.server]} ${((server * 1000) / done).toFixed(3)} ms CPU a call, machine ${(cpu.machineBusy * 100).toFixed(0)} % busy` +
                `${run.errors ? `, ${run.errors} errors (${run.lastError})` : ''}`,
            );
            svc.assertAlive();
          }
        }
        await Promise.all([...clients.values()].map((c) => c.close()));
        for (const p of paths) {
          const a = acc.get(p.path)!;
          const perCall = (seconds: number) => (a.calls ? (seconds * 1000) / a.calls : NaN);
          results.push({
            tool: tool.name,
            path: p.path,
            concurrency: level,
            calls: a.calls,
            reqPerSec: a.calls / a.seconds,
            latency: percentilesOf(a.latencies),
            serverCpuMs: perCall(a.server),
            postgresCpuMs: perCall(a.postgres),
            harnessCpuMs: perCall(a.harness),
            errors: a.errors,
            lastError: a.lastError,
            rounds: a.rounds,
          });
        }
      }
    }
    return { tools, levels, rounds, calls: Object.fromEntries(levels.map((l) => [l, s10Calls(ctx, l)])), sizes, results };
  } finally {
    if (peer) await stopProfiled(peer, 5000);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
