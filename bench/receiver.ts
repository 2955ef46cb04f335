/**
 * The webhook receiver of the benchmark: a child process of bench/run.ts (IPC for control).
 *
 * It listens on RECEIVER_PORTS ports of 127.0.0.1 (one per endpoint, so each endpoint is its own
 * origin as it would be in real life), with one behaviour per path prefix:
 *   /ok/<tag>    200 at once
 *   /fail/<tag>  500, except every FAIL_OK_EVERY-th request of that path (200), see below
 *   /hang/<tag>  never answers (the socket is closed after HANG_MS), same exception
 * Each request's signature is verified with the project's own receiver helper (dist/src/sdk), as a
 * real subscriber would, and recorded: envelope id, createdAt, arrival time, behaviour, status.
 *
 * The exception exists because the service disables an endpoint after 100 consecutive failed
 * attempts (docs/webhooks.md, "Auto-disable"): an occasional 2xx keeps a failing endpoint active, so it
 * keeps loading the worker for the whole measuring window. 0 turns it off.
 */
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';

type Kind = 'ok' | 'fail' | 'hang' | 'other';
const KIND_CODE: Record<Kind, number> = { ok: 0, fail: 1, hang: 2, other: 3 };
const KINDS: Kind[] = ['ok', 'fail', 'hang', 'other'];

interface Sample {
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
}

type Verify = (body: Buffer, header: string | undefined, secrets: string[], options: { toleranceSeconds: number }) => unknown;

function loadVerifier(): Verify {
  try {
    // The project's own receiver helper, as subscribers are told to use it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(join(process.cwd(), 'dist/src/sdk')).verifyWebhook as Verify;
  } catch {
    // Fallback (no build): the same scheme written out.
    return (body, header, secrets) => {
      const parts = String(header ?? '')
        .split(',')
        .map((p) => p.trim().split('='));
      const t = parts.find(([k]) => k === 't')?.[1];
      const sigs = parts.filter(([k]) => k === 'v1').map(([, v]) => Buffer.from(v));
      for (const secret of secrets) {
        const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex'));
        if (sigs.some((s) => s.length === expected.length && timingSafeEqual(s, expected))) return true;
      }
      throw new Error('SIGNATURE_MISMATCH');
    };
  }
}

const verify = loadVerifier();
const portCount = Number(process.env.RECEIVER_PORTS ?? '1');
let failOkEvery = Number(process.env.FAIL_OK_EVERY ?? '50');
let hangMs = Number(process.env.HANG_MS ?? '120000');
const secrets = new Map<string, string[]>();

// ---- records (column arrays, cheap to append) -------------------------------------------------
let recvAt: number[] = [];
let createdAt: number[] = [];
let kindOf: number[] = [];
let statusOf: number[] = [];
let dupOf: number[] = [];
let seen = new Map<string, number>();
let counts = { total: 0, verified: 0, badSignature: 0, noSecret: 0, byKind: [0, 0, 0, 0] as number[], uniqueByKind: [0, 0, 0, 0] as number[], answered2xx: 0 };
const perPath = new Map<string, number>();
let samples: Sample[] = [];
let sampleWanted = 0;
let badExamples: string[] = [];
const openHangs = new Set<ServerResponse>();

function reset(): void {
  recvAt = [];
  createdAt = [];
  kindOf = [];
  statusOf = [];
  dupOf = [];
  seen = new Map();
  counts = { total: 0, verified: 0, badSignature: 0, noSecret: 0, byKind: [0, 0, 0, 0], uniqueByKind: [0, 0, 0, 0], answered2xx: 0 };
  perPath.clear();
  samples = [];
  sampleWanted = 0;
  badExamples = [];
}

const now = () => performance.timeOrigin + performance.now();
const CREATED = /"createdAt":"([^"]+)"/;
const ID = /"id":"([^"]+)"/;
const SAMPLE_HEADERS = ['content-type', 'user-agent', 'x-service-signature', 'x-service-event-id', 'x-service-event-type'];

