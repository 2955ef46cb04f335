import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { deleteInBatches, PeriodicTask } from '../common/periodic-task';
import { EventKind } from './event-kinds';
import { EventSubscriber, PublishedEvent } from './domain-event';
import { OUTBOX_CHANNEL } from './event-bus';

const BATCH_SIZE = 500;
/** Relayed events are kept this long (for a replay by hand), then deleted. */
export const OUTBOX_RETENTION_MS = 7 * 24 * 3_600_000;
const CLEANUP_EVERY_MS = 10 * 60_000;
const CLEANUP_BATCH = 1000;
const CLEANUP_PAUSE_MS = 100;

/**
 * Hands committed outbox events to the subscribers, at least once. Several replicas may run:
 * each batch is claimed with FOR UPDATE SKIP LOCKED, handed over in the same transaction and
 * marked relayed when that commits. Woken by NOTIFY, with a poll as a safety net; a failed batch
 * (Redis down, database restart) rolls back and is tried again on the next wake.
 */
@Injectable()
export class OutboxRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(OutboxRelay.name);
  private readonly subscribers: EventSubscriber[] = [];
  private listener?: Client;
  private timer?: NodeJS.Timeout;
  private running = false;
  private draining?: Promise<void>;
  private wakeAgain = false;
  private readonly cleanupTask = new PeriodicTask('outbox cleanup', this.logger, () => this.cleanup());

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  subscribe(subscriber: EventSubscriber): void {
    this.subscribers.push(subscriber);
  }

  onApplicationBootstrap(): void {
    if (this.config.processRole === 'api') return;
    this.running = true;
    void this.listen();
    this.timer = setInterval(() => this.wake(), this.config.outbox.pollIntervalMs);
    this.timer.unref();
    this.cleanupTask.start(CLEANUP_EVERY_MS);
    this.wake();
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.cleanupTask.stop();
    await this.listener?.end().catch(() => undefined);
    await this.draining;
  }

  /** Starts a drain, or asks the running one to go round once more. */
  wake(): void {
    if (!this.running) return;
    if (this.draining) {
      this.wakeAgain = true;
      return;
    }
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
      while (this.running && (await this.relayBatch()) === BATCH_SIZE) {
        // a full batch: there may be more
      }
    } catch (error) {
      this.logger.warn(`relay failed, will retry: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private async relayBatch(): Promise<number> {
    const afterCommit: Array<() => Promise<void>> = [];
    const count = await this.dataSource.transaction(async (manager) => {
      const rows: Array<{ id: string; type: EventKind; org_id: string; line_id: string | null; data: object; occurred_at: Date }> = await manager.query(
        `SELECT id, type, org_id, line_id, data, occurred_at FROM outbox_events
            WHERE relayed_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [BATCH_SIZE],
      );
      if (rows.length === 0) return 0;
      const events = rows.map(
        (r) => ({ id: String(r.id), type: r.type, orgId: r.org_id, lineId: r.line_id, data: r.data, occurredAt: r.occurred_at }) as PublishedEvent,
      );
      for (const subscriber of this.subscribers) {
        const after = await subscriber.handle(events, manager);
        if (after) afterCommit.push(after);
      }
      await manager.query(`UPDATE outbox_events SET relayed_at = now() WHERE id = ANY($1::bigint[])`, [events.map((e) => e.id)]);
      return rows.length;
    });
    for (const after of afterCommit) {
      // After commit nothing is lost if this fails: the subscriber's own sweep picks it up.
      await after().catch((error: unknown) => this.logger.warn(`after-commit step failed: ${(error as Error).message}`));
    }
    return count;
  }

  /**
   * Deletes events relayed more than OUTBOX_RETENTION_MS ago, in batches (never one that is not
   * relayed yet); several workers may run it at once. Answers how many it deleted.
   */
  async cleanup(): Promise<number> {
    const { rows } = await deleteInBatches(
      this.dataSource,
      `DELETE FROM outbox_events WHERE id = ANY (ARRAY(
         SELECT id FROM outbox_events WHERE relayed_at < now() - $1::interval ORDER BY relayed_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [`${OUTBOX_RETENTION_MS} milliseconds`],
      { batchSize: CLEANUP_BATCH, pauseMs: CLEANUP_PAUSE_MS },
    );
    return rows;
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
