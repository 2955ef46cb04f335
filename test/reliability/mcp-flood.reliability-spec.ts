import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { Agent, request } from 'undici';
import { createTenant, ingestSms, percentile, Tenant, toolOk } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { FloodPlan, FloodReport } from './support/flood-client';
import { fmt, ResultBuilder } from './support/results';
import { ServiceProcess, sleep, waitFor } from './support/stack';

/**
 * Issue 10, section 3: "One API key can stall everyone". Org B's key floods POST /api/mcp with
 * batches of the largest size (50) in parallel and with single calls at high concurrency, while
 * org A makes normal calls and /ready is polled. Twice, against two `api` processes that differ
 * only in the per-key rate limit:
 *
 * - "rate limit off" (MCP_RATE_LIMIT=0): every call of B is admitted as far as the batch cap, the
 *   batch concurrency and the per-key concurrency (8 calls at once) let it; the worst case.
 * - "defaults" (600 calls per 60 s): B's budget is spent in the first second, then B is refused.
 *
 * Stated bounds: org A gets no 5xx (and no 429) and its p99 stays under A_P99_BOUND_MS; /ready
 * never fails and its p99 stays under READY_P99_BOUND_MS; the flooded process stays under
 * RSS_BOUND_MB. Before the fix the same flood held org A's requests for seconds and failed /ready
 * (see the note recorded with the row).
 *
 * The flooding client runs in a child process at the lowest CPU priority: a real flooder spends
 * its own machine's CPU, while on this 2-core machine it would otherwise take the CPU the server
 * needs, which no limit inside the server can give back.
 */
const BASELINE_MS = 4_000;
const FLOOD_MS = 12_000;
const A_PER_SECOND = 10;
const READY_PER_SECOND = 5;
const B_BATCH_LOOPS = 8;
const B_SINGLE_LOOPS = 24;
const BATCH = 50;
/** Loops of org B that send a batch far over the cap (the issue's 9,000-call batch, cut to fit 1 MB bodies loosely). */
const B_HUGE_LOOPS = 2;
const HUGE_BATCH = 2_000;
const A_P99_BOUND_MS = 1_000;
const READY_P99_BOUND_MS = 1_000;
const RSS_BOUND_MB = 700;

const LIMITS = { MCP_MAX_BATCH: String(BATCH), MCP_BATCH_CONCURRENCY: '4', MCP_KEY_CONCURRENCY: '8', MCP_RATE_WINDOW_SECONDS: '60' };

interface Answer {
  status: number;
  ms: number;
  text: string;
  error?: string;
}

/** Org A and /ready each have their own connections; org B floods from a child process. */
const agents = {
  a: new Agent({ connections: 16, keepAliveTimeout: 10_000 }),
  ready: new Agent({ connections: 4, keepAliveTimeout: 10_000 }),
};

/**
 * Runs the flood in a child process (its busy loops would otherwise delay this process's timers
 * and measurements); `onStart` once its requests begin, then its report.
 */
