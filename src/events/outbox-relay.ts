import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Client } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { Hooks } from '../common/hooks';
import { ProbeDatabase, ReadinessChecks } from '../health/readiness-checks';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { BackgroundWork, duration, WORKER_ROLES } from '../queue/background-work';
import { recordFailure, Span, SpanKind, startStoredSpan, traceParentOf } from '../ops/tracing/traces';
import { PublishedEvent } from './domain-event';
import { OUTBOX_CHANNEL, OutboxRepository } from './outbox.repository';

const BATCH_SIZE = 500;
/** Relayed events are kept this long (for a replay by hand), then deleted. */
export const OUTBOX_RETENTION_MS = 7 * 24 * 3_600_000;
const CLEANUP_EVERY_MS = 10 * 60_000;
const CLEANUP_BATCH = 1000;
const CLEANUP_PAUSE_MS = 100;
/**
 * Least time between the starts of two drains. Each drain is a transaction with a synchronous
 * commit; woken by every NOTIFY, the relay committed about once per inbound message under load.
 * What commits within the gap goes in one batch instead (docs/PERFORMANCE.md, change 13).
 */
export const DRAIN_GAP_MS = 10;

/**
 * Hands committed outbox events to the subscribers, at least once. Several replicas may run:
 * each batch is claimed with FOR UPDATE SKIP LOCKED, handed over in the same transaction and
 * marked relayed when that commits. Woken by NOTIFY, with a poll as a safety net; a failed batch
 * (Redis down, database restart) rolls back and is tried again on the next wake.
 */