function handle(port: number, req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = now();
    const body = Buffer.concat(chunks);
    const path = (req.url ?? '/').split('?')[0];
    const kind: Kind = path.startsWith('/ok/') ? 'ok' : path.startsWith('/fail/') ? 'fail' : path.startsWith('/hang/') ? 'hang' : 'other';
    const head = body.subarray(0, 400).toString('utf8');
    const id = (req.headers['x-service-event-id'] as string | undefined) ?? ID.exec(head)?.[1] ?? '';
    const created = Date.parse(CREATED.exec(head)?.[1] ?? '');

    const endpointSecrets = secrets.get(path);
    if (!endpointSecrets) counts.noSecret += 1;
    else {
      try {
        verify(body, req.headers['x-service-signature'] as string | undefined, endpointSecrets, { toleranceSeconds: 3600 });
        counts.verified += 1;
      } catch (error) {
        counts.badSignature += 1;
        if (badExamples.length < 5) badExamples.push(`${path}: ${(error as Error).message}`);
      }
    }

    const n = (perPath.get(path) ?? 0) + 1;
    perPath.set(path, n);
    const okAnyway = failOkEvery > 0 && n % failOkEvery === 0;
    let status: number;
    if (kind === 'ok' || kind === 'other' || okAnyway) status = 200;
    else if (kind === 'fail') status = 500;
    else status = 0; // hang

    const prior = seen.get(id) ?? 0;
    seen.set(id, prior + 1);
    counts.total += 1;
    counts.byKind[KIND_CODE[kind]] += 1;
    if (prior === 0) counts.uniqueByKind[KIND_CODE[kind]] += 1;
    if (status === 200) counts.answered2xx += 1;
    recvAt.push(at);
    createdAt.push(created);
    kindOf.push(KIND_CODE[kind]);
    statusOf.push(status);
    dupOf.push(prior > 0 ? 1 : 0);

    if (sampleWanted > samples.length && kind === 'ok') {
      const headers: Record<string, string> = {};
      for (const name of SAMPLE_HEADERS) if (req.headers[name] !== undefined) headers[name] = String(req.headers[name]);
      samples.push({ port, path, headers, body: body.toString('utf8') });
    }

    if (status === 0) {
      openHangs.add(res);
      const timer = setTimeout(() => res.destroy(), hangMs);
      res.on('close', () => {
        clearTimeout(timer);
        openHangs.delete(res);
      });
      return;
    }
    res.writeHead(status, { 'content-type': 'text/plain', 'content-length': status === 200 ? '2' : '4' });
    res.end(status === 200 ? 'ok' : 'fail');
  });
}

interface WindowQuery {
  recvFrom?: number;
  recvTo?: number;
  createdFrom?: number;
  createdTo?: number;
  kind?: Kind;
  /** Return the latency list (first arrivals answered 2xx only). */
  latencies?: boolean;
}

function windowStats(q: WindowQuery) {
  const kindCode = q.kind === undefined ? -1 : KIND_CODE[q.kind];
  let requests = 0;
  let ok2xx = 0;
  let firsts = 0;
  let dups = 0;
  const byKind = [0, 0, 0, 0];
  const latencies: number[] = [];
  for (let i = 0; i < recvAt.length; i += 1) {
    if (q.recvFrom !== undefined && recvAt[i] < q.recvFrom) continue;
    if (q.recvTo !== undefined && recvAt[i] >= q.recvTo) continue;
    if (q.createdFrom !== undefined && !(createdAt[i] >= q.createdFrom)) continue;
    if (q.createdTo !== undefined && !(createdAt[i] < q.createdTo)) continue;
    byKind[kindOf[i]] += 1;
    if (kindCode >= 0 && kindOf[i] !== kindCode) continue;
    requests += 1;
    if (dupOf[i]) dups += 1;
    else firsts += 1;
    if (statusOf[i] === 200) {
      ok2xx += 1;
      if (!dupOf[i] && q.latencies) latencies.push(Math.round((recvAt[i] - createdAt[i]) * 10) / 10);
    }
  }
  return { requests, ok2xx, firsts, dups, byKind: Object.fromEntries(KINDS.map((k, i) => [k, byKind[i]])), latencies: q.latencies ? latencies : undefined };
}

// ---- servers and control ----------------------------------------------------------------------
const servers: Server[] = [];

async function listenAll(): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < portCount; i += 1) {
    let port = 0;
    const server = createServer((req, res) => handle(port, req, res));
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    server.requestTimeout = 0;
    server.maxRequestsPerSocket = 0;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    servers.push(server);
    ports.push(port);
  }
  return ports;
}

type Command =
  | { cmd: 'reset' }
  | { cmd: 'config'; failOkEvery?: number; hangMs?: number }
  | { cmd: 'secrets'; entries: Array<[string, string[]]> }
  | { cmd: 'progress' }
  | { cmd: 'window'; query: WindowQuery }
  | { cmd: 'capture'; count: number }
  | { cmd: 'samples' }
  | { cmd: 'perPath' };

function answer(command: Command): unknown {
  switch (command.cmd) {
    case 'reset':
      reset();
      return { ok: true };
    case 'config':
      if (command.failOkEvery !== undefined) failOkEvery = command.failOkEvery;
      if (command.hangMs !== undefined) hangMs = command.hangMs;
      return { ok: true };
    case 'secrets':
      for (const [path, list] of command.entries) secrets.set(path, list);
      return { ok: true };
    case 'progress':
      return { ...counts, unique: seen.size, openHangs: openHangs.size, badExamples };
    case 'window':
      return windowStats(command.query);
    case 'capture':
      samples = [];
      sampleWanted = command.count;
      return { ok: true };
    case 'samples':
      return samples;
    case 'perPath':
      return Object.fromEntries(perPath);
  }
}

process.on('message', (message: { id: number; command: Command }) => {
  let result: unknown;
  try {
    result = answer(message.command);
  } catch (error) {
    result = { error: (error as Error).message };
  }
  process.send?.({ id: message.id, result });
});

// The harness gone (crash, SIGKILL): do not linger.
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => {
  for (const res of openHangs) res.destroy();
  for (const server of servers) server.close();
  process.exit(0);
});

void listenAll().then((ports) => process.send?.({ ready: true, ports }));
