import { Agent, IncomingMessage, request as httpRequest } from 'node:http';
import { request } from 'undici';
import { ServiceApi } from '../lib/api';
import { RunContext, Scenario9Result, startScenarioService, windows } from '../lib/context';
import { processMemory } from '../lib/infra';
import { Ingestor, makeTargets } from '../lib/load';
import { Monitor } from '../lib/monitor';
import { fmtMb, fmtMs, fmtNum, log, percentilesOf, sleep } from '../lib/util';
import { procsOf } from './passes';

/** Open live streams (GET /live/events), dealt to PERSONS people, STREAMS_PER_PERSON each. */
const STREAMS = 1000;
const PERSONS = 100;
const STREAMS_PER_PERSON = STREAMS / PERSONS;
/** Streams whose every event is parsed for its latency; the others only count their message.received events. */
const TIMED_STREAMS = 100;
const RATE = 200;
const RECEIVED = 'event: message.received\n';

/** One SSE client: counts message.received frames; a timed one records each frame's commit-to-arrival time. */
class LiveClient {
  received = 0;
  private tail = '';
  private response?: IncomingMessage;

  constructor(
    private readonly timed: boolean,
    private readonly latencies: number[],
  ) {}

  open(baseUrl: string, cookie: string, agent: Agent): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(new URL('/live/events', baseUrl), { agent, headers: { cookie, accept: 'text/event-stream' } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`GET /live/events answered ${res.statusCode}`));
        this.response = res;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => this.take(chunk));
        res.on('error', () => undefined);
        resolve();
      });
      req.on('error', reject);
      req.end();
    });
  }

  close(): void {
    this.response?.destroy();
  }

  private take(chunk: string): void {
    const now = Date.now();
    const text = this.tail + chunk;
    let from = 0;
    for (;;) {
      const at = text.indexOf(RECEIVED, from);
      if (at < 0) break;
      const end = text.indexOf('\n\n', at);
      if (end < 0) break; // the frame's end is in the next chunk
      this.received += 1;
      if (this.timed) {
        const stamp = text.indexOf('"at":"', at);
        if (stamp >= 0 && stamp < end) this.latencies.push(now - Date.parse(text.slice(stamp + 6, text.indexOf('"', stamp + 6))));
      }
      from = end + 2;
    }
    const lastEnd = text.lastIndexOf('\n\n');
    this.tail = text.slice(Math.max(from, lastEnd >= 0 ? lastEnd + 2 : 0));
  }
}