@Injectable()
export class OutboxRelay implements OnModuleInit {
  private readonly logger = new Logger(OutboxRelay.name);
  /** Run in the transaction that claims a batch of committed events; each may answer a step to run after it commits. */
  readonly relayed = new Hooks<[events: PublishedEvent[], manager: EntityManager], (() => Promise<void>) | void>('outbox events relayed');
  private listener?: Client;
  private timer?: NodeJS.Timeout;
  private running = false;
  private draining?: Promise<void>;
  private wakeAgain = false;
  private lastDrainAt = 0;
  private gapTimer?: NodeJS.Timeout;
  /** When this process's relay last advanced: a batch committed, or a drain found nothing to claim (/ready). */
  private lastAdvanceAt = 0;
  /** Why its last drain failed, until one succeeds. */
  private lastFailure?: string;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly outbox: OutboxRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: ServiceMetrics,
    private readonly work: BackgroundWork,
    private readonly readiness: ReadinessChecks,
  ) {}

  onModuleInit(): void {
    this.metrics.addCollector('outbox', async () => {
      const { count, oldestAgeSeconds } = await this.outbox.pending();
      this.metrics.outboxMeasured(count, oldestAgeSeconds);
    });
    this.work.add({
      name: 'outbox relay',
      roles: WORKER_ROLES,
      cadence: `on NOTIFY, and every ${duration(this.config.outbox.pollIntervalMs)}`,
      setting: 'OUTBOX_POLL_INTERVAL_MS',
      start: () => this.start(),
      stop: () => this.stop(),
    });
    this.readiness.add({ name: 'outbox', roles: WORKER_ROLES, run: (database) => this.checkReady(database) });
    this.work.every({ name: 'outbox cleanup', roles: WORKER_ROLES, everyMs: CLEANUP_EVERY_MS, logger: this.logger, run: () => this.cleanup() });
  }

  /** Listens for NOTIFY, polls as a safety net, and drains at once. */
  start(): void {
    this.running = true;
    this.lastAdvanceAt = Date.now();
    void this.listen();
    this.timer = setInterval(() => this.wake(), this.config.outbox.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  /** Stops relaying; resolves once the drain under way has ended. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    if (this.gapTimer) clearTimeout(this.gapTimer);
    await this.listener?.end().catch(() => undefined);
    await this.draining;
  }

  /** Starts a drain (DRAIN_GAP_MS after the last one began, at the earliest), or asks the running one to go round once more. */
  wake(): void {
    if (!this.running || this.gapTimer) return;
    if (this.draining) {
      this.wakeAgain = true;
      return;
    }
    const wait = this.lastDrainAt + DRAIN_GAP_MS - Date.now();
    if (wait > 0) {
      this.gapTimer = setTimeout(() => {
        this.gapTimer = undefined;
        this.wake();
      }, wait);
      return;
    }
    this.lastDrainAt = Date.now();
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.wakeAgain) {
        this.wakeAgain = false;
        this.wake();
      }
    });
  }

  /** Relays batches until none is left; returns how many events were relayed. */
  async drain(): Promise<void> {
    try {
      while (this.running) {
        const relayed = await this.relayBatch();
        this.lastAdvanceAt = Date.now();
        this.lastFailure = undefined;
        if (relayed < BATCH_SIZE) break; // else a full batch: there may be more
      }
    } catch (error) {
      this.lastFailure = error instanceof Error ? error.message : String(error);
      this.logger.warn(`relay failed, will retry: ${this.lastFailure}`);
    }
  }

  private async relayBatch(): Promise<number> {
    const afterCommit: Array<() => Promise<void>> = [];
    const spans: Span[] = [];
    let count: number;
    try {
      count = await this.dataSource.transaction(async (manager) => {
        const events = await this.outbox.claimBatch(manager, BATCH_SIZE);
        if (events.length === 0) return 0;
        this.continueTraces(events, spans);
        for (const after of await this.relayed.run(events, manager)) if (after) afterCommit.push(after);
        await this.outbox.markRelayed(
          manager,
          events.map((e) => e.id),
        );
        return events.length;
      });
    } catch (error) {
      for (const span of spans) recordFailure(span, error);
      throw error;
    } finally {
      for (const span of spans) span.end();
    }
    for (const after of afterCommit) {
      // After commit nothing is lost if this fails: the subscriber's own sweep picks it up.
      await after().catch((error: unknown) => this.logger.warn(`after-commit step failed: ${(error as Error).message}`));
    }
    return count;
  }

  /**
   * /ready's outbox check on the roles that relay: down when events have waited longer than
   * READY_OUTBOX_STALL_SECONDS and this process's relay has not advanced for as long (stopped,
   * failing, or stuck). A relay that keeps committing batches behind a backlog is slow, not stalled.
   */
  private async checkReady(database: ProbeDatabase): Promise<void> {
    const bound = this.config.outbox.readyStallSeconds;
    const oldest = await this.outbox.oldestPendingAgeSeconds(database);
    if (oldest === null || oldest <= bound) return;
    const waiting = `events wait (the oldest for ${Math.round(oldest)} s; READY_OUTBOX_STALL_SECONDS is ${bound})`;
    if (!this.running) throw new Error(`the outbox relay of this process is stopped while ${waiting}`);
    const idle = (Date.now() - this.lastAdvanceAt) / 1000;
    if (idle <= bound) return;
    const failure = this.lastFailure ? `; its last try failed: ${this.lastFailure}` : '';
    throw new Error(`the outbox relay has not advanced for ${Math.round(idle)} s while ${waiting}${failure}`);
  }

  /**
   * Each event published in a trace gets the relay's span in it (from claim to commit), and the
   * subscribers see that span's traceparent instead: what they create (a delivery) continues
   * the trace from here. Nothing when tracing is off.
   */
  private continueTraces(events: PublishedEvent[], spans: Span[]): void {
    for (const event of events) {
      const span = startStoredSpan(event.traceParent, 'outbox relay', {
        kind: SpanKind.CONSUMER,
        attributes: { 'event.type': event.type, 'outbox.event_id': event.id, 'outbox.batch_size': events.length },
      });
      if (!span) continue;
      spans.push(span);
      event.traceParent = traceParentOf(span);
    }
  }

  /**
   * Deletes events relayed more than OUTBOX_RETENTION_MS ago, in batches (never one that is not
   * relayed yet); several workers may run it at once. Answers how many it deleted.
   */
  async cleanup(): Promise<number> {
    return this.outbox.deleteRelayedBefore(OUTBOX_RETENTION_MS, { batchSize: CLEANUP_BATCH, pauseMs: CLEANUP_PAUSE_MS });
  }

  /** A dedicated connection LISTENs for NOTIFY; it reconnects after a database restart. */
  private async listen(): Promise<void> {
    while (this.running) {
      const client = new Client({ connectionString: this.config.databaseUrl });
      try {
        await client.connect();
        this.listener = client;
        client.on('notification', () => this.wake());
        await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
        this.wake();
        await new Promise<void>((resolve) => {
          client.on('error', () => resolve());
          client.on('end', () => resolve());
        });
      } catch {
        // database unavailable: the poll keeps trying, and so do we after a pause
      }
      await client.end().catch(() => undefined);
      if (this.running) await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
