import { Client } from 'pg';
import { validatedFeedAnswer, validatedOccurrence } from '../support/event-schemas';
import { MCP_URL } from '../support/mcp';
import { SseClient } from '../support/sse';
import { createTenant, ingestSms, IngestOutcome, json, rpc, send, steadyTraffic, Tenant } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder, tally } from './support/results';
import { sleep, waitFor } from './support/stack';

/**
 * Issue 43: "a service restart and a Redis outage during a stream and a poll loop: every event
 * reaches the client once per cursor, none lost."
 *
 * One `api` and one `worker` process, a private redis-server. Inbound SMS arrive at a steady rate
 * while three clients follow message.received, each on one cursor chain: two with long polls (MCP
 * `events/poll`, `GET /api/events`) and one holding an MCP `events/stream`. Both processes are
 * SIGKILLed and started again; later Redis is stopped and started again (empty). A poll client
 * retries a failed poll with the cursor it holds; the stream client, whenever its stream breaks
 * (connection reset, the stream ending, or no frame for twice the heartbeat interval), opens it
 * again with the cursor of the last event or heartbeat it received, until the service answers. At
 * the end each client's events must be exactly the org's message.received events in the database,
 * in feed-position order: none lost, none twice. Every answer and pushed event is checked against
 * the event catalog (test/support/event-schemas.ts) as in e2e.
 */
const SMS_PER_SECOND = 10;
const PHASE_MS = 4_000;
const OUTAGE_MS = 8_000;
/** How long a poll waits server-side: short, so the loops end soon after the traffic. */
const WAIT_SECONDS = 5;
/** A client's pause after a failed poll or stream (connection refused while the api restarts, a 5xx). */
const RETRY_MS = 250;
/** EVENT_FEED_HEARTBEAT_MS of this stack: short, so the stream client's cursor keeps up and a dead stream shows soon. */
const HEARTBEAT_MS = 1_000;

interface Page {
  events: Array<{ eventId: string; data: { data: { message: { id: string } } } }>;
  cursor: string;
}

/** One client on one cursor chain: what it received, in order, and how its polls went. */
class FeedClient {
  readonly eventIds: string[] = [];
  readonly messageIds: string[] = [];
  /** When each event reached the client. */
  readonly receivedAt: number[] = [];
  readonly failures = new Map<string, number>();
  pages = 0;
  /** Set when an answer broke the catalog or the loop itself failed: the test fails with it. */
  fatal?: Error;
  private stopped = false;
  private loop?: Promise<void>;