/** RSS (from /proc) and used heap (the process's /metrics) of the api process, as they are (garbage not yet collected included). */
export async function apiMemory(baseUrl: string, pid: number): Promise<{ rss: number; heap: number }> {
  const res = await request(`${baseUrl}/metrics`, { headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await res.body.text();
  const heap = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? NaN);
  return { rss: processMemory(pid).rss, heap };
}

/**
 * Scenario 9, live updates: 1,000 open server-sent event streams (100 people, 10 streams each, all
 * members of one line) on one `api` process, the relay in its `worker`, while inbound SMS arrive at
 * 200 a second through the real ingest route. Each stream should be told of every message: what
 * arrives is counted, and on 100 of the streams each event's time from its commit (the outbox row's
 * occurred_at, sent as `at`) to its arrival is taken. The api's memory before the streams open,
 * with them open, under load, and after they closed; before, open and closed also right after a
 * full garbage collection forced in the api (bench/lib/heap-preload.js): what it holds, apart from
 * garbage V8 had not collected yet. Not under load: the collection would pause the streams measured.
 */
export async function scenario9(ctx: RunContext): Promise<Scenario9Result> {
  const w = windows(ctx.options);
  log(`\nScenario 9: live updates, ${STREAMS} streams of ${PERSONS} people, ${RATE} inbound SMS/s`);
  const svc = await startScenarioService(ctx, 's9', { LIVE_STREAMS_PER_PERSON: String(STREAMS_PER_PERSON) }, 'split', { heapProbe: true });
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const ingest = new Ingestor(svc.baseUrl, ctx.secrets.ingestToken, Math.max(ctx.options.ingestConcurrency, 32), ctx.options.smsBytes);
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const latencies: number[] = [];
  const clients: LiveClient[] = [];
  try {
    const org = await api.createOrg('bench s9');
    const line = await api.createPhoneLine(org.id);
    const cookies: string[] = [];
    for (let i = 0; i < PERSONS; i += 1) {
      const user = await api.createUser(org.id, `s9-u${i}`);
      await api.addMember(line.id, user.id);
      cookies.push(await api.signInCookie(user.id));
    }
    await sleep(2000);
    const before = await apiMemory(svc.baseUrl, svc.api.pid);
    const retainedBefore = (await svc.apiHeapAfterGc()).heapUsed;
    for (let i = 0; i < STREAMS; i += 1) {
      const client = new LiveClient(i % (STREAMS / TIMED_STREAMS) === 0, latencies);
      await client.open(svc.baseUrl, cookies[i % PERSONS], agent);
      clients.push(client);
    }
    const opened = await apiMemory(svc.baseUrl, svc.api.pid);
    const retainedOpened = (await svc.apiHeapAfterGc()).heapUsed;
    log(
      `  ${STREAMS} streams open: api RSS ${fmtMb(before.rss)} → ${fmtMb(opened.rss)}, heap ${fmtMb(before.heap)} → ${fmtMb(opened.heap)}, ` +
        `after a full GC ${fmtMb(retainedBefore)} → ${fmtMb(retainedOpened)} (${fmtNum((retainedOpened - retainedBefore) / STREAMS / 1024, 1)} KB a stream)`,
    );

    const seconds = w.fixed / 1000;
    const monitor = new Monitor(ctx.database, procsOf(ctx, svc));
    await monitor.start();
    const targets = makeTargets([line.address], 1000);
    let during = { rss: 0, heap: 0 };
    const sampling = (async () => {
      await sleep(w.fixed * 0.8);
      during = await apiMemory(svc.baseUrl, svc.api.pid);
    })();
    const sent = await ingest.fixedRate(targets, RATE, w.fixed);
    await sampling;
    const cpu = await monitor.stop();
    const expectedPerStream = ingest.accepted;
    const expected = expectedPerStream * STREAMS;
    const total = () => clients.reduce((sum, c) => sum + c.received, 0);
    // Drain: until every stream has everything, or nothing arrives for 3 s (at most 30 s).
    const drainEnd = Date.now() + 30_000;
    let last = -1;
    let still = Date.now();
    while (Date.now() < drainEnd && total() < expected) {
      await sleep(250);
      const now = total();
      if (now !== last) {
        last = now;
        still = Date.now();
      } else if (Date.now() - still > 3000) break;
    }
    const received = total();
    const latency = percentilesOf(latencies);
    for (const client of clients) client.close();
    // What the streams leave behind: the used heap as it is then still holds the load's garbage
    // (V8 collects when it allocates or, idle, when its memory reducer runs), so the figure that
    // counts is the one after a full collection.
    await sleep(2000);
    const after = await apiMemory(svc.baseUrl, svc.api.pid);
    const retainedAfter = (await svc.apiHeapAfterGc()).heapUsed;
    const result: Scenario9Result = {
      streams: STREAMS,
      persons: PERSONS,
      rate: RATE,
      seconds,
      planned: sent.planned,
      accepted: ingest.accepted,
      failed: ingest.failed,
      expected,
      received,
      latency,
      memory: { before, opened, during, after },
      heapAfterGc: { before: retainedBefore, opened: retainedOpened, after: retainedAfter },
      cpu,
    };
    log(
      `  S9: ${fmtNum(ingest.accepted / seconds)} inbound SMS/s for ${seconds} s (${ingest.failed} failed); events received ${fmtNum(received)} of ${fmtNum(expected)}; ` +
        `commit → stream p50 ${fmtMs(latency.p50)} p99 ${fmtMs(latency.p99)} max ${fmtMs(latency.max)} (${fmtNum(latency.count)} timed)`,
    );
    log(
      `  api memory: before ${fmtMb(before.rss)} RSS / ${fmtMb(before.heap)} heap; streams open ${fmtMb(opened.rss)} / ${fmtMb(opened.heap)}; ` +
        `under load ${fmtMb(during.rss)} / ${fmtMb(during.heap)}; closed ${fmtMb(after.rss)} / ${fmtMb(after.heap)}; ` +
        `heap after a full GC: before ${fmtMb(retainedBefore)}, streams open ${fmtMb(retainedOpened)}, closed ${fmtMb(retainedAfter)}`,
    );
    return result;
  } finally {
    for (const client of clients) client.close();
    agent.destroy();
    await ingest.close().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
