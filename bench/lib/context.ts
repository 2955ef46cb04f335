import { CpuReport } from './monitor';
import { Receiver } from './receiver-client';
import { Service, ServiceSecrets, startService } from './service';
import { Percentiles } from './util';

export interface Options {
  quick: boolean;
  scenarios: number[];
  /** Endpoints an event fans out to in scenarios 1 and 2. */
  endpoints: number;
  /** Users the endpoints of scenarios 1 and 2 are dealt to (all members of the one line). */
  users: number;
  ingestConcurrency: number;
  /** DELIVERY_CONCURRENCY of the worker (the service's default is 100). */
  deliveryConcurrency: number;
  /** Pass 2 of scenario 1: inbound events per second. */
  rate: number;
  /** Deliveries waiting in retry in scenario 4. */
  backlog: number;
  /** Max deliveries owed but not yet arrived during saturation passes (flow control). */
  backlogCap: number;
  smsBytes: number;
  mode: 'concise' | 'verbose';
  /** The receiver answers 2xx to every N-th request of a failing/hanging endpoint (0: never). */
  failOkEvery: number;
  /** Scenario 2's DELIVERY_TIMEOUT_MS. */
  timeoutMs: number;
  /** DELIVERY_ENDPOINT_CONCURRENCY for the service, or undefined for its default. */
  endpointConcurrency?: number;
  /** Scenario 2's DELIVERY_RETRY_SCHEDULE. */
  retrySchedule: string;
  levels: number[];
  /** Scenario 10's concurrency levels. */
  s10Levels: number[];
  /** Scenario 10: rounds of every path, their orders a Williams square (default 4 per path measured, 16 for all four; 1 per path with --quick). */
  s10Rounds?: number;
  /** Scenario 10: calls per path and round at the concurrent levels (a fifth at c=1; default 2,000; 1,000 with --quick). */
  s10Calls?: number;
  /** Scenario 10: only these paths (legacy, modern, sdk-modern, sdk-legacy), and only these tools (list_webhooks, get_thread). */
  s10Paths?: string[];
  /** Scenario 10: warm-up calls before each measured round, as a share of its calls (default 0.1). */
  s10Warmup?: number;
  s10Tools?: string[];
  /** Scenario 11: how many agents wait at once, each level a poll pass and a stream pass (default 1 and 100). */
  s11Agents: number[];
  build: boolean;
  keep: boolean;
  /** The host name in the endpoints' URLs (--receiver-host). */
  receiverHost: string;
  /** Scenario 6 on one PROCESS_ROLE=all process instead of the api + worker pair. */
  s6OneProcess: boolean;
  /** Multiplies every window (for a longer or shorter run). */
  durationScale: number;
  /** Every service process's /metrics is read this often, as Prometheus would (0: never). */
  scrapeSeconds: number;
  command: string;
}

/** Window lengths in ms, quick or full. */
export function windows(options: Options) {
  const q = options.quick;
  const s = options.durationScale;
  const ms = (quick: number, full: number) => Math.round((q ? quick : full) * s);
  return {
    warmup: ms(3_000, 10_000),
    saturation: ms(10_000, 45_000),
    fixed: ms(8_000, 40_000),
    drain: ms(8_000, 20_000),
    bare: ms(5_000, 15_000),
    isolation: ms(10_000, 40_000),
    toolWarmup: ms(500, 2_000),
    toolLevel: ms(2_500, 10_000),
    backlogWait: ms(240_000, 1_200_000),
  };
}

export interface RunContext {
  root: string;
  options: Options;
  runId: string;
  database: string;
  databaseUrl: string;
  secrets: ServiceSecrets;
  receiver: Receiver;
  redisPid: number;
  results: Results;
}

export function queuePrefix(ctx: RunContext, label: string): string {
  return `{mssb_${ctx.runId}_${label}}`;
}

export function startScenarioService(
  ctx: RunContext,
  label: string,
  env: Record<string, string>,
  roles: 'split' | 'all' = 'split',
  extra: { heapProbe?: boolean } = {},
): Promise<Service> {
  return startService({
    root: ctx.root,
    databaseUrl: ctx.databaseUrl,
    queuePrefix: queuePrefix(ctx, label),
    secrets: ctx.secrets,
    env: {
      DELIVERY_CONCURRENCY: String(ctx.options.deliveryConcurrency),
      ...(ctx.options.endpointConcurrency === undefined ? {} : { DELIVERY_ENDPOINT_CONCURRENCY: String(ctx.options.endpointConcurrency) }),
      ...env,
    },
    label,
    roles,
    scrapeSeconds: ctx.options.scrapeSeconds,
    heapProbe: extra.heapProbe,
  });
}

