import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { AddressInfo, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { runMigrations } from '../../../src/database/migrate';
import { ADMIN_TOKEN, BASE_DATABASE_URL, INGEST_TOKEN } from '../../support/test-env';

/**
 * The pieces a reliability test assembles: the service as separate `api` and `worker` processes
 * (compiled JavaScript, as in production), private redis-server and PostgreSQL instances it may
 * stop at will, and a database of its own on the shared PostgreSQL.
 *
 * Every child is stopped through its own handle (never by name), in afterAll and, as a last
 * resort, when the Jest process exits.
 */

export const ROOT = resolve(__dirname, '../../..');
/** Where the suite keeps its build and results (inside node_modules, so compiled files find their packages). */
export const CACHE_DIR = join(ROOT, 'node_modules/.cache/mss-reliability');

/** This run's compiled service (one per run, so two runs never share or delete each other's). */
export function buildDir(): string {
  return process.env.RELIABILITY_BUILD_DIR ?? join(CACHE_DIR, `build-${process.env.TEST_RUN_ID ?? 'local'}`);
}

function mainJs(build = buildDir()): string {
  return join(build, 'src/main.js');
}

/**
 * The service as it was at `commit` (an older build, for tests of a rolling upgrade), compiled
 * once per run next to this run's build: the commit's src/ (and what tsconfig.build.json
 * includes) from `git archive`, compiled as the global setup compiles the current one. Answers
 * the build directory to pass as `build` to ServiceProcess.start or startStack.
 */
export function compileBuildOf(commit: string): string {
  const dir = join(CACHE_DIR, `build-${process.env.TEST_RUN_ID ?? 'local'}-${commit.slice(0, 12)}`);
  if (existsSync(join(dir, 'src/main.js'))) return dir;
  const sources = `${dir}-src`;
  rmSync(sources, { recursive: true, force: true });
  mkdirSync(sources, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${commit} src ormconfig.ts scripts tsconfig.json tsconfig.build.json | tar -x -C ${sources}`], { cwd: ROOT });
  compileService(sources, dir, `${commit}'s src/`);
  rmSync(sources, { recursive: true, force: true });
  return dir;
}

/** tsc of the tree at `sources` (its tsconfig.build.json) into `outDir`, without type checks (fast). */
export function compileService(sources: string, outDir: string, what: string): void {
  const tsc = spawnSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/typescript/bin/tsc'),
      '-p',
      'tsconfig.build.json',
      '--outDir',
      outDir,
      '--incremental',
      'false',
      '--noCheck',
      '--sourceMap',
      'false',
    ],
    { cwd: sources, encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`compiling ${what} failed:\n${tsc.stdout}\n${tsc.stderr}`);
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

/** Polls `probe` until it returns something truthy; throws naming `what` after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  what: string,
  timeoutMs: number,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      last = await probe();
      if (last) return last as T;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    await sleep(intervalMs);
  }
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** Run-scoped name: `mss_rel_<run id>_<tag>`. */
function runName(tag: string): string {
  const run = process.env.TEST_RUN_ID ?? `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  return `mss_rel_${run}_${tag}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

export function logDir(): string {
  const dir = process.env.RELIABILITY_LOG_DIR ?? join(tmpdir(), 'mss-reliability-logs');
  mkdirSync(dir, { recursive: true });
  return dir;
}

// ---------------------------------------------------------------------------------------------
// Databases on the shared PostgreSQL (never stopped: other engineers use it)

export function urlWithDatabase(base: string, database: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * A migrated database of this test's own on the shared PostgreSQL; `drop()` removes it.
 * `before`: only the migrations older than that timestamp (an installation before an upgrade).
 */
export async function createDatabase(
  tag: string,
  base = BASE_DATABASE_URL,
  migrations: { before?: number } = {},
): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = runName(tag);
  const admin = new Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = urlWithDatabase(base, name);
  await runMigrations(url, migrations);
  return {
    url,
    name,
    drop: async () => {
      if (process.env.KEEP_TEST_DATABASE === '1') return;
      const c = new Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await c.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Child processes

export interface ServiceOptions {
  name: string;
  role: 'api' | 'worker' | 'all';
  env: Record<string, string>;
  /** HTTP port for api/all (chosen when absent). */
  port?: number;
  startTimeoutMs?: number;
  /** Another build of the service (compileBuildOf); this run's build by default. */
  build?: string;
}

/** One process of the service: `node <build>/src/main.js` with PROCESS_ROLE set, logs to a file. */
export class ServiceProcess {
  child?: ChildProcess;
  readonly port: number;
  readonly logFile: string;
  private output = '';
  starts = 0;
  lastStartMs = 0;

  private constructor(
    readonly options: ServiceOptions,
    port: number,
  ) {
    this.port = port;
    this.logFile = join(logDir(), `${runName(options.name)}.log`);
  }

  static async start(options: ServiceOptions): Promise<ServiceProcess> {
    const service = new ServiceProcess(options, options.port ?? (options.role === 'worker' ? 0 : await freePort()));
    await service.restart();
    return service;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get alive(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process (again) and resolves once it logged that it is ready. */
  async restart(): Promise<number> {
    if (this.alive) throw new Error(`${this.options.name} is still running`);
    const main = mainJs(this.options.build);
    if (!existsSync(main)) throw new Error(`${main} is missing: the reliability global setup compiles it`);
    const started = Date.now();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ADMIN_TOKEN,
      INGEST_TOKEN,
      SECRETS_KEY: SHARED_SECRETS_KEY,
      LOG_LEVEL: 'info',
      PUBLIC_BASE_URL: 'http://127.0.0.1:3000',
      ...this.options.env,
      PROCESS_ROLE: this.options.role,
      PORT: String(this.port),
    };
    const child = spawn(process.execPath, [main], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    appendLog(this.logFile, `--- start ${this.starts + 1} of ${this.options.name} at ${new Date().toISOString()}\n`);
    children.add(child);
    this.child = child;
    this.output = '';
    this.starts += 1;
    // A worker logs "worker started" (LOG_LEVEL info or lower); an HTTP process is ready when
    // GET /health answers, whatever its log level (request logs at info would cost CPU under load).
    const isWorker = this.options.role === 'worker';
    let exited: Error | undefined;
    let marked = false;
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      this.output += text;
      if (this.output.length > 400_000) this.output = this.output.slice(-200_000);
      appendLog(this.logFile, text);
      if (!marked && this.output.includes('worker started')) marked = true;
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      children.delete(child);
      exited = new Error(`${this.options.name} exited (${code ?? signal}) before it was ready:\n${this.output.slice(-3000)}`);
    });
    const deadline = Date.now() + (this.options.startTimeoutMs ?? 60_000);
    for (;;) {
      if (exited) throw exited;
      if (isWorker ? marked : (await fetch(`${this.baseUrl}/health`).catch(() => undefined))?.status === 200) break;
      if (Date.now() > deadline) {
        throw new Error(`${this.options.name} not ready within ${this.options.startTimeoutMs ?? 60_000} ms:\n${this.output.slice(-3000)}`);
      }
      await sleep(isWorker ? 50 : 100);
    }
    this.lastStartMs = Date.now() - started;
    return this.lastStartMs;
  }

  /** Sends `signal` and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
    children.delete(child);
  }

  /** The lines of its log that look like errors (pino level >= 50, or a stack). */
  errorLines(): string[] {
    return this.logLines().filter((line) => /"level":(50|60)\b|startup failed|Unhandled|FATAL/.test(line));
  }

  /** Its warnings (pino level 40). */
  warningLines(): string[] {
    return this.logLines().filter((line) => /"level":40\b/.test(line));
  }

  private logLines(): string[] {
    flushLogs();
    const text = existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : this.output;
    return text.split('\n');
  }
}

/** One key for every process of a run, so api and worker processes read each other's secrets. */
export const SHARED_SECRETS_KEY = randomBytes(32).toString('hex');

const logBuffers = new Map<string, string[]>();
let flushTimer: NodeJS.Timeout | undefined;
function appendLog(file: string, text: string): void {
  const pending = logBuffers.get(file) ?? [];
  pending.push(text);
  logBuffers.set(file, pending);
  if (!flushTimer) {
    flushTimer = setTimeout(flushLogs, 200);
    flushTimer.unref();
  }
}
function flushLogs(): void {
  flushTimer = undefined;
  for (const [file, chunks] of logBuffers) appendFileSync(file, chunks.join(''));
  logBuffers.clear();
}
process.on('exit', flushLogs);

// ---------------------------------------------------------------------------------------------
// A private redis-server

/** redis-server in the foreground on its own port, no persistence: a restart starts empty. */
export class PrivateRedis {
  child?: ChildProcess;
  private constructor(readonly port: number) {}

  static async start(port?: number): Promise<PrivateRedis> {
    const redis = new PrivateRedis(port ?? (await freePort()));
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    child.once('exit', () => children.delete(child));
    this.child = child;
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`redis-server exited: ${output}`);
        const probe = new Redis({ port: this.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        probe.on('error', () => undefined);
        try {
          await probe.connect();
          return (await probe.ping()) === 'PONG';
        } finally {
          probe.disconnect();
        }
      },
      `redis-server on port ${this.port}`,
      10_000,
    );
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill(signal);
    await exited;
  }
}

// ---------------------------------------------------------------------------------------------
// A private PostgreSQL cluster (initdb + pg_ctl), which a test may stop and start

/** The newest PostgreSQL server binaries on this machine, or null. */
export function postgresBinDir(): string | null {
  const fromEnv = process.env.PG_BIN_DIR;
  if (fromEnv && existsSync(join(fromEnv, 'initdb'))) return fromEnv;
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base)
      .filter((v) => existsSync(join(base, v, 'bin/initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length) return join(base, versions[0], 'bin');
  }
  const found = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  return found.status === 0 ? resolve(found.stdout.trim(), '..') : null;
}

export class PrivatePostgres {
  private constructor(
    readonly bin: string,
    readonly dir: string,
    readonly port: number,
    /** Runs a server binary as the right user: initdb and postgres refuse to run as root. */
    private readonly asUser: string | null,
  ) {}

  get dataDir(): string {
    return join(this.dir, 'data');
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** initdb into a fresh temporary directory, then start. Throws with what to install when impossible. */
  static async create(): Promise<PrivatePostgres> {
    const bin = postgresBinDir();
    if (!bin) throw new Error('no PostgreSQL server binaries (initdb) found; set PG_BIN_DIR');
    const dir = mkdtempSync(join(tmpdir(), 'mss-rel-pg-'));
    let asUser: string | null = null;
    if (userInfo().uid === 0) {
      asUser = 'postgres';
      const ids = spawnSync('id', ['-u', asUser], { encoding: 'utf8' });
      if (ids.status !== 0) throw new Error('running as root and there is no postgres user to run initdb as');
      const uid = Number(ids.stdout.trim());
      const gid = Number(spawnSync('id', ['-g', asUser], { encoding: 'utf8' }).stdout.trim());
      chownSync(dir, uid, gid);
      chmodSync(dir, 0o700);
    }
    const pg = new PrivatePostgres(bin, dir, await freePort(), asUser);
    pg.run('initdb', ['-D', pg.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    await pg.start();
    return pg;
  }

  private run(tool: string, args: string[]): string {
    const command = join(this.bin, tool);
    const [file, argv] = this.asUser ? ['runuser', ['-u', this.asUser, '--', command, ...args]] : [command, args];
    try {
      return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      const e = error as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${tool} ${args.join(' ')} failed: ${e.stderr || e.stdout || e.message}`);
    }
  }

  async start(): Promise<void> {
    this.run('pg_ctl', [
      '-D',
      this.dataDir,
      '-l',
      join(this.dir, 'server.log'),
      '-w',
      '-t',
      '30',
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
      'start',
    ]);
  }

  /** `fast`: clients are disconnected, open transactions roll back, committed work stays. */
  async stop(mode: 'fast' | 'immediate' | 'smart' = 'fast'): Promise<void> {
    this.run('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '30', 'stop']);
  }

  async destroy(): Promise<void> {
    try {
      await this.stop('immediate');
    } catch {
      // already stopped
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  async createDatabase(name: string): Promise<string> {
    const admin = new Client({ connectionString: this.url() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = this.url(name);
    await runMigrations(url);
    return url;
  }
}

/**
 * Waits until every delivery row in the database has succeeded (none pending, retrying or
 * failed), and answers the rows by status: `[{ status: 'succeeded', count }]` then.
 */
export function deliveriesAllSucceeded(db: Client, timeoutMs = 30_000): Promise<Array<{ status: string; count: number }>> {
  return waitFor(
    async () => {
      const r = await db.query(`SELECT status, count(*)::int AS count FROM webhook_deliveries GROUP BY status ORDER BY status`);
      return r.rows.every((row) => row.status === 'succeeded') && (r.rows as Array<{ status: string; count: number }>);
    },
    'every delivery row succeeded',
    timeoutMs,
    500,
  );
}
