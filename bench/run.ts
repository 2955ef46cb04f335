/**
 * `npm run bench`: starts the service as in production (one `api` and one `worker` process on a
 * throwaway database and Bull prefix), a receiver on 127.0.0.1 and a load generator, runs the
 * thirteen scenarios (throughput, failure isolation, tool endpoint, backlog memory, one process, one
 * endpoint, ingest alone, reads on a large org, live updates, protocol eras, events for agents, the thread page, sends under a send policy), then writes docs/BENCHMARKS.md and docs/benchmarks.svg.
 *
 *   npm run bench                      full run (10 to 20 minutes)
 *   npm run bench -- --quick           each scenario under a minute (figures indicative only)
 *   npm run bench -- --scenario 1,3    some scenarios only (--scenario 8: reads and search on a large org)
 *   npm run bench -- --partition-drop  issue 46's retention bench instead (bench/partition-drop.ts)
 *   npm run bench -- --help            every option
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { cleanupAll, installSignalHandlers, isStopping, logDirectory, onCleanup, setLogDir } from './lib/children';
import { Options, Results, RunContext } from './lib/context';
import { checkpoint, createDatabase, databaseUrlFor, deleteRedisKeys, dropDatabase, machineInfo, redisInfo } from './lib/infra';
import { Receiver } from './lib/receiver-client';
import { renderMarkdown, renderSvg } from './lib/report';
import { log } from './lib/util';
import { scenario1 } from './scenarios/s1-throughput';
import { scenario2 } from './scenarios/s2-isolation';
import { scenario3 } from './scenarios/s3-tools';
import { scenario4 } from './scenarios/s4-backlog';
import { scenario5 } from './scenarios/s5-one-process';
import { scenario6 } from './scenarios/s6-one-endpoint';
import { scenario7 } from './scenarios/s7-ingest';
import { scenario8 } from './scenarios/s8-large-org';
import { scenario9 } from './scenarios/s9-live';
import { scenario10 } from './scenarios/s10-eras';
import { scenario11 } from './scenarios/s11-events';
import { scenario12 } from './scenarios/s12-thread-page';
import { scenario13 } from './scenarios/s13-sends';
import { PARTITION_DROP_HELP, partitionDropBench } from './partition-drop';

const ROOT = resolve(__dirname, '..');

const HELP = `Usage: npm run bench -- [options]

  --quick                  short windows: each scenario runs in under a minute
  --scenario N[,M]         run only these scenarios (1 throughput, 2 isolation, 3 tools, 4 memory,
                           5 one process, 6 one endpoint, 7 ingest alone, 8 reads on a large
                           org, 9 live updates: 1,000 open streams, 10 protocol eras: one tool call in
                           2025-11-25 and 2026-07-28, the service against the official SDK's server, 11 events for agents:
                           inbound SMS to events/poll and events/stream, 12 the thread page: 50 messages,
                           20 attachments, one request at a time, 13 sends per second without and with
                           a send policy); repeatable
  --endpoints K            endpoints each event fans out to in scenarios 1-2 (default 10)
  --users U                users those endpoints are dealt to (default 3)
  --ingest-concurrency C   load generator connections (default 16)
  --delivery-concurrency N the worker's DELIVERY_CONCURRENCY (default 100, the service's default)
  --endpoint-concurrency E the worker's DELIVERY_ENDPOINT_CONCURRENCY (default: the service's own default)
  --rate R                 scenario 1 pass 2: inbound events per second (default 200)
  --backlog N              scenario 4: deliveries waiting in retry (default 100000; 10000 with --quick)
  --backlog-cap N          saturation passes: most deliveries owed at once (default 2000)
  --sms-bytes N            inbound SMS text length (default 160)
  --mode concise|verbose   payload mode of the endpoints (default concise)
  --receiver-host H        the host in the endpoints' URLs (default 127.0.0.1). A name makes every
                           attempt look it up, as real endpoints' URLs do; it must resolve to
                           127.0.0.1 first, where the receiver listens (an /etc/hosts line), and not
                           be a local-only name such as localhost, which the URL policy refuses
  --timeout-ms N           scenario 2: DELIVERY_TIMEOUT_MS (default 10000; 2000 with --quick)
  --retry-schedule S       scenario 2: DELIVERY_RETRY_SCHEDULE (default 2s,5s,10s)
  --fail-ok-every N        failing/hanging endpoints answer 200 every N-th request so auto-disable
                           does not stop them (default 50; 0 = never)
  --levels 1,8,32,64       scenario 3 concurrency levels
  --s10-levels 1,32        scenario 10 concurrency levels
  --s10-rounds N           scenario 10: rounds of every path, their orders a Williams square (default 4 per path; 1 with --quick)
  --s10-calls N            scenario 10: calls per path and round (default 2000; 1000 with --quick; a fifth at c=1)
  --s10-warmup X           scenario 10: warm-up calls before each measured round, a share of its calls (default 0.1)
  --s10-paths P[,Q]        scenario 10: only these paths (legacy, modern, sdk-modern, sdk-legacy; default all)
  --s10-tools T[,U]        scenario 10: only these tools (list_webhooks, get_thread; default both)
  --s11-agents 1,100       scenario 11: agents waiting at once, each with its own API key (a poll pass and a stream pass per level)
  --duration-scale X       multiply every window by X
  --scrape-seconds S       GET /metrics from every service process every S seconds, as Prometheus
                           would (default 15, deploy/prometheus/prometheus.yml's interval; 0 = never)
  --no-build               do not run \`npm run build\` even if dist/ looks older than src/
  --keep                   keep the bench database (for inspection)
  --s6-one-process         scenario 6 runs one PROCESS_ROLE=all process (as npm start) instead of api + worker
${PARTITION_DROP_HELP}  --help

Environment: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres, used to create
and drop mss_bench_<time>), BENCH_REDIS_URL (default redis://127.0.0.1:6379), BENCH_PROFILE_DIR (write
a CPU profile of each service process there; summarise with
\`npx ts-node --transpile-only bench/profile-summary.ts <file>.cpuprofile\`), BENCH_NODE_ARGS (extra
node flags for the service processes), BENCH_HEAP_SNAPSHOTS=1 (scenario 9 writes a heap snapshot of its
api at each forced full GC, <logs>/heap/s9-api-<n>.heapsnapshot; compare two with
\`npx ts-node --transpile-only bench/heap-summary.ts <before> <after>\` or DevTools).
`;

function parseArgs(argv: string[]): Options {
  const has = (flag: string) => argv.includes(flag);
  const values = (flag: string): string[] => {
    const found: string[] = [];
    argv.forEach((arg, i) => {
      if (arg === flag && argv[i + 1] !== undefined) found.push(argv[i + 1]);
      else if (arg.startsWith(`${flag}=`)) found.push(arg.slice(flag.length + 1));
    });
    return found;
  };
  const value = (flag: string) => values(flag).pop();
  const num = (flag: string, fallback: number) => {
    const v = value(flag);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} needs a number, got ${v}`);
    return n;
  };
  const known = new Set([
    '--quick',
    '--scenario',
    '--endpoints',
    '--users',
    '--ingest-concurrency',
    '--delivery-concurrency',
    '--endpoint-concurrency',
    '--rate',
    '--backlog',
    '--backlog-cap',
    '--sms-bytes',
    '--mode',
    '--receiver-host',
    '--timeout-ms',
    '--retry-schedule',
    '--fail-ok-every',
    '--levels',
    '--s10-levels',
    '--s10-rounds',
    '--s10-calls',
    '--s10-paths',
    '--s10-warmup',
    '--s10-tools',
    '--s11-agents',
    '--duration-scale',
    '--scrape-seconds',
    '--no-build',
    '--keep',
    '--s6-one-process',
    '--help',
  ]);
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i].split('=')[0];
    if (!argv[i].startsWith('--')) continue;
    if (!known.has(flag)) throw new Error(`unknown option ${argv[i]} (see --help)`);
  }
  const quick = has('--quick');
  const scenarios = values('--scenario')
    .flatMap((v) => v.split(','))
    .map(Number)
    .filter((n) => n >= 1 && n <= 13);
  const mode = value('--mode') ?? 'concise';
  if (mode !== 'concise' && mode !== 'verbose') throw new Error('--mode is concise or verbose');
  const npmScript = process.env.npm_lifecycle_event;
  const args = process.argv.slice(2).join(' ');
  return {
    quick,
    scenarios: scenarios.length ? [...new Set(scenarios)].sort((a, b) => a - b) : [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
    endpoints: Math.max(2, num('--endpoints', 10)),
    users: Math.max(1, num('--users', 3)),
    ingestConcurrency: Math.max(1, num('--ingest-concurrency', 16)),
    deliveryConcurrency: Math.max(1, num('--delivery-concurrency', 100)),
    endpointConcurrency: value('--endpoint-concurrency') === undefined ? undefined : Math.max(1, num('--endpoint-concurrency', 10)),
    rate: Math.max(1, num('--rate', 200)),
    backlog: Math.max(10, num('--backlog', quick ? 10_000 : 100_000)),
    backlogCap: Math.max(100, num('--backlog-cap', 2000)),
    smsBytes: Math.max(1, num('--sms-bytes', 160)),
    mode,
    failOkEvery: num('--fail-ok-every', 50),
    timeoutMs: Math.max(100, num('--timeout-ms', quick ? 2000 : 10_000)),
    retrySchedule: value('--retry-schedule') ?? '2s,5s,10s',
    levels: (value('--levels') ?? '1,8,32,64')
      .split(',')
      .map(Number)
      .filter((n) => n >= 1),
    s10Levels: (value('--s10-levels') ?? '1,32')
      .split(',')
      .map(Number)
      .filter((n) => n >= 1),
    s10Rounds: value('--s10-rounds') === undefined ? undefined : Math.max(1, num('--s10-rounds', 16)),
    s10Calls: value('--s10-calls') === undefined ? undefined : Math.max(100, num('--s10-calls', 2_000)),
    s10Paths: value('--s10-paths')?.split(',').filter(Boolean),
    s10Warmup: value('--s10-warmup') === undefined ? undefined : num('--s10-warmup', 0.1),
    s10Tools: value('--s10-tools')?.split(',').filter(Boolean),
    s11Agents: (value('--s11-agents') ?? '1,100')
      .split(',')
      .map(Number)
      .filter((n) => Number.isInteger(n) && n >= 1),
    build: !has('--no-build'),
    keep: has('--keep'),
    receiverHost: value('--receiver-host') ?? '127.0.0.1',
    s6OneProcess: has('--s6-one-process'),
    durationScale: num('--duration-scale', 1) || 1,
    scrapeSeconds: num('--scrape-seconds', 15),
    command: npmScript?.startsWith('bench')
      ? `npm run ${npmScript}${args && npmScript === 'bench' ? ` -- ${args}` : ''}`
      : `npx ts-node bench/run.ts ${args}`.trim(),
  };
}

function newestMtime(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = 0;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** `npm run build` when dist/ is missing or older than src/ (the benchmark runs the built service). */
function ensureBuild(options: Options): void {
  let builtAt = 0;
  try {
    builtAt = statSync(join(ROOT, 'dist/src/main.js')).mtimeMs;
  } catch {
    // not built
  }
  const sourcesAt = Math.max(newestMtime(join(ROOT, 'src')), statSync(join(ROOT, 'package.json')).mtimeMs);
  if (builtAt > sourcesAt) {
    log('dist/ is newer than src/: no build needed');
    return;
  }
  if (!options.build) {
    log(builtAt ? 'warning: dist/ is older than src/ and --no-build was given: benchmarking the old build' : 'no dist/: cannot run with --no-build');
    if (!builtAt) throw new Error('dist/src/main.js is missing; run npm run build');
    return;
  }
  log('npm run build …');
  const result = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`npm run build failed:\n${(result.stdout ?? '') + (result.stderr ?? '')}`.slice(0, 4000));
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help')) {
    process.stdout.write(HELP);
    return 0;
  }
  if (argv.includes('--partition-drop')) return partitionDropBench(argv);
  const options = parseArgs(argv);
  installSignalHandlers();
  const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const runId = `${stamp}_${randomBytes(2).toString('hex')}`;
  const logDir = `/tmp/mss-bench-${runId}`;
  mkdirSync(logDir, { recursive: true });
  setLogDir(logDir);
  log(`bench ${runId}: ${options.quick ? 'quick' : 'full'} run of scenario(s) ${options.scenarios.join(', ')}; process logs in ${logDir}`);

  ensureBuild(options);
  const machine = await machineInfo(ROOT);
  log(
    `machine: ${machine.nproc} CPUs (${machine.cpuModel}), ${machine.memory}, load ${machine.loadAtStart}; Node ${machine.node}, PostgreSQL ${machine.postgres}, Redis ${machine.redis}; commit ${machine.commit}${machine.dirty ? ` (+${machine.dirty} uncommitted)` : ''}`,
  );

  const database = `mss_bench_${runId}`;
  await createDatabase(database);
  onCleanup('drop database', async () => {
    if (options.keep) {
      log(`kept database ${database} (--keep)`);
      return;
    }
    await dropDatabase(database);
  });
  onCleanup('delete Redis keys', async () => {
    await deleteRedisKeys(`{mssb_${runId}_*`);
  });

  const results: Results = { startedAt: new Date(), errors: [] };
  const receiver = await Receiver.start(ROOT, Math.max(options.endpoints, 10), options.failOkEvery, options.receiverHost);
  const ctx: RunContext = {
    root: ROOT,
    options,
    runId,
    database,
    databaseUrl: databaseUrlFor(database),
    secrets: {
      adminToken: `bench_admin_${randomBytes(16).toString('hex')}`,
      ingestToken: `bench_ingest_${randomBytes(16).toString('hex')}`,
      secretsKey: randomBytes(32).toString('hex'),
    },
    receiver,
    redisPid: (await redisInfo().catch(() => ({ pid: 0 }))).pid,
    results,
  };

  const scenarios = {
    1: scenario1,
    2: scenario2,
    3: scenario3,
    4: scenario4,
    5: scenario5,
    6: scenario6,
    7: scenario7,
    8: scenario8,
    9: scenario9,
    10: scenario10,
    11: scenario11,
    12: scenario12,
    13: scenario13,
  } as const;
  for (const n of options.scenarios) {
    const refused = await checkpoint();
    if (refused) log(`  (CHECKPOINT before scenario ${n} refused: ${refused})`);
    const started = Date.now();
    try {
      const result = await scenarios[n as keyof typeof scenarios](ctx);
      if (n === 1) results.s1 = result as Results['s1'];
      if (n === 2) results.s2 = result as Results['s2'];
      if (n === 3) results.s3 = result as Results['s3'];
      if (n === 4) results.s4 = result as Results['s4'];
      if (n === 5) results.s5 = result as Results['s5'];
      if (n === 6) results.s6 = result as Results['s6'];
      if (n === 7) results.s7 = result as Results['s7'];
      if (n === 8) results.s8 = result as Results['s8'];
      if (n === 9) results.s9 = result as Results['s9'];
      if (n === 10) results.s10 = result as Results['s10'];
      if (n === 11) results.s11 = result as Results['s11'];
      if (n === 12) results.s12 = result as Results['s12'];
      if (n === 13) results.s13 = result as Results['s13'];
      log(`  scenario ${n} took ${((Date.now() - started) / 1000).toFixed(0)} s`);
    } catch (error) {
      if (isStopping()) break;
      const message = error instanceof Error ? error.message : String(error);
      results.errors.push({ scenario: n, message });
      log(`  scenario ${n} FAILED after ${((Date.now() - started) / 1000).toFixed(0)} s: ${message}`);
    }
  }
  results.finishedAt = new Date();
  if (isStopping()) return 130;

  // The raw figures too, for anyone who wants more than the report shows.
  writeFileSync(join(logDir, 'results.json'), JSON.stringify({ options, machine, results }, null, 2));
  const markdown = renderMarkdown(results, options, machine);
  const svg = renderSvg(results);
  writeFileSync(join(ROOT, 'docs/BENCHMARKS.md'), `${markdown}\n`);
  writeFileSync(join(ROOT, 'docs/benchmarks.svg'), svg);
  log(`\nwrote docs/BENCHMARKS.md and docs/benchmarks.svg (logs and results.json: ${logDirectory()})`);
  printSummary(markdown);
  return results.errors.length ? 1 : 0;
}

/** The summary table of the report, on the terminal. */
function printSummary(markdown: string): void {
  const lines = markdown.split('\n');
  const start = lines.indexOf('## Summary');
  if (start < 0) return;
  const end = lines.findIndex((l, i) => i > start + 1 && l.startsWith('!['));
  log(
    lines
      .slice(start, end < 0 ? undefined : end)
      .join('\n')
      .replace(/\*\*/g, ''),
  );
}

main()
  .then(async (code) => {
    await cleanupAll();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    if (isStopping()) return; // interrupted: the signal handler finishes the cleanup and exits
    log(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await cleanupAll();
    process.exit(1);
  });