// ---- results ---------------------------------------------------------------------------------

export interface SaturationResult {
  label: string;
  seconds: number;
  /** 2xx deliveries per second at the receiver over the steady window (healthy paths only). */
  deliveriesPerSec: number;
  /** All attempts per second at the receiver over the window (every path). */
  attemptsPerSec: number;
  ingestPerSec: number;
  latency: Percentiles;
  dups: number;
  cpu: CpuReport;
  drained: boolean;
  ingestFailed: number;
  lastIngestError: string;
  /** Requests held open by hanging endpoints, averaged over the window (worker slots they hold). */
  openHangsAvg?: number;
  /** Deliveries owed to the failing endpoints at the end (their backlog, not yet attempted once). */
  owedToFailing?: number;
  /** Unthrottled passes: where the time from commit to the attempt went, from the delivery rows. */
  split?: DeliverySplit;
}

/**
 * The first attempts of the events committed in a window, read from their rows after the drain
 * (ms, percentiles over the deliveries): in the outbox (the event's commit to the relay's
 * fan-out), waiting for the worker (fan-out to the attempt's claim: Bull in Redis, a free slot,
 * the endpoint's line), the HTTP request alone, and the claim to the recorded success (claim
 * statement, request, success statement); total is the event's commit to the recorded success.
 */
export interface DeliverySplit {
  outbox: Percentiles;
  toAttempt: Percentiles;
  http: Percentiles;
  claimToRecord: Percentiles;
  total: Percentiles;
  /** Each second of the window (its events' p50 and p99): does the wait grow during the burst? */
  bySecond: Array<{ second: number; events: number; outboxP99: number; toAttemptP50: number; toAttemptP99: number; totalP99: number }>;
}

export interface FixedRateResult {
  rate: number;
  seconds: number;
  /** Events due in the whole pass (warm-up included) and how many were actually sent in time. */
  planned: number;
  sent: number;
  sentLate: number;
  expected: number;
  arrived: number;
  deliveriesPerSec: number;
  latency: Percentiles;
  cpu: CpuReport;
}

export interface BareClientResult {
  seconds: number;
  concurrency: number;
  postsPerSec: number;
  receiverCounted: number;
  errors: number;
  samples: number;
  avgBodyBytes: number;
  latency: Percentiles;
  cpu: CpuReport;
}

export interface Scenario1Result {
  endpoints: number;
  users: number;
  ingestConcurrency: number;
  deliveryConcurrency: number;
  saturation: SaturationResult;
  /** Open loop at half the event rate of the saturation pass: latency where the service keeps up. */
  sustainable: FixedRateResult;
  fixed: FixedRateResult;
  bare: BareClientResult;
  signatures: { verified: number; bad: number; badExamples: string[] };
}

export interface IsolationPass {
  /** Jobs waiting as delayed in Redis at the end of the pass (retries and postponed attempts). */
  delayedJobsAtEnd: number;
  kind: 'fail' | 'hang';
  result: SaturationResult;
  healthyEndpoints: number;
  /** Healthy-half deliveries/s ÷ (baseline deliveries/s × healthy share). */
  ratio: number;
  autoDisabled: number;
  attemptsByKind: Record<string, number>;
}

export interface Scenario2Result {
  /** Where each endpoint's adaptive concurrency limit starts (DELIVERY_ENDPOINT_CONCURRENCY; it grows to _MAX and halves on errors), if known. */
  endpointConcurrency?: number;
  baselineFrom: 'scenario 1' | 'own baseline pass';
  baselinePerSec: number;
  baselineHealthyShare: number;
  timeoutMs: number;
  retrySchedule: string;
  failOkEvery: number;
  passes: IsolationPass[];
}

export interface ToolLevelResult {
  concurrency: number;
  /** `raw-oauth`: raw HTTP with an OAuth access token of the same user, beside `raw` (its API key) in the same run. */
  /** `hot`: raw HTTP, API key, the agent's hot mix on conversations (list_threads, get_thread, get_message, search_messages, reply_to_thread). */
  mode: 'sdk' | 'raw' | 'raw-oauth' | 'bare' | 'hot';
  reqPerSec: number;
  latency: Percentiles;
  errors: number;
  lastError?: string;
  cpu: CpuReport;
  /** The hot mix: each tool's own latencies. */
  perTool?: Array<{ tool: string; calls: number; latency: Percentiles }>;
}

