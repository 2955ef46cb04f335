import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { freePort } from './support/delivery';
import { waitUntil } from './support/wait';

jest.setTimeout(120_000);

const ROOT = resolve(__dirname, '..');

/**
 * Issue 10, item 5d: bearer-like tokens in URLs never reach the logs. The service runs as it does
 * in production (`src/main.ts`, PROCESS_ROLE=api, LOG_LEVEL=info, JSON lines on stdout); the test
 * reads what it wrote for a tracking-pixel GET and HEAD and a signed attachment link.
 */
describe('request logs of the running service', () => {
  let child: ChildProcess | undefined;
  let output = '';
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env = {
      ...process.env,
      APP_ENV: 'production',
      PROCESS_ROLE: 'api',
      PORT: String(port),
      LOG_LEVEL: 'info',
      QUEUE_PREFIX: `${process.env.QUEUE_PREFIX ?? '{mss_test}'}logs`,
      TS_NODE_TRANSPILE_ONLY: '1',
    } as NodeJS.ProcessEnv;
    child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    await waitUntil(
      async () => {
        if (child!.exitCode !== null) throw new Error(`the service exited (${child!.exitCode}):\n${output.slice(-3000)}`);
        return (await fetch(`${base}/health`).catch(() => undefined))?.status === 200;
      },
      () => `the service to answer /health:\n${output.slice(-3000)}`,
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  });

  afterAll(async () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child!.once('exit', done));
    child.kill('SIGTERM');
    await exited;
  });

  /** The JSON log lines that carry this request id, once the "request completed" line is there. */
  async function linesOf(requestId: string): Promise<Array<Record<string, any>>> {
    return waitUntil(
      () => {
        const lines = output
          .split('\n')
          .filter((line) => line.includes(requestId))
          .map((line) => JSON.parse(line) as Record<string, any>);
        return lines.some((line) => line.msg === 'request completed') && lines;
      },
      () => `a "request completed" line for ${requestId} in:\n${output.slice(-3000)}`,
      { timeoutMs: 10_000 },
    );
  }

  it.each([
    ['GET', '/t/o/'],
    ['HEAD', '/t/o/'],
    ['GET', '/T/O/'],
  ])('%s %s<token>: the token is in no log line; the path shows [redacted]', async (method, prefix) => {
    const token = randomBytes(18).toString('base64url');
    const requestId = `pixel-${randomUUID()}`;
    const res = await fetch(`${base}${prefix}${token}`, { method, headers: { 'X-Request-Id': requestId, 'User-Agent': 'Mozilla/5.0' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/gif');
    const lines = await linesOf(requestId);
    expect(lines.find((line) => line.msg === 'request completed')).toMatchObject({
      level: 30,
      req: { id: requestId, method, url: `${prefix}[redacted]` },
      res: { statusCode: 200 },
    });
    expect(output).not.toContain(token);
  });

  it('a signed attachment link: neither its signature nor its expiry is logged', async () => {
    const sig = randomBytes(32).toString('hex');
    const requestId = `download-${randomUUID()}`;
    const id = randomUUID();
    const res = await fetch(`${base}/attachments/${id}/download?expires=${Math.floor(Date.now() / 1000) + 3600}&sig=${sig}`, {
      headers: { 'X-Request-Id': requestId },
    });
    expect([403, 404]).toContain(res.status);
    const lines = await linesOf(requestId);
    expect(lines.find((line) => line.msg === 'request completed')).toMatchObject({ req: { id: requestId, url: `/attachments/${id}/download` } });
    expect(output).not.toContain(sig);
  });
});
