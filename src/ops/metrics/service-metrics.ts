import { Injectable, Logger } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Seconds: from a fast local answer to a receiver's whole timeout. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds from an event's commit to its 2xx: first attempts (ms) to the last retry (12 h later). */
const LAG_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 43_200, 86_400];
/** A collector that has not answered by then leaves its gauges as they were. */
const COLLECT_TIMEOUT_MS = 5_000;

/** Why an event stream ended (event_streams_ended_total's `reason`). */
export const EVENT_STREAM_END_REASONS = ['client_closed', 'access_ended', 'slow_reader', 'shutdown', 'error'] as const;
export type EventStreamEndReason = (typeof EVENT_STREAM_END_REASONS)[number];

/** A gauge's values by its one label, set whole at every scrape (a label absent now reads 0). */
export type LabelledValues = Record<string, number>;

/**
 * Every metric the service exports, defined here and nowhere else (docs/operations.md, "Metrics",
 * lists them). Features record through the methods below; what only a query knows (endpoints by
 * status, the outbox, queue lengths) is read at scrape time by the collectors features register.
 * Label values are bounded sets (outcomes, statuses, tool names, route patterns), never ids or URLs.
 */
@Injectable()
export class ServiceMetrics {
  private readonly logger = new Logger(ServiceMetrics.name);
  readonly registry = new Registry();
  private readonly collectors: Array<{ name: string; collect: () => Promise<void> }> = [];

