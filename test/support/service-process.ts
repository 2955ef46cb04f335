import { ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { freePort } from './delivery';
import { waitUntil } from './wait';

const ROOT = resolve(__dirname, '../..');

/** The service run as in production (`src/main.ts`, its own process), for what only a whole process shows: logs, traces. */
export interface ServiceProcess {
  base: string;
  /** Everything it wrote on stdout and stderr so far. */
  output: () => string;
  /** SIGTERM, then waits for it to exit (its shutdown hooks run). */
  stop: () => Promise<void>;
}

/** `src/main.ts` spawned with `env` over process.env (a variable set to undefined is removed). */
function spawnService(env: Record<string, string | undefined>): { child: ChildProcess; output: () => string; stop: () => Promise<void> } {
  let output = '';
  const merged: NodeJS.ProcessEnv = { ...process.env, ...env, TS_NODE_TRANSPILE_ONLY: '1' };
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
  const child: ChildProcess = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
    cwd: ROOT,
    env: merged,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await exited;
  };
  return { child, output: () => output, stop };
}

/** Starts the service with `env` over process.env on a free port; resolves once `readyPath` answers 200. */
export async function startServiceProcess(env: Record<string, string>, readyPath = '/health'): Promise<ServiceProcess> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const { child, output, stop } = spawnService({ ...env, PORT: String(port) });
  try {
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode}):\n${output().slice(-3000)}`);
        return (await fetch(`${base}${readyPath}`).catch(() => undefined))?.status === 200;
      },
      () => `the service to answer ${readyPath}:\n${output().slice(-3000)}`,
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { base, output, stop };
}

/** Starts the service as PROCESS_ROLE=worker with `env` over process.env; resolves once it logged "worker started". */
export async function startWorkerProcess(env: Record<string, string | undefined>): Promise<Omit<ServiceProcess, 'base'>> {
  const { child, output, stop } = spawnService({ ...env, PROCESS_ROLE: 'worker' });
  try {
    await waitUntil(
      () => {
        if (child.exitCode !== null) throw new Error(`the worker exited (${child.exitCode}):\n${output().slice(-3000)}`);
        return output().includes('worker started');
      },
      () => `the worker to start:\n${output().slice(-3000)}`,
      { timeoutMs: 120_000, intervalMs: 200 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { output, stop };
}
