import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { deleteInBatches } from '../database/delete-in-batches';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';

const PRUNE_EVERY_MS = 10 * 60_000;
/** Rows per DELETE: each batch is one short statement, so no lock is held long. */
export const PRUNE_BATCH = 500;
const PRUNE_PAUSE_MS = 100;
const DAY_MS = 86_400_000;

export interface PruneResult {
  deliveries: number;
  payloads: number;
  /** DELETE statements run (each deletes at most PRUNE_BATCH rows). */
  batches: number;
}

/**
 * Retention of the delivery log (DELIVERY_LOG_RETENTION_DAYS, default 30; 0 keeps it forever):
 * every 10 minutes a worker deletes the deliveries created before the cutoff that are finished
 * (succeeded, failed or cancelled, never one still pending or retrying), their attempts with
 * them, then the payloads no delivery refers to any more. Small batches with a pause between;
 * rows are taken with SKIP LOCKED, so several workers share the work without waiting on each
 * other or on delivery.
 */
@Injectable()
export class DeliveryLogRetention implements OnModuleInit {
  private readonly logger = new Logger(DeliveryLogRetention.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly work: BackgroundWork,
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
    if (this.config.delivery.logRetentionDays === 0) return { deliveries: 0, payloads: 0, batches: 0 };
    const cutoff = new Date(this.clock.now().getTime() - this.config.delivery.logRetentionDays * DAY_MS);
    const options = { batchSize: PRUNE_BATCH, pauseMs: PRUNE_PAUSE_MS };
    // Attempts go with their delivery (ON DELETE CASCADE); a resend of a deleted delivery keeps
    // its own row, its resentFromId set to null (ON DELETE SET NULL).
    const deliveries = await deleteInBatches(
      this.dataSource,
      `DELETE FROM webhook_deliveries WHERE id = ANY (ARRAY(
         SELECT id FROM webhook_deliveries
          WHERE status IN ('succeeded', 'failed', 'cancelled') AND created_at < $1
          ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [cutoff],
      options,
    );
    // A payload is as old as its first delivery; one still referred to (a recent resend of an old
    // delivery) stays. Deliveries removed otherwise (their endpoint was deleted) leave theirs here too.
    const payloads = await deleteInBatches(
      this.dataSource,
      `DELETE FROM webhook_payloads WHERE id = ANY (ARRAY(
         SELECT p.id FROM webhook_payloads p
          WHERE p.created_at < $1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.payload_id = p.id)
          ORDER BY p.created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [cutoff],
      options,
    );
    if (deliveries.rows || payloads.rows)
      this.logger.log(`deleted ${deliveries.rows} deliveries and ${payloads.rows} payloads created before ${cutoff.toISOString()}`);
    return { deliveries: deliveries.rows, payloads: payloads.rows, batches: deliveries.batches + payloads.batches };
  }
}
