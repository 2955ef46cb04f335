/**
 * The protocol layers alone, in one process, with nothing else on the call's path: one `tools/call`
 * of a stub `list_webhooks` (a fixed result of 10 endpoints, made afresh each call as a tool makes
 * it, in the shape of the real one) answered
 *
 *   - by the service's McpService: `mcpHeadersOf`, `handle` (parse, era, envelope and headers,
 *     dispatch, argument validation, visibleResult, the answer) and the answer's bytes as
 *     `sendAnswer` writes them;
 *   - by the official v2 SDK's `createMcpHandler` behind `toNodeHandler`, the handler scenario 10's
 *     peer serves (bench/lib/sdk-server.ts: the same permission rule, validator and visibleResult),
 *     given a Node request and response of its own making: the request's bytes in, the answer's
 *     bytes out;
 *
 * each in 2025-11-25 and in 2026-07-28, the same bodies and headers as scenario 10's clients send.
 * No socket, HTTP parser, database or Redis (the service's rate limit and key lookup are stubs),
 * none of the service's HTTP stack (Express, Nest, pino-http) and no metrics: only what each
 * protocol layer does with a request. CPU time per call (process.cpuUsage), rounds in turning
 * order, a full garbage collection between rounds (outside them: the SDK's paths leave hundreds of
 * megabytes of garbage that a later round would otherwise pay for), the median round of each path.
 *
 *   npm run build && npx ts-node --transpile-only bench/protocol-micro.ts [--calls 20000] [--rounds 8] [--at-once 1] [--paths service]
 *
 * --calls: calls per path and round; --rounds; --at-once: calls started together (a loaded server
 * overlaps them); --paths: only the paths whose name holds one of these words (service, SDK, legacy, modern).
 *
 * Run the service's paths and the SDK's apart (--paths service, --paths sdk): in one process they
 * slow each other (the service's 24-25 µs read 45-100 µs beside the SDK's rounds, which share its
 * visibleResult and leave the heap large). The service's two eras are what this measures closely
 * (rounds within a few %). The SDK's figures swing by half with the collector's state (0.27 to 0.9
 * ms a call) and exceed what scenario 10's peer spends on its whole call (0.40-0.49 ms of CPU at
 * c=32, database and HTTP included): an order of magnitude, not a figure to quote.
 */
