import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { deleteInBatches } from '../database/delete-in-batches';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';

const PRUNE_EVERY_MS = 60 * 60_000;
/** Rows per DELETE: each batch is one short statement, so no lock is held long. */
export const AUDIT_PRUNE_BATCH = 1000;
const PRUNE_PAUSE_MS = 100;
const DAY_MS = 86_400_000;

/**
 * Retention of the audit trail (AUDIT_RETENTION_DAYS, default 365; 0 keeps it forever): every hour
 * a worker deletes the rows older than the cutoff, oldest first, in batches of AUDIT_PRUNE_BATCH
 * with a pause between, taken with SKIP LOCKED so several workers share the work, as the
 * delivery log is pruned (delivery/delivery-log-retention.ts).
 */
@Injectable()
export class AuditRetention implements OnModuleInit {
  private readonly logger = new Logger(AuditRetention.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly work: BackgroundWork,
  ) {}

  onModuleInit(): void {
    this.work.every({
      name: 'audit trail retention',
      roles: WORKER_ROLES,
      everyMs: PRUNE_EVERY_MS,
      setting: 'AUDIT_RETENTION_DAYS',
      enabled: this.config.audit.retentionDays > 0,
      logger: this.logger,
      run: () => this.prune(),
    });
  }

  /** Deletes the rows older than the retention; answers how many and in how many statements. */
  async prune(): Promise<{ rows: number; batches: number }> {
    if (this.config.audit.retentionDays === 0) return { rows: 0, batches: 0 };
    const cutoff = new Date(this.clock.now().getTime() - this.config.audit.retentionDays * DAY_MS);
    const result = await deleteInBatches(
      this.dataSource,
      `DELETE FROM audit_events WHERE id = ANY (ARRAY(
         SELECT id FROM audit_events WHERE at < $1 ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [cutoff],
      { batchSize: AUDIT_PRUNE_BATCH, pauseMs: PRUNE_PAUSE_MS },
    );
    if (result.rows) this.logger.log(`deleted ${result.rows} audit rows from before ${cutoff.toISOString()}`);
    return result;
  }
}