function runFlood(plan: FloodPlan, onStart: () => void): Promise<FloodReport> {
  const child = fork(join(__dirname, 'support/flood-client.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.send(plan);
  // The flooder runs at the lowest priority: a real one uses its own machine's CPU, not the server's.
  setPriority(child.pid!, 19);
  return new Promise((resolve, reject) => {
    child.on('message', (message: { started?: boolean } & FloodReport) => (message.started ? onStart() : resolve(message)));
    child.once('exit', (code) => reject(new Error(`the flood client exited (${code}) without a report`)));
  });
}

async function call(agent: Agent, url: string, init: { method: 'GET' | 'POST'; key?: string; body?: unknown }): Promise<Answer> {
  const started = performance.now();
  try {
    const res = await request(url, {
      method: init.method,
      dispatcher: agent,
      headers: init.key ? { authorization: `Bearer ${init.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {},
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const text = await res.body.text();
    return { status: res.statusCode, ms: performance.now() - started, text };
  } catch (error) {
    return { status: 0, ms: performance.now() - started, text: '', error: (error as Error).message };
  }
}

const toolCall = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

function rssMb(pid: number | undefined): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

interface PhaseFigures {
  label: string;
  aBefore: number[];
  aDuring: number[];
  aStatuses: Map<number, number>;
  readyMs: number[];
  readyFailures: number;
  b?: FloodReport;
  rssBefore: number;
  rssMax: number;
  connectionsMax: number;
  /** CPU seconds the flooded api process used during the flood, and the flood's wall-clock seconds. */
  cpu: number;
  seconds: number;
}

const count = (map: Map<number, number>, key: number) => map.set(key, (map.get(key) ?? 0) + 1);
const statuses = (map: Map<number, number>) =>
  [...map]
    .sort((x, y) => x[0] - y[0])
    .map(([s, n]) => `${s || 'no answer'} × ${fmt(n)}`)
    .join(', ') || 'none';

describe('reliability: one API key floods /api/mcp', () => {
  let stack: Stack;
  let limited: ServiceProcess;
  let orgA: Tenant;
  let orgB: Tenant;
  let aEndpoint: string;
  let bEndpoints: string[];
  let bDelivery: string;
  let db: Client;
  const result = new ResultBuilder('mcp-flood', 'One API key flooding /api/mcp (batches and single calls)');

  beforeAll(async () => {
    stack = await startStack({ tag: 'flood', env: { ...LIMITS, MCP_RATE_LIMIT: '0' } });
    limited = await ServiceProcess.start({
      name: 'flood-api-limited',
      role: 'api',
      env: { ...stack.env, LOG_LEVEL: 'warn', ...LIMITS, MCP_RATE_LIMIT: '600' },
    });
    const base = stack.apis[0].baseUrl;
    orgA = await createTenant(base, { lines: ['PHONE_NUMBER'] });
    orgB = await createTenant(base, { lines: ['PHONE_NUMBER'] });
    aEndpoint = (await toolOk(base, orgA.apiKey, 'register_webhook', { url: `${stack.receiverUrl}/a`, events: ['message.received'] })).endpoint.id;
    bEndpoints = [];
    for (let i = 0; i < 3; i++)
      bEndpoints.push((await toolOk(base, orgB.apiKey, 'register_webhook', { url: `${stack.receiverUrl}/b${i}`, events: ['message.received'] })).endpoint.id);
    for (let i = 0; i < 10; i++) {
      await ingestSms(base, { to: orgA.lines[0].address, from: `+1666555${String(1000 + i)}`, body: `hello A ${i}`, providerMessageId: `flood-a-${i}` });
      await ingestSms(base, { to: orgB.lines[0].address, from: `+1666556${String(1000 + i)}`, body: `hello B ${i}`, providerMessageId: `flood-b-${i}` });
    }
    const deliveries = await waitFor(
      async () => {
        const page = await toolOk<{ deliveries: Array<{ id: string }> }>(base, orgB.apiKey, 'list_webhook_deliveries', { endpointId: bEndpoints[0] });
        return page.deliveries.length >= 10 && page.deliveries;
      },
      'deliveries of org B',
      30_000,
      250,
    );
    bDelivery = deliveries[0].id;
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    result.record();
    await db?.end();
    await limited?.stop('SIGTERM');
    await stack?.stop();
    await Promise.all(Object.values(agents).map((a) => a.close()));
  });

  /** Baseline, then the flood, against one api process; org A and /ready run throughout. */
  async function phase(label: string, api: ServiceProcess): Promise<PhaseFigures> {
    const url = `${api.baseUrl}/api/mcp`;
    let flooding = false;
    let id = 1;
    const figures: PhaseFigures = {
      label,
      aBefore: [],
      aDuring: [],
      aStatuses: new Map(),
      readyMs: [],
      readyFailures: 0,
      rssBefore: 0,
      rssMax: 0,
      connectionsMax: 0,
      cpu: 0,
      seconds: 0,
    };
    const aCalls = [
      () => toolCall(id++, 'list_webhooks'),
      () => toolCall(id++, 'get_webhook', { endpointId: aEndpoint }),
      () => toolCall(id++, 'list_threads'),
    ];
    const pending: Array<Promise<void>> = [];
    let n = 0;
    const aTimer = setInterval(() => {
      const during = flooding;
      pending.push(
        call(agents.a, url, { method: 'POST', key: orgA.apiKey, body: aCalls[n++ % aCalls.length]() }).then((answer) => {
          count(figures.aStatuses, answer.status);
          (during ? figures.aDuring : figures.aBefore).push(answer.ms);
        }),
      );
    }, 1000 / A_PER_SECOND);
    const readyTimer = setInterval(() => {
      pending.push(
        call(agents.ready, `${api.baseUrl}/ready`, { method: 'GET' }).then((answer) => {
          if (flooding) figures.readyMs.push(answer.ms);
          if (answer.status !== 200) figures.readyFailures += 1;
        }),
      );
    }, 1000 / READY_PER_SECOND);
    const sampler = setInterval(() => {
      const rss = rssMb(api.pid);
      if (!flooding) figures.rssBefore = Math.max(figures.rssBefore, rss);
      else figures.rssMax = Math.max(figures.rssMax, rss);
    }, 200);
    const connections = setInterval(() => {
      void db
        .query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
        .then((r) => (figures.connectionsMax = Math.max(figures.connectionsMax, r.rows[0].n)))
        .catch(() => undefined);
    }, 250);

    try {
      await sleep(BASELINE_MS);
      let cpuAtStart = 0;
      let startedAt = Date.now();
      const batch = Array.from({ length: BATCH }, (_, i) => {
        switch (i % 10) {
          case 0:
            return toolCall(i, 'resend_webhook_delivery', { deliveryId: bDelivery });
          case 1:
          case 2:
            return toolCall(i, 'list_webhook_deliveries', { endpointId: bEndpoints[i % bEndpoints.length] });
          case 3:
          case 4:
          case 5:
            return toolCall(i, 'list_threads');
          case 6:
          case 7:
            return toolCall(i, 'get_webhook', { endpointId: bEndpoints[i % bEndpoints.length] });
          default:
            return toolCall(i, 'list_webhooks');
        }
      });
      figures.b = await runFlood(
        {
          url,
          key: orgB.apiKey,
          durationMs: FLOOD_MS,
          loops: [
            { count: B_BATCH_LOOPS, body: JSON.stringify(batch), calls: BATCH },
            { count: B_HUGE_LOOPS, body: JSON.stringify(Array.from({ length: HUGE_BATCH }, (_, i) => toolCall(i, 'list_threads'))), calls: HUGE_BATCH },
            { count: B_SINGLE_LOOPS / 2, body: JSON.stringify(toolCall(1, 'list_webhooks')), calls: 1 },
            { count: B_SINGLE_LOOPS / 2, body: JSON.stringify(toolCall(2, 'get_webhook', { endpointId: bEndpoints[0] })), calls: 1 },
          ],
        },
        () => {
          flooding = true;
          cpuAtStart = cpuSeconds(api.pid);
          startedAt = Date.now();
        },
      );
      figures.cpu = cpuSeconds(api.pid) - cpuAtStart;
      figures.seconds = (Date.now() - startedAt) / 1000;
    } finally {
      flooding = false;
      clearInterval(aTimer);
      clearInterval(readyTimer);
      clearInterval(sampler);
      clearInterval(connections);
      await Promise.all(pending);
    }
    return figures;
  }

  it("keeps org A's answers and /ready within the stated bounds while org B floods", async () => {
    const phases: PhaseFigures[] = [];
    try {
      phases.push(await phase('rate limit off', stack.apis[0]));
      phases.push(await phase('defaults (600 calls / 60 s)', limited));
    } finally {
      result.load =
        `${B_BATCH_LOOPS} loops of ${BATCH}-message batches, ${B_HUGE_LOOPS} of ${fmt(HUGE_BATCH)}-message batches and ${B_SINGLE_LOOPS} of single calls from org B's key for ${FLOOD_MS / 1000} s, ` +
        `while org A makes ${A_PER_SECOND} calls/s and /ready is polled ${READY_PER_SECOND}/s; twice: rate limit off, then the default 600 calls / 60 s`;
      result.faults = '—';
      result.badInputs = 'one key calling far beyond its limits';
      for (const p of phases) {
        const aTotal = [...p.aStatuses.values()].reduce((x, y) => x + y, 0);
        const a5xx = [...p.aStatuses].filter(([s]) => s >= 500 || s === 0).reduce((x, [, k]) => x + k, 0);
        result.figure(
          `${p.label}: org A p50 / p99, before → during the flood`,
          `${fmt(percentile(p.aBefore, 50))} / ${fmt(percentile(p.aBefore, 99))} → ${fmt(percentile(p.aDuring, 50))} / ${fmt(percentile(p.aDuring, 99))} ms (bound: p99 < ${fmt(A_P99_BOUND_MS)} ms)`,
        );
        result.figure(`${p.label}: org A answers`, `${statuses(p.aStatuses)} (${fmt(aTotal)} calls, 5xx: ${a5xx})`);
        result.figure(
          `${p.label}: /ready during the flood, p50 / p99 / failures`,
          `${fmt(percentile(p.readyMs, 50))} / ${fmt(percentile(p.readyMs, 99))} ms / ${p.readyFailures} (bound: p99 < ${fmt(READY_P99_BOUND_MS)} ms, 0 failures)`,
        );
        const b = p.b;
        if (b) {
          result.figure(
            `${p.label}: org B requests`,
            `${fmt(b.requests)}: ${Object.entries(b.statuses)
              .map(([s, n]) => `${s === '0' ? 'no answer' : s} × ${fmt(n)}`)
              .join(', ')}`,
          );
          result.figure(
            `${p.label}: org B calls run / requests refused by the rate limit / as too many at once`,
            `${fmt(b.admitted)} / ${fmt(b.rate)} / ${fmt(b.busy)}`,
          );
        }
        result.figure(
          `${p.label}: api process CPU during the flood`,
          `${p.cpu.toFixed(1)} s in ${p.seconds.toFixed(1)} s (${fmt((100 * p.cpu) / Math.max(p.seconds, 1))} % of one core)${b ? `, ${((1000 * p.cpu) / Math.max(b.requests, 1)).toFixed(2)} ms per org B request` : ''}`,
        );
        result.figure(`${p.label}: api RSS before → max during`, `${fmt(p.rssBefore)} → ${fmt(p.rssMax)} MB (bound: ${RSS_BOUND_MB} MB)`);
        result.figure(`${p.label}: database connections, max (2 api + 1 worker, pools of 20 + the /ready probes)`, fmt(p.connectionsMax));
      }
      result.notes.push(
        'Before the fix (commit 3f9769a, the same spec): org A p50 / p99 during the flood 1,614 / 3,769 ms and 3,571 / 4,754 ms; ' +
          '/ready failed 8 and 4 times (p99 2,944 and 4,256 ms); every batch of org B ran, ~16,000 calls in 12 s, api RSS up to 426 MB.',
        'The flooder runs at nice 19: at normal priority on this busy 2-core machine it took the CPU the api process needed (org A p99 about ' +
          '1.5 s while the api process was 43 % idle). A flood of requests at the HTTP level is for the edge (connection and request limits ' +
          'per client at the load balancer); the limits here bound the work one key can make the service do.',
      );
    }
    for (const p of phases) {
      expect({ phase: p.label, aStatuses: Object.fromEntries(p.aStatuses) }).toEqual({ phase: p.label, aStatuses: { 200: expect.any(Number) } });
      expect(percentile(p.aDuring, 99)).toBeLessThan(A_P99_BOUND_MS);
      expect(p.readyFailures).toBe(0);
      expect(percentile(p.readyMs, 99)).toBeLessThan(READY_P99_BOUND_MS);
      expect(p.rssMax).toBeLessThan(RSS_BOUND_MB);
    }
    for (const p of phases) {
      // The flood was one: B sent far more than it may run, over-cap batches included.
      expect(p.b!.requests).toBeGreaterThan(1_000);
      expect(p.b!.statuses['400']).toBeGreaterThan(0);
    }
    // With the rate limit off, only the per-key concurrency holds B back.
    expect(phases[0].b!.busy).toBeGreaterThan(0);
    // With the defaults, B's budget is spent at once and the rest is refused.
    expect(phases[1].b!.admitted).toBeLessThanOrEqual(600);
    expect(phases[1].b!.rate).toBeGreaterThan(0);
    expect(stack.apis[0].alive && limited.alive).toBe(true);
    result.passed = true;
  });
});