import 'reflect-metadata';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { AuthInfo } from '@modelcontextprotocol/server';
import type { KeyPrincipal as KeyCaller } from '../src/identity/principal';
import type { KeyTicket } from '../src/limits/api-key-limits.service';
import type { RegisteredTool } from '../src/mcp/tool-registry';
import { loadServiceBuild, sdkMcpHandler } from './lib/sdk-server';
import { percentile } from './lib/util';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'bench-s10', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A list_webhooks result as the tool makes it: 10 endpoints (scenario 10's answer is 7 KB, this one about as large). */
function endpoints() {
  return {
    endpoints: Array.from({ length: 10 }, (_, i) => ({
      id: `8d3c6a1e-1b2c-4d5e-8f90-${String(i).padStart(12, '0')}`,
      url: `http://127.0.0.1:${40_000 + i}/ok/s10-${i}`,
      events: ['message.received'],
      mode: 'concise',
      messageHistoryCount: 0,
      status: 'active',
      disabledReason: null,
      consecutiveFailures: 0,
      lastDeliveryAt: null,
      channelScope: { allChannels: true, channels: [] },
      createdAt: '2026-11-29T07:03:12.000Z',
      updatedAt: '2026-11-29T07:03:12.000Z',
    })),
  };
}

type Path = 'service legacy' | 'service modern' | 'SDK modern' | 'SDK legacy';

async function main(): Promise<void> {
  const flag = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i < 0 ? undefined : process.argv[i + 1];
  };
  const calls = Number(flag('calls') ?? 20_000);
  const rounds = Number(flag('rounds') ?? 8);
  const concurrency = Math.max(1, Number(flag('at-once') ?? 1));
  const only = flag('paths')?.toLowerCase().split(',');
  const build = await loadServiceBuild();
  const { McpService, answerText, argumentValidator, mcpHeadersOf } = build;
  const noArguments = { type: 'object', properties: {}, additionalProperties: false } as const;
  const tool = {
    spec: {
      name: 'list_webhooks',
      title: 'List webhooks',
      description: "The caller's webhook endpoints.",
      kind: 'read',
      minRole: 'MEMBER',
      inputSchema: noArguments,
      outputSchema: { type: 'object' },
    },
    permission: 'webhooks',
    advertised: {
      name: 'list_webhooks',
      title: 'List webhooks',
      description: "The caller's webhook endpoints.",
      inputSchema: noArguments,
      outputSchema: { type: 'object' },
      annotations: { title: 'List webhooks', readOnlyHint: true, openWorldHint: false },
    },
    handler: { execute: async () => endpoints() },
    validate: argumentValidator().compile(noArguments),
    validateResult: () => true,
  } as unknown as RegisteredTool;
  const caller: KeyCaller = {
    keyId: '1b2c3d4e-0000-4000-8000-000000000000',
    userId: '2b2c3d4e-0000-4000-8000-000000000000',
    orgId: '3b2c3d4e-0000-4000-8000-000000000000',
    orgTier: 'POWER',
    role: 'OWNER',
    channelAccess: 'ALL',
    lines: [],
    permissions: ['read', 'send', 'webhooks'],
  } as unknown as KeyCaller;

  // The service: McpService with the key's rate limit, the metrics and the config as stubs.
  const registry = { get: (name: string) => (name === 'list_webhooks' ? tool : undefined), listFor: () => [] };
  const config = { mcp: { maxBatch: 50, batchConcurrency: 4, checkResults: false } };
  const service = new McpService(
    registry as never,
    {} as never,
    { spend: async () => undefined } as never,
    config as never,
    { mcpAnswered: () => undefined } as never,
    {} as never, // the event feed: this bench calls no events/* method
    {} as never, // the event subscriptions: nor events/subscribe
    {} as never, // nor events/stream
    {} as never, // the audit trail: this bench calls a read tool, never audited
  );
  const ticket = { widen: () => 1 } as unknown as KeyTicket;

  // The SDK: the peer's handler behind toNodeHandler.
  const node = toNodeHandler(sdkMcpHandler(build, [tool]));
  const auth: AuthInfo = { token: 'csk_bench', clientId: caller.keyId, scopes: caller.permissions, extra: { caller } };

  const request = (era: 'legacy' | 'modern', id: number) => {
    const headers: Record<string, string> = {
      host: '127.0.0.1',
      authorization: 'Bearer csk_bench',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': era === 'legacy' ? LEGACY : MODERN,
      ...(era === 'modern' ? { 'mcp-method': 'tools/call', 'mcp-name': 'list_webhooks' } : {}),
    };
    const params = era === 'legacy' ? { name: 'list_webhooks', arguments: {} } : { name: 'list_webhooks', arguments: {}, _meta: ENVELOPE };
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }));
    headers['content-length'] = String(body.length);
    return { headers, body };
  };

  const viaService = async (era: 'legacy' | 'modern', id: number): Promise<string> => {
    const { headers, body } = request(era, id);
    const answer = await service.handle(body, caller, ticket, mcpHeadersOf(headers));
    if (answer.status !== 200 || !answer.body) throw new Error(`service answered ${answer.status}`);
    return Buffer.from(answerText(answer.body), 'utf8').toString('utf8');
  };
  const viaSdk = async (era: 'legacy' | 'modern', id: number): Promise<string> => {
    const { headers, body } = request(era, id);
    const chunks: Buffer[] = [];
    let status = 0;
    const req = {
      method: 'POST',
      url: '/mcp',
      headers,
      auth,
      async *[Symbol.asyncIterator]() {
        yield body;
      },
    };
    const res = {
      destroyed: false,
      writeHead: (code: number) => (status = code),
      write: (chunk: string | Uint8Array) => chunks.push(Buffer.from(chunk)) > 0,
      end: (chunk?: string | Uint8Array) => chunk !== undefined && chunks.push(Buffer.from(chunk)),
      on: () => undefined,
    };
    await node(req, res);
    if (status !== 200) throw new Error(`SDK answered ${status}: ${Buffer.concat(chunks).toString()}`);
    return Buffer.concat(chunks).toString('utf8');
  };
  const paths: Record<Path, (id: number) => Promise<string>> = {
    'service legacy': (id) => viaService('legacy', id),
    'service modern': (id) => viaService('modern', id),
    'SDK modern': (id) => viaSdk('modern', id),
    'SDK legacy': (id) => viaSdk('legacy', id),
  };

  // Each path answers the same structuredContent (the SDK's legacy leg answers an event stream).
  const contentOf = (text: string) => {
    const json = text.startsWith('{')
      ? text
      : text
          .split('\n')
          .find((line) => line.startsWith('data:'))!
          .slice(5);
    return JSON.stringify((JSON.parse(json) as { result: { structuredContent: unknown } }).result.structuredContent);
  };
  const expected = contentOf(await paths['service legacy'](1));
  for (const [name, call] of Object.entries(paths)) {
    const text = await call(1);
    if (contentOf(text) !== expected) throw new Error(`${name} answers differently: ${text.slice(0, 300)}`);
    process.stdout.write(`${name.padEnd(15)} answer ${Buffer.byteLength(text)} bytes\n`);
  }

  const names = (Object.keys(paths) as Path[]).filter((path) => !only || only.some((word) => path.toLowerCase().includes(word)));
  if (names.some((n) => n.startsWith('service')) && names.some((n) => n.startsWith('SDK'))) {
    process.stdout.write('(the service and the SDK in one process slow each other: for figures, run --paths service and --paths sdk apart)\n');
  }
  // A full collection between rounds, so that no round pays for the garbage of the one before.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const perCall: Record<Path, number[]> = { 'service legacy': [], 'service modern': [], 'SDK modern': [], 'SDK legacy': [] };
  let id = 2;
  const run = async (path: Path, n: number) => {
    const started = process.cpuUsage();
    for (let i = 0; i < n; i += concurrency) await Promise.all(Array.from({ length: Math.min(concurrency, n - i) }, () => paths[path](id++)));
    const used = process.cpuUsage(started);
    return (used.user + used.system) / n;
  };
  for (const path of names) await run(path, calls); // warm-up: the JIT has seen every path
  for (let round = 0; round < rounds; round += 1) {
    for (let k = 0; k < names.length; k += 1) {
      const path = names[(k + round) % names.length];
      gc();
      perCall[path].push(await run(path, calls));
      const heap = process.memoryUsage().heapUsed / 2 ** 20;
      process.stdout.write(`round ${round + 1} ${path.padEnd(15)} ${perCall[path].at(-1)!.toFixed(1).padStart(6)} µs a call, heap ${heap.toFixed(0)} MB\n`);
    }
  }
  const median = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  const base = median(perCall[names[0]]);
  process.stdout.write(`\n${calls} calls a round, ${rounds} rounds; CPU µs a call, median round (min – max):\n`);
  for (const path of names) {
    const values = perCall[path];
    process.stdout.write(
      `${path.padEnd(15)} ${median(values).toFixed(1).padStart(6)} µs  (${Math.min(...values).toFixed(1)} – ${Math.max(...values).toFixed(1)})  ` +
        `${((median(values) / base) * 100).toFixed(1)} % of ${names[0]}\n`,
    );
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});
