import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { Clock } from '../common/clock';
import { isNoPartitionFor } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ProbeDatabase, ReadinessChecks } from '../health/readiness-checks';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';
import { DELIVERY_LOG_TABLES, DeliveryLogPartitionsRepository } from './delivery-log-partitions.repository';

const ENSURE_EVERY_MS = 60 * 60_000;
/** /ready fails this long before the last partition ends (two of ensure()'s hourly runs). */
const READY_PARTITION_MARGIN_MS = 2 * ENSURE_EVERY_MS;
const DAY_MS = 86_400_000;

/**
 * The partitions of the delivery log (migration DeliveryLogPartitions, docs/delivery-log.md):
 * one per UTC day and table, `<table>_pYYYYMMDD`, and `<table>_history`, with no DEFAULT
 * partition, so a delivery on a day without its partition cannot be stored. Every process makes
 * sure today's and the next DELIVERY_LOG_PARTITIONS_AHEAD_DAYS days' exist when it starts (an
 * API-only deployment too), and the workers every hour; the SQL function
 * delivery_log_create_partitions is idempotent and serialized, so racing processes are safe.
 * Retention (delivery-log-retention.ts) drops whole days (DeliveryLogPartitionsRepository.drop).
 */
@Injectable()
export class DeliveryLogPartitions implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger(DeliveryLogPartitions.name);
  /** The repair under way (repairAfter), if any. */
  private repairing: Promise<void> | null = null;

  constructor(
    private readonly repository: DeliveryLogPartitionsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly work: BackgroundWork,
    private readonly metrics: ServiceMetrics,
    private readonly readiness: ReadinessChecks,
  ) {}

  onModuleInit(): void {
    this.work.every({
      name: 'delivery log partitions ahead',
      roles: WORKER_ROLES,
      everyMs: ENSURE_EVERY_MS,
      setting: 'DELIVERY_LOG_PARTITIONS_AHEAD_DAYS',
      logger: this.logger,
      run: () => this.ensure(),
    });
    this.metrics.addCollector('delivery log partitions', async () => this.metrics.deliveryLogMeasured(await this.daysAhead()));
    this.readiness.add({ name: 'delivery_log', roles: WORKER_ROLES, run: (database) => this.checkReady(database) });
  }

  /**
   * /ready on the roles that fan out: not ready when one of the three tables has no partition for
   * some moment between now and READY_PARTITION_MARGIN_MS ahead (its days end, or a day in between
   * is missing: dropped by hand, say): with no DEFAULT partition, rows dated then cannot be
   * stored, so fan-out stops. The hourly ensure(), every start, and a write that meets a missing
   * day (repairAfter) make the days again.
   */
  private async checkReady(database: ProbeDatabase): Promise<void> {
    const now = this.clock.now();
    const short = (await this.repository.coveredFrom(now, database)).filter((c) => c.until.getTime() - now.getTime() <= READY_PARTITION_MARGIN_MS);
    if (short.length === 0) return;
    const gaps = short.map((c) => `${c.table} from ${c.until.toISOString()}`).join('; ');
    throw new Error(
      `the delivery log has no partition for ${gaps}: rows dated then cannot be stored (no DEFAULT partition); workers make today's and DELIVERY_LOG_PARTITIONS_AHEAD_DAYS days ahead every hour and at start, so look at their logs ("delivery log partitions ahead")`,
    );
  }

  /** Days from now until the first moment one of the three tables has no partition for (delivery_log_days_ahead). */
  async daysAhead(): Promise<number> {
    const now = this.clock.now();
    const covered = await this.repository.coveredFrom(now);
    return Math.min(...covered.map((c) => c.until.getTime() - now.getTime())) / DAY_MS;
  }

  /**
   * Called with the error of a write to the delivery log (DeliveriesRepository): when it is
   * PostgreSQL's "no partition of relation ... found for row" (a day dropped by hand, or days
   * not made ahead), makes today's and the days ahead again at once, rather than at the next
   * hourly run, so the relay's next try of the batch stores it. One repair at a time.
   */
  repairAfter(error: unknown): void {
    if (!isNoPartitionFor(error, DELIVERY_LOG_TABLES) || this.repairing) return;
    this.logger.warn(`a delivery log partition is missing (${(error as Error).message}): making today's and the days ahead again`);
    this.repairing = this.ensure()
      .catch((failure: unknown) => this.logger.error(`could not make the delivery log's partitions again: ${String(failure)}`))
      .then(() => {
        this.repairing = null;
      });
  }

  /** At start, in every role: a failure is logged, not fatal (the partitions made ahead before still serve). */
  async onApplicationBootstrap(): Promise<void> {
    await this.ensure().catch((error: unknown) => this.logger.error(`could not create the delivery log's partitions ahead: ${String(error)}`));
  }

  /** Creates the day partitions missing from today to DELIVERY_LOG_PARTITIONS_AHEAD_DAYS days ahead; answers how many tables it made. */
  async ensure(): Promise<number> {
    const today = this.clock.now();
    const last = new Date(today.getTime() + this.config.delivery.logPartitionsAheadDays * DAY_MS);
    const made = await this.repository.create(utcDate(today), utcDate(last));
    if (made > 0) this.logger.log(`created ${made} delivery log partitions up to ${utcDate(last)}`);
    return made;
  }
}

function utcDate(at: Date): string {
  return at.toISOString().slice(0, 10);
}
