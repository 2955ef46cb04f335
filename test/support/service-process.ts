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

/** Starts the service with `env` over process.env on a free port; resolves once `readyPath` answers 200. */
export async function startServiceProcess(env: Record<string, string>, readyPath = '/health'): Promise<ServiceProcess> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let output = '';
  const child: ChildProcess = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), TS_NODE_TRANSPILE_ONLY: '1' },
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
  try {
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode}):\n${output.slice(-3000)}`);
        return (await fetch(`${base}${readyPath}`).catch(() => undefined))?.status === 200;
      },
      () => `the service to answer ${readyPath}:\n${output.slice(-3000)}`,
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { base, output: () => output, stop };
}
