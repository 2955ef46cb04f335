import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { isUndefinedTable } from '../common/errors';
import { deleteInBatches } from '../database/delete-in-batches';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';
import { OrgDeliveryLogRetention } from './org-delivery-log-retention';
import { OrgDeliveryLogRetentionRepository } from './org-delivery-log-retention.repository';
import { DeliveryLogPartitionsRepository } from './delivery-log-partitions.repository';

const PRUNE_EVERY_MS = 10 * 60_000;
/** Rows per DELETE: each batch is one short statement, so no lock is held long. */
export const PRUNE_BATCH = 500;
const PRUNE_PAUSE_MS = 100;
const DAY_MS = 86_400_000;

export interface PruneResult {
  /** Partitions dropped whole (a day, or the history), each from the three tables. */
  droppedDays: string[];
  /** Days past the cutoff kept because deliveries in them still wait (pending or retrying). */
  keptDays: string[];
  deliveries: number;
  payloads: number;
  /** DELETE statements run (each deletes at most PRUNE_BATCH rows). */
  batches: number;
}

/**
 * Retention of the delivery log (DELIVERY_LOG_RETENTION_DAYS, default 30; 0 keeps it forever),
 * every 10 minutes on a worker (docs/delivery-log.md):
 * 1. each day partition (and the history) whose end is before the cutoff is dropped whole, from
 *    the three tables (DeliveryLogPartitionsRepository.drop: DETACH ... CONCURRENTLY, then DROP), unless
 *    deliveries in it still wait (pending or retrying): that day is kept, and logged;
 * 2. what remains before the cutoff (the history until its end passes the cutoff, a day kept in
 *    1) loses its finished deliveries (succeeded, failed or cancelled) with a batched DELETE,
 *    their attempts with them (trigger), then the payloads no delivery refers to any more. Small
 *    batches with a pause between; rows are taken with SKIP LOCKED, so several workers share the
 *    work without waiting on each other or on delivery;
 * 3. each org whose own retention is shorter (OrgDeliveryLogRetention) loses its finished
 *    deliveries past it the same way, in batches through its endpoints' index.
 */
@Injectable()
export class DeliveryLogRetention implements OnModuleInit {
  private readonly logger = new Logger(DeliveryLogRetention.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly work: BackgroundWork,
    private readonly partitions: DeliveryLogPartitionsRepository,
    private readonly orgs: OrgDeliveryLogRetention,
    private readonly orgRows: OrgDeliveryLogRetentionRepository,
    private readonly metrics: ServiceMetrics,
  ) {}

  onModuleInit(): void {
    this.work.every({
      name: 'delivery log retention',
      roles: WORKER_ROLES,
      everyMs: PRUNE_EVERY_MS,
      setting: 'DELIVERY_LOG_RETENTION_DAYS',
      enabled: this.config.delivery.logRetentionDays > 0,
      logger: this.logger,
      run: () => this.prune(),
    });
  }