  constructor(
    readonly name: string,
    private cursor: string,
    private readonly poll: (cursor: string, waitSeconds: number) => Promise<Page | string>,
  ) {}

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const page = await this.poll(this.cursor, WAIT_SECONDS);
        if (typeof page === 'string') {
          this.failures.set(page, (this.failures.get(page) ?? 0) + 1);
          await sleep(RETRY_MS);
          continue;
        }
        validatedFeedAnswer(page);
        this.pages += 1;
        for (const event of page.events) {
          this.eventIds.push(event.eventId);
          this.messageIds.push(event.data.data.message.id);
          this.receivedAt.push(Date.now());
        }
        this.cursor = page.cursor;
      }
    })().catch((error: Error) => {
      this.fatal = error;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** One more poll without waiting, from the last cursor: nothing may come after the end. */
  async tail(): Promise<Page | string> {
    return this.poll(this.cursor, 0);
  }

  duplicates(): number {
    return this.eventIds.length - new Set(this.eventIds).size;
  }
}

/** Why one stream of the stream client ended: 'final frame', 'connection reset', 'silent' (no frame for two heartbeats), or why it did not open (ECONNREFUSED, an HTTP status). */
type StreamEnd = string;

/**
 * One client holding an MCP `events/stream` (a 2025-era request: plain JSON-RPC) as docs/mcp.md
 * tells a client to: it keeps the cursor of the last event or heartbeat, and whenever its stream
 * breaks (the connection resets, the stream ends with the final frame, or nothing comes for twice
 * the heartbeat interval) it opens the stream again with that cursor, retrying until the service
 * answers.
 */
class StreamClient {
  readonly eventIds: string[] = [];
  readonly messageIds: string[] = [];
  readonly receivedAt: number[] = [];
  /** How each stream ended (or failed to open), and when. */
  readonly ends: Array<{ at: number; why: StreamEnd }> = [];
  /** When each stream was answered 200 and went active. */
  readonly openedAt: number[] = [];
  heartbeats = 0;
  fatal?: Error;
  private stopped = false;
  private current?: SseClient;
  private loop?: Promise<void>;

  constructor(
    readonly name: string,
    private cursor: string,
    private readonly baseUrl: string,
    private readonly apiKey: string,
  ) {}

  start(): void {
    let id = 0;
    this.loop = (async () => {
      while (!this.stopped) {
        id += 1;
        const why = await this.follow(id).catch((error: Error) => (error instanceof StreamBroken ? error.message : Promise.reject(error)));
        if (this.stopped) break;
        this.ends.push({ at: Date.now(), why });
        if (why !== 'final frame' && why !== 'connection reset' && why !== 'silent') await sleep(RETRY_MS);
      }
    })().catch((error: Error) => {
      this.fatal = error;
    });
  }

  /** Opens one stream from the cursor held and reads it until it breaks; resolves with why it ended. */
  private async follow(id: number): Promise<StreamEnd> {
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'events/stream', params: { name: 'message.received', cursor: this.cursor } });
    const headers = { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    let sse: SseClient;
    try {
      sse = await SseClient.post(this.baseUrl, MCP_URL, headers, body);
    } catch (error) {
      throw new StreamBroken(String((error as NodeJS.ErrnoException).code ?? (error as Error).message));
    }
    this.current = sse;
    // A SIGKILLed api resets the connection mid-answer: the response errors, then closes.
    sse.response.on('error', () => undefined);
    if (this.stopped) sse.disconnect();
    if (sse.status !== 200) {
      await new Promise((resolve) => (sse.ended ? resolve(null) : sse.response.on('close', resolve)));
      const code = /"code":(-?\d+)/.exec(sse.text)?.[1];
      return `HTTP ${sse.status}${code ? ` ${code}` : ''}`;
    }
    let taken = 0;
    let finalFrame = false;
    let silent = false;
    let failure: Error | undefined;
    let watchdog: NodeJS.Timeout | undefined;
    const alive = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        silent = true;
        sse.disconnect();
      }, 2 * HEARTBEAT_MS);
    };
    const take = () => {
      try {
        for (; taken < sse.events.length; taken++) {
          alive();
          const msg = JSON.parse(sse.events[taken].data) as Record<string, any>;
          if (msg.id === id && 'result' in msg) {
            finalFrame = true;
            continue;
          }
          const params = msg.params as Record<string, any>;
          if (params?._meta?.['io.modelcontextprotocol/subscriptionId'] !== id)
            throw new Error(`a frame of stream ${id} not tagged with it: ${sse.events[taken].data}`);
          switch (msg.method) {
            case 'notifications/events/active':
              // Resumed from the cursor held: a fresh cursor (truncated) would mean events skipped.
              if (params.truncated !== false || params.cursor !== this.cursor)
                throw new Error(`stream ${id} did not resume at its cursor: ${sse.events[taken].data}`);
              this.openedAt.push(Date.now());
              break;
            case 'notifications/events/event':
              // The occurrence as the catalog describes it; `_meta` is the stream's tag, checked above.
              validatedOccurrence(Object.fromEntries(Object.entries(params).filter(([key]) => key !== '_meta')), true);
              this.eventIds.push(params.eventId);
              this.messageIds.push(params.data.data.message.id);
              this.receivedAt.push(Date.now());
              this.cursor = params.cursor;
              break;
            case 'notifications/events/heartbeat':
              this.heartbeats += 1;
              this.cursor = params.cursor;
              break;
            default:
              throw new Error(`stream ${id} sent ${sse.events[taken].data}`);
          }
        }
      } catch (error) {
        failure = error as Error;
        sse.disconnect();
      }
    };
    alive();
    take();
    sse.response.on('data', take);
    await new Promise((resolve) => (sse.ended ? resolve(null) : sse.response.on('close', resolve)));
    clearTimeout(watchdog);
    take();
    if (failure) throw failure;
    return finalFrame ? 'final frame' : silent ? 'silent' : 'connection reset';
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.disconnect();
    await this.loop;
  }

  duplicates(): number {
    return this.eventIds.length - new Set(this.eventIds).size;
  }

  /** Why each stream that broke (or failed to open) between `from` and `to` ended. */
  breaksBetween(from: number, to: number): string[] {
    return this.ends.filter((end) => end.at >= from && end.at <= to).map((end) => end.why);
  }
}

/** A stream that could not open (connection refused while the api restarts): retried. */
class StreamBroken extends Error {}