export interface Scenario3Result {
  endpointsListed: number;
  levels: ToolLevelResult[];
}

export interface Scenario4Result {
  target: number;
  events: number;
  endpoints: number;
  users: number;
  waiting: number;
  statusCounts: Record<string, number>;
  autoDisabled: number;
  buildSeconds: number;
  firstAttemptsPerSec: number;
  worker: { rssBefore: number; rssAtOnce: number; rss: number; hwm: number };
  settleSeconds: number;
  api: { rssBefore: number; rss: number; hwm: number };
  redis: { usedBefore: number; usedAfter: number; prefixBytes: number; prefixKeys: number; delayed: number };
  complete: boolean;
}

/** Scenario 5: scenario 1's saturation pass against one `PROCESS_ROLE=all` process. */
export interface Scenario5Result {
  endpoints: number;
  saturation: SaturationResult;
}

/** Scenario 6: every event to one endpoint. */
export interface Scenario6Result {
  /** Flow-controlled (the queue kept short): what one endpoint can be sent. */
  saturation: SaturationResult;
  /** Ingest as fast as it goes, no flow control: do deliveries keep pace? */
  unthrottled: SaturationResult;
}

/** Scenario 7: inbound SMS with no endpoint subscribed (ingest alone), from many senders and from one. */
export interface Scenario7Result {
  concurrency: number;
  manySenders: { senders: number; perSec: number; failed: number; latency: Percentiles; cpu: CpuReport };
  oneSender: { senders: number; perSec: number; failed: number; latency: Percentiles; cpu: CpuReport };
}

/** Scenario 8: search_messages latency for one query shape. */
export interface SearchShapeResult {
  label: string;
  /** Messages the query matches (of the scenario's million). */
  matches: string;
  calls: number;
  hitsPerCall: number;
  latency: Percentiles;
}

/** One read tool's calls, one at a time, on scenario 8's large org. */
export interface ReadShapeResult {
  label: string;
  /** Which target applies: list_threads' (p50 and p99) or the other reads' (p99). */
  kind: 'list_threads' | 'read';
  calls: number;
  latency: Percentiles;
}

/** Scenario 8: reads and search_messages on an org of 100,000 threads and a million messages. */
export interface Scenario8Result {
  messages: number;
  threads: number;
  lines: number;
  deliveries: number;
  fillSeconds: number;
  /** CREATE INDEX of both search indexes on the filled tables (what the migration costs). */
  buildSeconds: number;
  indexMb: number;
  tableMb: number;
  reads: ReadShapeResult[];
  /** list_threads at c=32 on the small org (first) and on the large one. */
  throughput: Array<{ threads: number; concurrency: number; reqPerSec: number; latency: Percentiles; errors: number; cpu: CpuReport }>;
  /**
   * The limit in the same run: list_threads' statement and answer on the large org from a bare
   * Nest route (bench/bare-app.ts), at the same concurrency; the answers' sizes, bare and the tool's.
   */
  bare?: { concurrency: number; reqPerSec: number; latency: Percentiles; errors: number; cpu: CpuReport; bytes: number; toolBytes: number };
  shapes: SearchShapeResult[];
}

/** Scenario 9: live updates, open SSE streams told of inbound messages at a fixed rate. */
export interface Scenario9Result {
  streams: number;
  persons: number;
  rate: number;
  seconds: number;
  planned: number;
  accepted: number;
  failed: number;
  /** message.received events every stream should get (accepted × streams), and those that arrived. */
  expected: number;
  received: number;
  /** From the event's commit (its `at`) to its arrival at a client, over the timed streams. */
  latency: Percentiles;
  /** The api process: before the streams opened, once open, under load, after they closed (bytes; the heap as it is, garbage included). */
  memory: Record<'before' | 'opened' | 'during' | 'after', { rss: number; heap: number }>;
  /** The api's used heap right after a forced full garbage collection (bytes): what it holds. */
  heapAfterGc: Record<'before' | 'opened' | 'after', number>;
  cpu: CpuReport;
}

/**
 * Scenario 10's paths: the service in each era, and the official SDK's server (bench/sdk-peer.ts)
 * in each era.
 */
