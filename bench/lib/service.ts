import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { Child, childAlive, logDirectory, startProcess, statementsDirectory, stopChild, tailOf } from './children';
import { REDIS_URL } from './infra';
import { FatalError, freePort, sleep, waitUntil } from './util';

export interface ServiceSecrets {
  adminToken: string;
  ingestToken: string;
  secretsKey: string;
}

export interface ServiceOptions {
  root: string;
  databaseUrl: string;
  queuePrefix: string;
  secrets: ServiceSecrets;
  /** DELIVERY_* and other overrides for this scenario. */
  env: Record<string, string>;
  label: string;
  /** `split` (default): one `api` and one `worker` process; `all`: one `PROCESS_ROLE=all` process, as `npm start` runs it. */
  roles?: 'split' | 'all';
  /** Read every process's GET /metrics this often, as Prometheus would (0 or unset: never). */
  scrapeSeconds?: number;
  /** Preload bench/lib/heap-preload.js into the api process, so `Service.apiHeapAfterGc()` works. */
  heapProbe?: boolean;
}

/** What the api process holds right after a forced full garbage collection (bench/lib/heap-preload.js). */
export interface HeapAfterGc {
  /** Bytes (process.memoryUsage()). */
  heapUsed: number;
  rss: number;
  /** The heap snapshot written with it (BENCH_HEAP_SNAPSHOTS=1). */
  snapshot?: string;
}

export interface Service {
  /** With `roles: 'all'`, `api` and `worker` are the same process. */
  api: Child;
  worker: Child;
  /** The service's processes by the name the report gives them (`api`, `worker`, or `service`). */
  processes: Record<string, Child>;
  baseUrl: string;
  env: Record<string, string>;
  stop: () => Promise<void>;
  /** Throws with the log tails when a process has died. */
  assertAlive: () => void;
  /** With `heapProbe`: forces a full garbage collection in the api process and reads its memory then. */
  apiHeapAfterGc: () => Promise<HeapAfterGc>;
}

/**
 * The service as in production: one `api` process and one `worker` process, both
 * `node dist/src/main.js` (migrations run at start under the advisory lock).
 */