describe('reliability: the event feed across a service restart and a Redis outage', () => {
  let stack: Stack;
  let tenant: Tenant;
  const result = new ResultBuilder(
    'event-feed-faults',
    'Event feed poll loops (MCP and HTTP) and an MCP events/stream across a SIGKILL of the service and a Redis outage',
  );

  beforeAll(async () => {
    stack = await startStack({ tag: 'feed', env: { EVENT_FEED_HEARTBEAT_MS: String(HEARTBEAT_MS) } });
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER'] });
  });
  afterAll(async () => {
    result.record();
    await stack?.stop();
  });

  it('gives each cursor chain every committed event once, in position order', async () => {
    const [api] = stack.apis;
    const [worker] = stack.workers;
    const auth = { authorization: `Bearer ${tenant.apiKey}` };
    const failureOf = (status: number, error: string | undefined, text: string) =>
      status === 0 ? String(error).split(':')[0] : `HTTP ${status}${text.includes('"code"') ? ` ${String(JSON.parse(text).error?.code ?? '')}` : ''}`;

    const mcpPoll = async (cursor: string | null, waitSeconds: number): Promise<Page | string> => {
      const params = { name: 'message.received', cursor, maxEvents: 100, timeoutMs: waitSeconds * 1000 };
      const answer = await rpc(api.baseUrl, tenant.apiKey, 'events/poll', params, (waitSeconds + 10) * 1000);
      if (answer.status !== 200) return failureOf(answer.status, answer.error, answer.text);
      const body = json(answer);
      return body.result ?? `JSON-RPC ${body.error?.code}`;
    };
    const httpPoll = async (cursor: string | null, waitSeconds: number): Promise<Page | string> => {
      const query = new URLSearchParams({ type: 'message.received', limit: '100', wait: String(waitSeconds), ...(cursor ? { cursor } : {}) });
      const answer = await send('GET', `${api.baseUrl}/api/events?${query}`, { headers: auth, timeoutMs: (waitSeconds + 10) * 1000 });
      return answer.status === 200 ? json(answer) : failureOf(answer.status, answer.error, answer.text);
    };
    const startCursor = async (poll: typeof mcpPoll): Promise<string> => {
      const page = await poll(null, 0);
      if (typeof page === 'string') throw new Error(`the first poll failed: ${page}`);
      return page.cursor;
    };
    const clients = [
      new FeedClient('MCP events/poll', await startCursor(mcpPoll), mcpPoll),
      new FeedClient('GET /api/events', await startCursor(httpPoll), httpPoll),
    ];
    const streamer = new StreamClient('MCP events/stream', await startCursor(mcpPoll), api.baseUrl, tenant.apiKey);
    for (const client of clients) client.start();
    streamer.start();
    await waitFor(() => streamer.fatal !== undefined || streamer.openedAt.length > 0, 'the stream to be active', 10_000, 50);

    const phone = tenant.lines[0].address;
    const sms = steadyTraffic<IngestOutcome>(SMS_PER_SECOND, (i) =>
      ingestSms(
        api.baseUrl,
        { to: phone, from: `+1666${String(3_000_000 + (i % 40)).padStart(7, '0')}`, body: `feed ${i}`, providerMessageId: `feed-${i}` },
        10_000,
      ),
    );

    await sleep(PHASE_MS);
    const killedAt = Date.now();
    await Promise.all([api.stop('SIGKILL'), worker.stop('SIGKILL')]);
    const [apiStartMs, workerStartMs] = await Promise.all([api.restart(), worker.restart()]);
    const restartedAt = Date.now();
    await sleep(PHASE_MS);
    await stack.redis.stop('SIGTERM');
    const redisStoppedAt = Date.now();
    await sleep(OUTAGE_MS);
    await stack.redis.start();
    const redisBackAt = Date.now();
    await sleep(PHASE_MS);
    const outcomes = await sms.stop();
    const accepted = outcomes.filter((o) => o.status === 201 || o.status === 200).map((o) => o.messageId!);

    const missing = (client: FeedClient | StreamClient) => {
      const seen = new Set(client.messageIds);
      return accepted.filter((id) => !seen.has(id));
    };
    try {
      await waitFor(
        () => [...clients, streamer].every((c) => c.fatal !== undefined || missing(c).length === 0),
        'every accepted SMS at every client',
        60_000,
        250,
      );
    } finally {
      await Promise.all([...clients, streamer].map((c) => c.stop()));
    }

    // The truth: the org's message.received events in the database, in feed-position order.
    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    let committed: string[];
    try {
      const rows = await db.query(
        `SELECT 'evt_' || id AS "eventId" FROM outbox_events WHERE org_id = $1 AND type = 'message.received' AND feed_position IS NOT NULL ORDER BY feed_position`,
        [tenant.orgId],
      );
      committed = rows.rows.map((r: { eventId: string }) => r.eventId);
      const [{ unrelayed }] = (
        await db.query(`SELECT count(*)::int AS unrelayed FROM outbox_events WHERE org_id = $1 AND feed_position IS NULL`, [tenant.orgId])
      ).rows;
      result.figure('events without a feed position at the end', fmt(unrelayed));
      expect(unrelayed).toBe(0);
    } finally {
      await db.end();
    }

    const duringOutage = (client: FeedClient | StreamClient) => client.receivedAt.filter((at) => at > redisStoppedAt && at < redisBackAt).length;
    result.load = `${fmt(outcomes.length)} inbound SMS at ${SMS_PER_SECOND}/s; 2 clients long-polling message.received (MCP events/poll, GET /api/events) and 1 holding an MCP events/stream (heartbeat ${HEARTBEAT_MS / 1000} s), 1 api + 1 worker`;
    result.faults = `api and worker SIGKILLed and restarted; Redis stopped ${OUTAGE_MS / 1000} s, restarted empty`;
    result.lost = Math.max(...[...clients, streamer].map((c) => missing(c).length));
    result.duplicates = [...clients, streamer].map((c) => `${c.duplicates()} (${c.name})`).join(', ');
    result.figure('inbound SMS answered 2xx / sent', `${fmt(accepted.length)} / ${fmt(outcomes.length)}`);
    result.figure('events committed (message.received)', fmt(committed.length));
    result.figure(
      'restart after SIGKILL: api / worker ready in',
      `${fmt(apiStartMs)} / ${fmt(workerStartMs)} ms (${fmt(restartedAt - killedAt)} ms from the kill)`,
    );
    for (const client of clients) {
      const failed = client.failures.size ? tally(client.failures) : 'none';
      result.figure(
        `${client.name}: events / answered polls / failed polls (retried with the same cursor)`,
        `${fmt(client.eventIds.length)} / ${fmt(client.pages)} / ${failed}`,
      );
      result.figure(`${client.name}: events received while Redis was down`, fmt(duringOutage(client)));
    }

    const breaks = (from: number, to: number) => {
      const ends = streamer.breaksBetween(from, to);
      return ends.length ? tally(ends.reduce((m, why) => m.set(why, (m.get(why) ?? 0) + 1), new Map<string, number>())) : 'none';
    };
    result.figure(
      `${streamer.name}: events / streams opened / heartbeats`,
      `${fmt(streamer.eventIds.length)} / ${fmt(streamer.openedAt.length)} / ${fmt(streamer.heartbeats)}`,
    );
    result.figure(`${streamer.name}: streams ended or refused at the SIGKILL (each reopened with the last cursor)`, breaks(killedAt, redisStoppedAt));
    result.figure(`${streamer.name}: streams ended or refused during the Redis outage`, breaks(redisStoppedAt, redisBackAt + PHASE_MS));
    result.figure(`${streamer.name}: events received while Redis was down`, fmt(duringOutage(streamer)));

    expect(streamer.fatal).toBeUndefined();
    expect(missing(streamer)).toEqual([]);
    // Exactly the committed events, each once, in the order of their feed positions, across every reopening.
    expect(streamer.eventIds).toEqual(committed);
    // The SIGKILL broke the stream, and the client opened it again from its cursor once the api answered.
    expect(streamer.breaksBetween(killedAt, redisStoppedAt).length).toBeGreaterThan(0);
    expect(streamer.openedAt.filter((at) => at > killedAt).length).toBeGreaterThan(0);
    // Without Redis (no wakes) the open stream still found new events by reading the database again.
    expect(duringOutage(streamer)).toBeGreaterThan(0);

    for (const client of clients) {
      expect(client.fatal).toBeUndefined();
      expect(missing(client)).toEqual([]);
      // Exactly the committed events, each once, in the order of their feed positions.
      expect(client.eventIds).toEqual(committed);
      const tail = await client.tail();
      expect(typeof tail === 'string' ? tail : tail.events).toEqual([]);
      // The faults happened to the loops: polls failed while the api was down.
      expect(client.failures.size).toBeGreaterThan(0);
      // Without Redis (no wakes) the waiting polls still found new events by reading the database again.
      expect(duringOutage(client)).toBeGreaterThan(0);
    }
    result.passed = true;
  });
});