export type EraPath = 'legacy' | 'modern' | 'sdk-modern' | 'sdk-legacy';

/** One path of scenario 10 for one tool at one concurrency, over every round. */
export interface EraPathResult {
  tool: string;
  path: EraPath;
  concurrency: number;
  /** Calls answered in the measured windows, every round. */
  calls: number;
  reqPerSec: number;
  latency: Percentiles;
  /** CPU per call (ms): the process that serves the path (the service's api, or the peer), PostgreSQL's backends, the load generator. */
  serverCpuMs: number;
  postgresCpuMs: number;
  harnessCpuMs: number;
  errors: number;
  lastError?: string;
  /** Each round alone: the spread behind the totals. */
  rounds: Array<{ reqPerSec: number; serverCpuMs: number; machineBusy: number }>;
}

/** Scenario 10: one read tool call on four paths (two eras of the service, two of the SDK's server). */
export interface Scenario10Result {
  tools: Array<{ name: string; args: Record<string, unknown> }>;
  levels: number[];
  rounds: number;
  /** Calls and warm-up calls per path and round, by level. */
  calls: Record<number, { calls: number; warmup: number }>;
  /** Bytes of one request and its answer, per tool and path. */
  sizes: Array<{ tool: string; path: EraPath; requestBytes: number; answerBytes: number }>;
  results: EraPathResult[];
}

/** Scenario 11: one pass of N agents waiting for events by `events/poll` (long poll) or `events/stream`. */
export interface EventsPass {
  mode: 'poll' | 'stream';
  agents: number;
  seconds: number;
  /** Inbound SMS accepted (and refused) by the ingest route during the pass. */
  accepted: number;
  failed: number;
  /** accepted × agents: every agent should see every event; and the sightings that came. */
  expected: number;
  seen: number;
  /** From sending the SMS to an agent seeing its event, over every agent and event. */
  latency: Percentiles;
  /** Polls answered with an error (pass A). */
  errors: number;
  lastError?: string;
  /** Pass B: the api process before the streams opened and with them open (bytes). */
  memory?: { rssBefore: number; rssOpened: number; heapBefore: number; heapOpened: number; heapAfterGcBefore: number; heapAfterGcOpened: number };
}

export interface Scenario11Result {
  /** Inbound SMS per second during each pass. */
  rate: number;
  pollTimeoutMs: number;
  levels: number[];
  passes: EventsPass[];
}

/** Scenario 12: the thread page of a thread of many messages and attachments, one request at a time. */
export interface Scenario12Result {
  messages: number;
  attachments: number;
  requests: number;
  /** Milliseconds per page, from the request's start to the last byte of the HTML. */
  latency: Percentiles;
  mean: number;
}

/** Scenario 13: one timed pass of send_sms by the org without a policy (`none`) or with one (`policy`). */
export interface SendsPass {
  side: 'none' | 'policy';
  round: number;
  /** The window's sends over the window and the time after it until the worker had handed them all off. */
  sendsPerSec: number;
  /** The window's sends over the window alone (what the api took). */
  intakePerSec: number;
  /** How long after the window the worker took to hand off what was still QUEUED. */
  drainMs: number;
  latency: Percentiles;
  errors: number;
  lastError?: string;
  /** CPU milliseconds per send of each process (api, worker, postgres: the bench database's backends). */
  cpuMsPerSend: Record<string, number>;
  /** SQL statements the api and worker sent per send (the send, its hand-off, the carrier's report, events). */
  statementsPerSend: number;
}

/** Scenario 13: sends per second without and with a send policy (issue 45), alternating rounds. */
export interface Scenario13Result {
  concurrency: number;
  recipients: number;
  /** False when the build has no send policies (the admin route answered 404): both sides ran without. */
  policyApplied: boolean;
  passes: SendsPass[];
  medianNone: number;
  medianPolicy: number;
}

export interface Results {
  startedAt: Date;
  finishedAt?: Date;
  s1?: Scenario1Result;
  s2?: Scenario2Result;
  s3?: Scenario3Result;
  s4?: Scenario4Result;
  s5?: Scenario5Result;
  s6?: Scenario6Result;
  s7?: Scenario7Result;
  s8?: Scenario8Result;
  s9?: Scenario9Result;
  s10?: Scenario10Result;
  s11?: Scenario11Result;
  s12?: Scenario12Result;
  s13?: Scenario13Result;
  errors: Array<{ scenario: number; message: string }>;
}