export async function startService(options: ServiceOptions): Promise<Service> {
  const port = await freePort();
  const env: Record<string, string> = {
    APP_ENV: 'development',
    DATABASE_URL: options.databaseUrl,
    REDIS_URL,
    ADMIN_TOKEN: options.secrets.adminToken,
    INGEST_TOKEN: options.secrets.ingestToken,
    SECRETS_KEY: options.secrets.secretsKey,
    QUEUE_PREFIX: options.queuePrefix,
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    // As in production: APP_ENV=development (for loopback receivers) would otherwise check every tool result against its outputSchema.
    MCP_CHECK_RESULTS: 'false',
    ...options.env,
  };
  const base: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', ...env };
  const main = join(options.root, 'dist/src/main.js');
  // BENCH_NODE_ARGS: extra node flags for the service processes, e.g. for profiling
  // (`--prof --logfile=/tmp/x-%p.log --no-logfile-per-isolate`); %p becomes the role.
  const nodeArgs = (role: string) =>
    (process.env.BENCH_NODE_ARGS ?? '')
      .split(' ')
      .filter(Boolean)
      .map((a) => a.replace('%p', `${options.label}-${role}`));
  // BENCH_PROFILE_DIR: CPU-profile both processes; <dir>/<label>-<role>.cpuprofile is written at stop
  // (summarise with bench/profile-summary.ts).
  const profileDir = process.env.BENCH_PROFILE_DIR;
  const profiling = (role: string) =>
    profileDir
      ? {
          args: ['-r', join(options.root, 'bench/lib/profile-preload.js')],
          env: { BENCH_PROFILE_DIR: profileDir, BENCH_PROFILE_NAME: `${options.label}-${role}` },
        }
      : { args: [], env: {} };
  // heapProbe: the api process forces a full GC on SIGURG and writes its memory then (and, with
  // BENCH_HEAP_SNAPSHOTS=1, a heap snapshot) to <logdir>/heap/<label>-api-<n>.json.
  const heapDir = join(logDirectory(), 'heap');
  const heapProbe = (role: string) =>
    options.heapProbe && role !== 'worker'
      ? {
          args: ['-r', join(options.root, 'bench/lib/heap-preload.js')],
          env: { BENCH_HEAP_DIR: heapDir, BENCH_HEAP_NAME: `${options.label}-${role}`, BENCH_HEAP_SNAPSHOTS: process.env.BENCH_HEAP_SNAPSHOTS ?? '' },
        }
      : { args: [], env: {} };
  const start = (role: 'api' | 'worker' | 'all', port: string, extra: Record<string, string> = {}) =>
    startProcess(
      `${options.label}-${role}`,
      process.execPath,
      [...nodeArgs(role), ...profiling(role).args, ...heapProbe(role).args, '-r', join(options.root, 'bench/lib/statements-preload.js'), main],
      { ...base, ...profiling(role).env, ...heapProbe(role).env, BENCH_STATEMENTS_DIR: statementsDirectory(), PROCESS_ROLE: role, PORT: port, ...extra },
      options.root,
    );
  const allInOne = options.roles === 'all';
  const scrapeMs = (options.scrapeSeconds ?? 0) * 1000;
  const workerMetricsPort = !allInOne && scrapeMs > 0 ? await freePort() : undefined;
  const api = start(allInOne ? 'all' : 'api', String(port));
  const worker = allInOne ? api : start('worker', '0', workerMetricsPort ? { METRICS_PORT: String(workerMetricsPort) } : {});
  const processes: Record<string, Child> = allInOne ? { service: api } : { api, worker };
  const children = Object.values(processes);
  const baseUrl = `http://127.0.0.1:${port}`;
  const assertAlive = () => {
    for (const child of children) {
      if (!childAlive(child)) {
        throw new FatalError(`${child.name} exited with ${child.exitCode}; last lines of ${child.logFile}:\n${tailOf(child)}`);
      }
    }
  };
  const scraper =
    scrapeMs > 0 ? scrapeEvery(scrapeMs, [`${baseUrl}/metrics`, ...(workerMetricsPort ? [`http://127.0.0.1:${workerMetricsPort}/metrics`] : [])]) : undefined;
  let probes = 0;
  const apiHeapAfterGc = async (): Promise<HeapAfterGc> => {
    if (!options.heapProbe) throw new Error('apiHeapAfterGc needs the service started with heapProbe');
    assertAlive();
    probes += 1;
    const file = join(heapDir, `${api.name}-${probes}.json`);
    api.proc.kill('SIGURG');
    const memory = await waitUntil(
      `${file} (the api's memory after a full GC)`,
      async () => {
        assertAlive();
        return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as HeapAfterGc) : undefined;
      },
      300_000,
      100,
    );
    return { heapUsed: memory.heapUsed, rss: memory.rss, snapshot: memory.snapshot };
  };
  const stop = async () => {
    scraper?.stop();
    if (profileDir && children.every(childAlive)) {
      for (const child of children) child.proc.kill('SIGWINCH');
      await sleep(2000);
    }
    await Promise.all(children.map((child) => stopChild(child)));
  };
  try {
    await waitUntil(
      `${baseUrl}/ready`,
      async () => {
        assertAlive();
        const res = await request(`${baseUrl}/ready`, { headersTimeout: 3000, bodyTimeout: 3000 });
        await res.body.text();
        return res.statusCode === 200;
      },
      120_000,
      250,
    );
    assertAlive();
    // Profiling: drop what start-up cost (module loading, migrations) from the profile.
    if (profileDir) for (const child of children) child.proc.kill('SIGWINCH');
  } catch (error) {
    await stop();
    throw error;
  }
  return { api, worker, processes, baseUrl, env, stop, assertAlive, apiHeapAfterGc };
}

/** Reads each URL every `everyMs`, as a Prometheus scrape would (the body read whole, then dropped); a failed read is retried at the next tick. */
function scrapeEvery(everyMs: number, urls: string[]): { stop: () => void } {
  const scrape = () =>
    urls.forEach(
      (url) =>
        void request(url, { headersTimeout: 10_000, bodyTimeout: 10_000 })
          .then((res) => res.body.text())
          .catch(() => undefined),
    );
  const timer = setInterval(scrape, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
