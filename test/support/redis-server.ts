import { ChildProcess, spawn } from 'node:child_process';
import Redis from 'ioredis';
import { waitUntil } from './wait';

/** A private redis-server in the foreground on `port` (no persistence), answering PING before this resolves. */
export async function startRedisServer(port: number, options: { password?: string } = {}): Promise<ChildProcess> {
  const auth = options.password === undefined ? [] : ['--requirepass', options.password];
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', ...auth], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const probe = new Redis({ port, host: '127.0.0.1', password: options.password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`redis-server exited: ${output}`);
        try {
          if (probe.status !== 'ready') await probe.connect();
          return (await probe.ping()) === 'PONG';
        } catch {
          probe.disconnect();
          return false;
        }
      },
      `redis-server on port ${port}`,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    probe.disconnect();
  }
  return child;
}

/** Stops a child process this test started (by its own handle) and waits for it to exit. */
export async function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill(signal);
  await exited;
}