  async prune(): Promise<PruneResult> {
    if (this.config.delivery.logRetentionDays === 0) return { droppedDays: [], keptDays: [], deliveries: 0, payloads: 0, batches: 0 };
    const cutoff = new Date(this.clock.now().getTime() - this.config.delivery.logRetentionDays * DAY_MS);
    const droppedDays: string[] = [];
    const keptDays: string[] = [];
    const unexpected = await this.partitions.unexpected();
    if (unexpected.length) {
      this.logger.error(
        `the delivery log has partitions that are not its days: ${unexpected.join(', ')}; retention leaves them alone, and while one is a DEFAULT partition no day can be detached concurrently: move its rows into their days and drop it (docs/delivery-log.md, "Operator notes")`,
      );
    }
    // A day that cannot be dropped now (a lock that would not come, a DEFAULT partition) does not
    // hold up the other days or the deletes below; the run fails at its end, saying which.
    const failures: string[] = [];
    for (const partition of await this.partitions.list()) {
      if (partition.until > cutoff) break;
      try {
        if (await this.partitions.hasUnfinished(partition.day)) {
          keptDays.push(partition.day);
          continue;
        }
        await this.partitions.drop(partition.day);
        droppedDays.push(partition.day);
      } catch (error) {
        // Another worker's retention dropped the table meanwhile: nothing left to do here.
        if (isUndefinedTable(error)) continue;
        failures.push(`${partition.day}: ${(error as Error).message}`);
      }
    }
    this.metrics.deliveryLogPruned(droppedDays.length, keptDays.length);
    if (droppedDays.length) this.logger.log(`dropped the delivery log partitions ${droppedDays.join(', ')} (before ${cutoff.toISOString()})`);
    if (keptDays.length) this.logger.warn(`kept the delivery log partitions ${keptDays.join(', ')} past retention: deliveries in them still wait`);
    const options = { batchSize: PRUNE_BATCH, pauseMs: PRUNE_PAUSE_MS };
    // Attempts go with their delivery (trigger webhook_deliveries_attempts_gone); a resend of a
    // deleted delivery keeps its own row and its resentFromId. The outer statements repeat the
    // cutoff so that only the partitions before it are probed for the batch's ids, not every day.
    const deliveries = await deleteInBatches(
      this.dataSource,
      `DELETE FROM webhook_deliveries WHERE created_at < $1 AND id = ANY (ARRAY(
         SELECT id FROM webhook_deliveries
          WHERE status IN ('succeeded', 'failed', 'cancelled') AND created_at < $1
          ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [cutoff],
      options,
    );
    // A payload is in its deliveries' day (or the history, for theirs); one still referred to
    // stays. Deliveries removed otherwise (their endpoint was deleted) leave theirs here too.
    const payloads = await deleteInBatches(
      this.dataSource,
      `DELETE FROM webhook_payloads WHERE created_at < $1 AND id = ANY (ARRAY(
         SELECT p.id FROM webhook_payloads p
          WHERE p.created_at < $1
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                             WHERE d.payload_id = p.id AND ((d.created_at >= p.created_at AND d.created_at < p.created_at + interval '1 day')
                                                            OR d.created_at < delivery_log_history_until()))
          ORDER BY p.created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [cutoff],
      options,
    );
    if (deliveries.rows || payloads.rows)
      this.logger.log(`deleted ${deliveries.rows} deliveries and ${payloads.rows} payloads created before ${cutoff.toISOString()}`);
    const orgs = await this.pruneShorterOrgs();
    if (failures.length) throw new Error(`could not drop the delivery log partitions ${failures.join('; ')} (tried again at the next run)`);
    return {
      droppedDays,
      keptDays,
      deliveries: deliveries.rows + orgs.deliveries,
      payloads: payloads.rows + orgs.payloads,
      batches: deliveries.batches + payloads.batches + orgs.batches,
    };
  }

  /** 3. Each org whose own retention is shorter: its finished deliveries past it, in batches (OrgDeliveryLogRetention). */
  private async pruneShorterOrgs(): Promise<{ deliveries: number; payloads: number; batches: number }> {
    const total = { deliveries: 0, payloads: 0, batches: 0 };
    for (const { orgId, cutoff } of await this.orgs.shorterThanGlobal(this.clock.now())) {
      const before = total.deliveries;
      for (;;) {
        const batch = await this.orgRows.deleteBatch(orgId, cutoff, PRUNE_BATCH);
        total.deliveries += batch.deliveries;
        total.payloads += batch.payloads;
        total.batches += 1;
        if (batch.deliveries < PRUNE_BATCH) break;
        await new Promise((resolve) => setTimeout(resolve, PRUNE_PAUSE_MS));
      }
      if (total.deliveries > before)
        this.logger.log(`deleted ${total.deliveries - before} deliveries of org ${orgId} created before ${cutoff.toISOString()} (its own retention)`);
    }
    return total;
  }
}
