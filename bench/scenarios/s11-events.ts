import { Agent, IncomingMessage, request as httpRequest } from 'node:http';
import { Pool } from 'undici';
import { ServiceApi, uniquePhone } from '../lib/api';
import { EventsPass, RunContext, Scenario11Result, startScenarioService, windows } from '../lib/context';
import { fmtMb, fmtMs, fmtNum, log, percentilesOf, sleep } from '../lib/util';
import { apiMemory } from './s9-live';

/** Inbound SMS per second while the agents wait: modest, as an agent's line sees them. */
const RATE = 2;
/** How long a poll may wait (ms): under EVENT_FEED_MAX_WAIT_MS (30 s). */
const POLL_TIMEOUT_MS = 20_000;
const KIND = 'message.received';
/** Each SMS carries its number in its text, so an agent can tell which one it sees. */
const TAG = /s11 #(\d+)#/g;

/** The numbers of the SMS a chunk of event JSON speaks of. */
function tagsIn(text: string): number[] {
  return [...text.matchAll(TAG)].map((m) => Number(m[1]));
}

/** What every agent records: each SMS it saw once, and the time from its sending to the sight. */
class Sightings {
  readonly latencies: number[] = [];
  private readonly seen: Array<Set<number>>;

  constructor(
    agents: number,
    private readonly sentAt: Map<number, number>,
  ) {
    this.seen = Array.from({ length: agents }, () => new Set());
  }

  take(agent: number, text: string): void {
    const now = Date.now();
    for (const n of tagsIn(text)) {
      const sent = this.sentAt.get(n);
      if (sent === undefined || this.seen[agent].has(n)) continue;
      this.seen[agent].add(n);
      this.latencies.push(now - sent);
    }
  }

  get total(): number {
    return this.seen.reduce((sum, s) => sum + s.size, 0);
  }
}

function rpc(id: number, method: string, params: object): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

/** Pass A: one `events/poll` long-poll loop per agent (raw JSON-RPC over a keep-alive connection). */
class PollAgent {
  private stopped = false;
  private id = 1;
  private cursor: string | null = null;
  errors = 0;
  lastError = '';

  constructor(
    private readonly index: number,
    private readonly pool: Pool,
    private readonly apiKey: string,
    private readonly line: string,
    private readonly sightings: Sightings,
  ) {}

  private async poll(timeoutMs: number): Promise<{ text: string; cursor: string; hasMore: boolean }> {
    const res = await this.pool.request({
      method: 'POST',
      path: '/api/mcp',
      headers: { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: rpc(this.id++, 'events/poll', { name: KIND, arguments: { line: this.line }, cursor: this.cursor, maxEvents: 100, timeoutMs }),
      headersTimeout: timeoutMs + 30_000,
      bodyTimeout: timeoutMs + 30_000,
    });
    const text = await res.body.text();
    const answer = JSON.parse(text) as { result?: { cursor: string; hasMore: boolean }; error?: { code: number; message: string } };
    if (res.statusCode !== 200 || !answer.result) throw new Error(`events/poll answered ${res.statusCode}: ${text.slice(0, 200)}`);
    return { text, cursor: answer.result.cursor, hasMore: answer.result.hasMore };
  }

  /** The first poll (cursor null: now), answered at once with the cursor to wait from. */
  async start(): Promise<void> {
    this.cursor = (await this.poll(0)).cursor;
  }

  /** Waits, takes what comes, polls again at once (as `nextPollMs` allows: the next poll waits on the server). */
  async run(): Promise<void> {
    while (!this.stopped) {
      try {
        const answer = await this.poll(POLL_TIMEOUT_MS);
        this.sightings.take(this.index, answer.text);
        this.cursor = answer.cursor;
      } catch (error) {
        if (this.stopped) return;
        this.errors += 1;
        this.lastError = (error as Error).message;
        await sleep(500);
      }
    }
  }

  stop(): void {
    this.stopped = true;
  }
}

/** Pass B: one `events/stream` per agent, its SSE frames read as they come. */
class StreamAgent {
  private response?: IncomingMessage;
  private tail = '';

  constructor(
    private readonly index: number,
    private readonly sightings: Sightings,
  ) {}