  private readonly deliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Delivery attempts by what came of them: succeeded, retrying (failed, another attempt is scheduled), failed (no attempt left), cancelled (endpoint disabled or deleted).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly attemptDuration = new Histogram({
    name: 'webhook_delivery_attempt_duration_seconds',
    help: "Time from sending an attempt's request to the receiver's whole answer (or the failure).",
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });
  private readonly deliveryLag = new Histogram({
    name: 'webhook_delivery_lag_seconds',
    help: "Time from the event's commit to the receiver's 2xx, retries included.",
    buckets: LAG_BUCKETS,
    registers: [this.registry],
  });
  private readonly endpoints = new Gauge({
    name: 'webhook_endpoints',
    help: 'Webhook endpoints by status (active, disabled).',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  private readonly outboxPending = new Gauge({
    name: 'outbox_pending_events',
    help: 'Committed events the relay has not handed to delivery yet.',
    registers: [this.registry],
  });
  private readonly outboxLag = new Gauge({
    name: 'outbox_relay_lag_seconds',
    help: 'Age of the oldest event the relay has not handed to delivery yet (0 when none waits).',
    registers: [this.registry],
  });
  private readonly deliveryLogDaysAhead = new Gauge({
    name: 'delivery_log_days_ahead',
    help: "Days from now to the end of the delivery log's last partition: a delivery dated past it cannot be stored (no DEFAULT partition).",
    registers: [this.registry],
  });
  private readonly deliveryLogDaysDropped = new Counter({
    name: 'delivery_log_days_dropped_total',
    help: 'Days of the delivery log dropped whole by retention (the history partition counts as one).',
    registers: [this.registry],
  });
  private readonly deliveryLogDaysKept = new Counter({
    name: 'delivery_log_days_kept_total',
    help: 'Retention runs that kept a day past the cutoff because deliveries in it still wait, one per day and run.',
    registers: [this.registry],
  });
  private readonly queueJobs = new Gauge({
    name: 'queue_jobs',
    help: 'Bull jobs by queue and state (waiting, active, delayed, failed, completed, paused).',
    labelNames: ['queue', 'state'] as const,
    registers: [this.registry],
  });
  private readonly mcpRequests = new Counter({
    name: 'mcp_requests_total',
    help: 'JSON-RPC messages on /mcp by method, tool (tools/call only) and outcome: ok, tool_error (isError result), rpc_error.',
    labelNames: ['method', 'tool', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly mcpDuration = new Histogram({
    name: 'mcp_request_duration_seconds',
    help: 'Time to answer one JSON-RPC message on /mcp, by tool (tools/call) or "-" for other methods.',
    labelNames: ['tool'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });
  private readonly ingested = new Counter({
    name: 'ingest_messages_total',
    help: 'Inbound messages by channel (SMS, EMAIL) and outcome: recorded, duplicate (a repeated provider message id), rejected.',
    labelNames: ['channel', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly extractions = new Counter({
    name: 'attachment_extractions_total',
    help: 'Attachment text extractions finished, by outcome (the extractionStatus attachment.extracted reports): extracted, failed.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly extractionDeferrals = new Counter({
    name: 'attachment_extraction_deferrals_total',
    help: "Extraction jobs that stepped aside because their org already held its share of a worker process's extraction threads (EXTRACTION_ORG_MAX_THREADS).",
    registers: [this.registry],
  });
  private readonly eventStreamsOpen = new Gauge({
    name: 'event_streams_open',
    help: 'MCP events/stream streams this process holds open now.',
    registers: [this.registry],
  });
  private readonly eventStreamsOpened = new Counter({
    name: 'event_streams_opened_total',
    help: 'MCP events/stream streams opened (past every check and bound).',
    registers: [this.registry],
  });
  private readonly eventStreamsEnded = new Counter({
    name: 'event_streams_ended_total',
    help: 'MCP events/stream streams ended, by reason: client_closed, access_ended (terminated), slow_reader (cut off), shutdown, error (did not start).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  private readonly longPollsWaiting = new Gauge({
    name: 'event_feed_long_polls_waiting',
    help: 'events/poll requests of this process waiting for an event now (each holds a slot of EVENT_FEED_LONG_POLLS_PER_KEY).',
    registers: [this.registry],
  });
  private readonly readyChecks = new Gauge({
    name: 'ready_check_up',
    help: 'Readiness checks as last run (by /ready, and at every scrape): 1 passed, 0 failed. check: queue, postgres, and outbox on worker and all roles.',
    labelNames: ['check'] as const,
    registers: [this.registry],
  });
  private readonly notReadyAnswers = new Counter({
    name: 'ready_not_ready_answers_total',
    help: '/ready answers of 503, by the check that failed (an answer with two failed checks counts for both).',
    labelNames: ['check'] as const,
    registers: [this.registry],
  });
  private readonly redisErrors = new Counter({
    name: 'redis_errors_total',
    help: "Errors of this process's Redis connections (a node lost, refused, timed out; on a cluster each failing node counts), by connection: client, queue, queue_blocking, queue_subscriber, subscriber.",
    labelNames: ['connection'] as const,
    registers: [this.registry],
  });
  private readonly redisReconnects = new Counter({
    name: 'redis_reconnects_total',
    help: "Reconnection attempts of this process's Redis connections (to the node, or to the whole cluster), by connection.",
    labelNames: ['connection'] as const,
    registers: [this.registry],
  });
  private readonly redisNodesRemoved = new Counter({
    name: 'redis_cluster_nodes_removed_total',
    help: "Redis Cluster nodes this process's connections dropped from their map (a master failed over and gone, a node lost), by connection.",
    labelNames: ['connection'] as const,
    registers: [this.registry],
  });
  private readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by route pattern (unmatched paths are "other") and status code.',
    labelNames: ['route', 'status'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // Every reason from the start, so a rate over one that has not happened yet reads 0, not nothing.
    for (const reason of EVENT_STREAM_END_REASONS) this.eventStreamsEnded.inc({ reason }, 0);
  }

  /** One delivery attempt's end. `durationMs` is the request's; `lagMs` the event's commit to this 2xx. */
  deliveryAttempted(outcome: string, durationMs: number | null, lagMs: number | null): void {
    this.deliveries.inc({ outcome });
    if (durationMs !== null) this.attemptDuration.observe(durationMs / 1000);
    if (lagMs !== null) this.deliveryLag.observe(Math.max(0, lagMs) / 1000);
  }

  mcpAnswered(method: string, tool: string, outcome: 'ok' | 'tool_error' | 'rpc_error', seconds: number): void {
    this.mcpRequests.inc({ method, tool, outcome });
    this.mcpDuration.observe({ tool }, seconds);
  }

  /** A Redis connection of this process failed (`error`), is trying again (`reconnecting`), or dropped a cluster node (`node_removed`). */
  redisHappened(connection: string, happening: 'error' | 'reconnecting' | 'node_removed'): void {
    ({ error: this.redisErrors, reconnecting: this.redisReconnects, node_removed: this.redisNodesRemoved })[happening].inc({ connection });
  }

  messageIngested(channel: string, outcome: 'recorded' | 'duplicate' | 'rejected'): void {
    this.ingested.inc({ channel, outcome });
  }

  attachmentExtracted(outcome: string): void {
    this.extractions.inc({ outcome });
  }

  attachmentExtractionDeferred(): void {
    this.extractionDeferrals.inc();
  }

  eventStreamOpened(): void {
    this.eventStreamsOpened.inc();
    this.eventStreamsOpen.inc();
  }

  /** Once per stream that eventStreamOpened counted. */
  eventStreamEnded(reason: EventStreamEndReason): void {
    this.eventStreamsEnded.inc({ reason });
    this.eventStreamsOpen.dec();
  }

  /** A long poll starts (+1) or stops (-1) waiting. */
  longPollWaiting(change: 1 | -1): void {
    this.longPollsWaiting.inc(change);
  }

  httpAnswered(route: string, status: number, seconds: number): void {
    this.httpDuration.observe({ route, status: String(status) }, seconds);
  }

  /** A readiness check's result (1 passed, 0 failed); a check seen for the first time also starts its 503 counter at 0. */
  readinessChecked(check: string, up: boolean): void {
    this.readyChecks.set({ check }, up ? 1 : 0);
    this.notReadyAnswers.inc({ check }, 0);
  }

  /** /ready answered 503 because of these checks. */
  notReadyAnswered(failedChecks: readonly string[]): void {
    for (const check of failedChecks) this.notReadyAnswers.inc({ check });
  }

  /** Endpoints by status, as counted now; a status with none reads 0. */
  endpointsCounted(byStatus: LabelledValues): void {
    for (const status of new Set(['active', 'disabled', ...Object.keys(byStatus)])) this.endpoints.set({ status }, byStatus[status] ?? 0);
  }

  outboxMeasured(pending: number, oldestAgeSeconds: number): void {
    this.outboxPending.set(pending);
    this.outboxLag.set(Math.max(0, oldestAgeSeconds));
  }

  deliveryLogMeasured(daysAhead: number): void {
    this.deliveryLogDaysAhead.set(daysAhead);
  }

  deliveryLogPruned(dropped: number, kept: number): void {
    this.deliveryLogDaysDropped.inc(dropped);
    this.deliveryLogDaysKept.inc(kept);
  }

  queueCounted(queue: string, byState: LabelledValues): void {
    for (const [state, count] of Object.entries(byState)) this.queueJobs.set({ queue, state }, count);
  }

  /** A feature's scrape-time reading; run at every scrape, all at once, each bounded in time. */
  addCollector(name: string, collect: () => Promise<void>): void {
    this.collectors.push({ name, collect });
  }

  /** The text exposition: collectors first (one that fails or hangs leaves its gauges as they were). */
  async exposition(): Promise<string> {
    await Promise.all(this.collectors.map((collector) => this.runCollector(collector)));
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private async runCollector({ name, collect }: { name: string; collect: () => Promise<void> }): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${COLLECT_TIMEOUT_MS} ms`)), COLLECT_TIMEOUT_MS);
    });
    try {
      await Promise.race([collect(), timeout]);
    } catch (error) {
      this.logger.warn(`metrics collector "${name}" failed; its gauges keep their last values: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
}
