import { ChildProcess, fork, spawn } from 'node:child_process';
import { createWriteStream, readFileSync, WriteStream } from 'node:fs';
import { join } from 'node:path';
import { FatalError, freePort, log, sleep, waitUntil } from './util';

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  logFile: string;
  exited: Promise<number | null>;
  exitCode?: number | null;
}

const children = new Set<Child>();
const cleanups: Array<{ name: string; run: () => Promise<void> }> = [];
let logDir = '/tmp';

export function setLogDir(dir: string): void {
  logDir = dir;
}

export function logDirectory(): string {
  return logDir;
}

/** Where the service processes write their running statement counts (bench/lib/statements-preload.js), one file per pid. */
export function statementsDirectory(): string {
  return join(logDir, 'statements');
}

/**
 * The statements process `pid` has sent so far (statements-preload.js; NaN when it wrote none).
 * The process writes the count in place, so a read is taken only once a second read agrees with it.
 */
export function statementsOf(pid: number): number {
  const file = join(statementsDirectory(), String(pid));
  const read = (): number => {
    try {
      const text = readFileSync(file, 'utf8').trim();
      return text === '' ? NaN : Number(text);
    } catch {
      return NaN;
    }
  };
  let last = read();
  for (let tries = 0; tries < 10; tries += 1) {
    const again = read();
    if (again === last || (Number.isNaN(again) && Number.isNaN(last))) return again;
    last = again;
  }
  return last;
}

function track(name: string, proc: ChildProcess): Child {
  if (proc.pid === undefined) throw new Error(`could not start ${name}`);
  const logFile = join(logDir, `${name}.log`);
  const out: WriteStream = createWriteStream(logFile, { flags: 'a' });
  // An IPC send to a child that has gone emits 'error': never let that crash the harness.
  proc.on('error', (error) => out.write(`[bench] child process error: ${error.message}\n`));
  proc.stdout?.pipe(out, { end: false });
  proc.stderr?.pipe(out, { end: false });
  const child: Child = {
    name,
    proc,
    pid: proc.pid,
    logFile,
    exited: new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        child.exitCode = code ?? (signal ? -1 : null);
        children.delete(child);
        resolve(child.exitCode);
      });
    }),
  };
  children.add(child);
  return child;
}

/** A plain process (the service: `node dist/src/main.js`), output to <logdir>/<name>.log. */
export function startProcess(name: string, command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Child {
  const proc = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  return track(name, proc);
}

/** A TypeScript child of the harness (receiver, bare app) with an IPC channel. */
export function forkTs(name: string, script: string, env: NodeJS.ProcessEnv, cwd: string, execArgv: string[] = []): Child {
  const proc = fork(script, [], {
    cwd,
    env,
    execArgv: [...execArgv, '-r', 'ts-node/register/transpile-only'],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  return track(name, proc);
}

/** SIGTERM, then SIGKILL after `graceMs`. */
export async function stopChild(child: Child, graceMs = 8000): Promise<void> {
  if (child.exitCode !== undefined) return;
  try {
    child.proc.kill('SIGTERM');
  } catch {
    return;
  }
  const timer = sleep(graceMs).then(() => 'timeout' as const);
  const outcome = await Promise.race([child.exited.then(() => 'exited' as const), timer]);
  if (outcome === 'timeout' && child.exitCode === undefined) {
    log(`  ${child.name} (pid ${child.pid}) did not stop within ${graceMs} ms: SIGKILL`);
    try {
      child.proc.kill('SIGKILL');
    } catch {
      // gone already
    }
    await Promise.race([child.exited, sleep(2000)]);
  }
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child)));
}

/** Registers a step for the final cleanup (drop the database, delete Redis keys); runs last-in first-out. */
export function onCleanup(name: string, run: () => Promise<void>): void {
  cleanups.push({ name, run });
}

let cleaning: Promise<void> | undefined;

/** Stops every child, then runs the cleanup steps; safe to call more than once. */
export function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    await stopAll();
    while (cleanups.length) {
      const step = cleanups.pop()!;
      try {
        await step.run();
      } catch (error) {
        log(`  cleanup "${step.name}" failed: ${(error as Error).message}`);
      }
    }
  })();
  return cleaning;
}

/** SIGINT/SIGTERM and fatal errors still stop the children and drop the database. */
export function installSignalHandlers(): void {
  let interrupted = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted += 1;
    if (interrupted > 1) {
      log(`${signal} again: exiting without waiting`);
      for (const child of children) child.proc.kill('SIGKILL');
      process.exit(130);
    }
    log(`\n${signal}: stopping the children and dropping the bench database (again to force)…`);
    void cleanupAll().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  // Whatever throws while we stop (a scenario still talking to a child that is gone), the
  // cleanup runs to its end and the process exits with an error.
  const onFatal = (error: unknown) => {
    if (cleaning) return; // already stopping: errors of the interrupted scenario are expected
    log(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    void cleanupAll().finally(() => process.exit(1));
  };
  process.on('uncaughtException', onFatal);
  process.on('unhandledRejection', onFatal);
}

export function isStopping(): boolean {
  return cleaning !== undefined;
}

export function tailOf(child: Child, lines = 30): string {
  try {
    const text = readFileSync(child.logFile, 'utf8').trimEnd().split('\n');
    return text.slice(-lines).join('\n');
  } catch {
    return '';
  }
}

export function childAlive(child: Child): boolean {
  return child.exitCode === undefined;
}

/** bench/bare-app.ts started on a free port against `databaseUrl`, once it answers /health: the limit scenarios 3 and 8 compare with. */
export function startBareApp(root: string, databaseUrl: string): Promise<{ child: Child; url: string }> {
  return startTsApp(root, 'bare-app', 'bench/bare-app.ts', { ...process.env, DATABASE_URL: databaseUrl });
}

/**
 * bench/sdk-peer.ts (scenario 10's peer: the official SDK's server over the service's built code)
 * with the service's environment `env`, once it answers /health. With BENCH_PROFILE_DIR it is
 * CPU-profiled like the service's processes (bench/lib/profile-preload.js): stop it with stopProfiled.
 */
export function startSdkPeer(root: string, env: NodeJS.ProcessEnv): Promise<{ child: Child; url: string }> {
  const profileDir = process.env.BENCH_PROFILE_DIR;
  const profiling = profileDir ? { BENCH_PROFILE_DIR: profileDir, BENCH_PROFILE_NAME: 's10-sdk-peer' } : {};
  const preload = profileDir ? ['-r', join(root, 'bench/lib/profile-preload.js')] : [];
  return startTsApp(root, 'sdk-peer', 'bench/sdk-peer.ts', { ...env, ...profiling }, preload);
}

/** Stops a child started with the profile preload: SIGWINCH (the profile is written), then stopChild. */
export async function stopProfiled(child: Child, graceMs?: number): Promise<void> {
  if (process.env.BENCH_PROFILE_DIR && childAlive(child)) {
    child.proc.kill('SIGWINCH');
    await sleep(2000);
  }
  await stopChild(child, graceMs);
}

/** A TypeScript app of the bench (`script`, relative to `root`) on a free port, once it answers GET /health. */
async function startTsApp(root: string, name: string, script: string, env: NodeJS.ProcessEnv, execArgv: string[] = []): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = forkTs(name, join(root, script), { ...env, PORT: String(port) }, root, execArgv);
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(
    `the ${name}`,
    async () => {
      if (child.exitCode !== undefined) throw new FatalError(`${name} exited (${child.exitCode}); see ${child.logFile}`);
      return (await fetch(`${url}/health`)).ok;
    },
    120_000,
    200,
  );
  return { child, url };
}