  /** Resolves once the stream's first frame (notifications/events/active) has arrived. */
  open(baseUrl: string, apiKey: string, line: string, agent: Agent): Promise<void> {
    return new Promise((resolve, reject) => {
      const body = rpc(1, 'events/stream', { name: KIND, arguments: { line }, cursor: null });
      const req = httpRequest(
        new URL('/api/mcp', baseUrl),
        {
          method: 'POST',
          agent,
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        },
        (res) => {
          if (res.statusCode !== 200 || !String(res.headers['content-type']).startsWith('text/event-stream')) {
            res.setEncoding('utf8');
            let text = '';
            res.on('data', (c: string) => (text += c));
            res.on('end', () => reject(new Error(`events/stream answered ${res.statusCode}: ${text.slice(0, 200)}`)));
            return;
          }
          this.response = res;
          res.setEncoding('utf8');
          let active = false;
          res.on('data', (chunk: string) => {
            const text = this.tail + chunk;
            const end = text.lastIndexOf('\n\n');
            if (end < 0) {
              this.tail = text;
              return;
            }
            this.tail = text.slice(end + 2);
            const frames = text.slice(0, end);
            if (!active && frames.includes('notifications/events/active')) {
              active = true;
              resolve();
            }
            if (frames.includes('notifications/events/event')) this.sightings.take(this.index, frames);
          });
          res.on('error', () => undefined);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.response?.destroy();
  }
}

/** Sends numbered inbound SMS to the line at RATE a second for `ms`, each after the previous was accepted. */
async function sendSms(
  pool: Pool,
  ingestToken: string,
  line: string,
  ms: number,
  sentAt: Map<number, number>,
  first: number,
): Promise<{ accepted: number; failed: number }> {
  const from = uniquePhone('partner');
  const count = Math.max(1, Math.round((ms / 1000) * RATE));
  const start = Date.now();
  let accepted = 0;
  let failed = 0;
  for (let i = 0; i < count; i += 1) {
    const due = start + (i * 1000) / RATE;
    if (due > Date.now()) await sleep(due - Date.now());
    const n = first + i;
    sentAt.set(n, Date.now());
    const res = await pool.request({
      method: 'POST',
      path: '/ingest/sms/inbound',
      headers: { authorization: `Bearer ${ingestToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: line, from, body: `s11 #${n}# are we still on for 3:30?`, providerMessageId: `s11-${n}-${start}` }),
    });
    await res.body.text();
    if (res.statusCode === 201) accepted += 1;
    else {
      failed += 1;
      sentAt.delete(n);
    }
  }
  return { accepted, failed };
}

/** Until every agent has seen every SMS accepted, or nothing new for 5 s (at most 60 s). */
async function drain(sightings: Sightings, expected: number): Promise<void> {
  const end = Date.now() + 60_000;
  let last = -1;
  let still = Date.now();
  while (Date.now() < end && sightings.total < expected) {
    await sleep(100);
    const now = sightings.total;
    if (now !== last) {
      last = now;
      still = Date.now();
    } else if (Date.now() - still > 5000) break;
  }
}

/**
 * Scenario 11, events for agents: N agents (--s11-agents, 1 and 100 by default) wait for the
 * `message.received` events of one phone line, each with an API key of its own holding only the
 * `webhooks` permission (so neither EVENT_FEED_LONG_POLLS_PER_KEY nor EVENT_FEED_STREAMS_PER_KEY
 * nor MCP_KEY_CONCURRENCY is reached; the service runs with its default settings). Pass A: each
 * agent runs an `events/poll` long-poll loop over POST /api/mcp; pass B: each holds an
 * `events/stream`. Meanwhile inbound SMS come through the ingest route at RATE a second, each
 * numbered in its text. Latency is from sending an SMS to each agent seeing its event (every
 * agent should see every event). Memory per open stream: the api's RSS and used heap with the
 * streams open minus before they opened, divided by N, each state read right after a full GC
 * forced in the api (bench/lib/heap-preload.js).
 */
export async function scenario11(ctx: RunContext): Promise<Scenario11Result> {
  const w = windows(ctx.options);
  const levels = ctx.options.s11Agents;
  const most = Math.max(...levels);
  log(`\nScenario 11: events for agents, ${levels.join(' and ')} agents, events/poll then events/stream, ${RATE} inbound SMS/s`);
  const svc = await startScenarioService(ctx, 's11', {}, 'split', { heapProbe: true });
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const ingestPool = new Pool(svc.baseUrl, { connections: 1, keepAliveTimeout: 30_000 });
  const passes: EventsPass[] = [];
  let smsNumber = 1;
  try {
    const org = await api.createOrg('bench s11');
    const line = await api.createPhoneLine(org.id);
    const user = await api.createUser(org.id, 's11-agents');
    await api.addMember(line.id, user.id);
    const keys: string[] = [];
    for (let i = 0; i < most; i += 1) {
      const key = await api.http.json<{ key: string }>('POST', `/admin/users/${user.id}/api-keys`, ctx.secrets.adminToken, {
        name: `s11 agent ${i}`,
        channelAccess: { mode: 'ALL' },
        permissions: ['webhooks'],
      });
      keys.push(key.key);
    }
    const seconds = w.fixed / 1000;
    /** Sends the pass's SMS, waits until the agents have seen them, and reports what they saw. */
    const sendAndWatch = async (mode: EventsPass['mode'], agents: number, sentAt: Map<number, number>, sightings: Sightings): Promise<EventsPass> => {
      const sent = await sendSms(ingestPool, ctx.secrets.ingestToken, line.address, w.fixed, sentAt, smsNumber);
      smsNumber += sent.accepted + sent.failed;
      const expected = sent.accepted * agents;
      await drain(sightings, expected);
      return { mode, agents, seconds, ...sent, expected, seen: sightings.total, latency: percentilesOf(sightings.latencies), errors: 0 };
    };
    for (const agents of levels) {
      // Pass A: long polls.
      {
        const sentAt = new Map<number, number>();
        const sightings = new Sightings(agents, sentAt);
        const pool = new Pool(svc.baseUrl, { connections: agents, keepAliveTimeout: 60_000 });
        const pollers = Array.from({ length: agents }, (_, i) => new PollAgent(i, pool, keys[i], line.id, sightings));
        try {
          await Promise.all(pollers.map((p) => p.start()));
          const loops = pollers.map((p) => p.run());
          await sleep(1000); // every agent's poll waiting on the server
          const pass = await sendAndWatch('poll', agents, sentAt, sightings);
          for (const p of pollers) p.stop();
          await pool.destroy();
          await Promise.all(loops);
          pass.errors = pollers.reduce((sum, p) => sum + p.errors, 0);
          pass.lastError = pollers.find((p) => p.lastError)?.lastError;
          passes.push(pass);
          logPass(pass);
        } finally {
          for (const p of pollers) p.stop();
          await pool.destroy().catch(() => undefined);
        }
      }
      // Pass B: streams.
      {
        const sentAt = new Map<number, number>();
        const sightings = new Sightings(agents, sentAt);
        const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
        const streams = Array.from({ length: agents }, (_, i) => new StreamAgent(i, sightings));
        try {
          await sleep(2000);
          // Both states right after a forced full GC, RSS and heap alike: garbage left by the
          // previous pass (or the first one's setup) would otherwise swamp a few KB a stream.
          const heapBefore = (await svc.apiHeapAfterGc()).heapUsed;
          const before = await apiMemory(svc.baseUrl, svc.api.pid);
          for (let i = 0; i < agents; i += 1) await streams[i].open(svc.baseUrl, keys[i], line.id, agent);
          const heapOpened = (await svc.apiHeapAfterGc()).heapUsed;
          const opened = await apiMemory(svc.baseUrl, svc.api.pid);
          const pass = await sendAndWatch('stream', agents, sentAt, sightings);
          pass.memory = {
            rssBefore: before.rss,
            rssOpened: opened.rss,
            heapBefore: before.heap,
            heapOpened: opened.heap,
            heapAfterGcBefore: heapBefore,
            heapAfterGcOpened: heapOpened,
          };
          passes.push(pass);
          logPass(pass);
        } finally {
          for (const s of streams) s.close();
          agent.destroy();
        }
      }
    }
    return { rate: RATE, pollTimeoutMs: POLL_TIMEOUT_MS, levels, passes };
  } finally {
    await ingestPool.close().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}

function logPass(p: EventsPass): void {
  log(
    `  S11 ${p.mode.padEnd(6)} ${String(p.agents).padStart(3)} agents: ${p.accepted} SMS (${p.failed} failed), seen ${fmtNum(p.seen)} of ${fmtNum(p.expected)}; ` +
      `SMS sent → agent sees it p50 ${fmtMs(p.latency.p50)} p95 ${fmtMs(p.latency.p95)} p99 ${fmtMs(p.latency.p99)} max ${fmtMs(p.latency.max)}` +
      (p.errors ? `; ${p.errors} errors (${p.lastError})` : ''),
  );
  const m = p.memory;
  if (m) {
    log(
      `    api with ${p.agents} streams open: RSS ${fmtMb(m.rssBefore)} → ${fmtMb(m.rssOpened)}, heap ${fmtMb(m.heapBefore)} → ${fmtMb(m.heapOpened)}, ` +
        `after a full GC ${fmtMb(m.heapAfterGcBefore)} → ${fmtMb(m.heapAfterGcOpened)} (${fmtNum((m.heapAfterGcOpened - m.heapAfterGcBefore) / p.agents / 1024, 1)} KB a stream)`,
    );
  }
}
