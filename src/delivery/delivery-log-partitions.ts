import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ProbeDatabase, ReadinessChecks } from '../health/readiness-checks';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';
import { DeliveryLogPartitionsRepository } from './delivery-log-partitions.repository';

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
   * /ready on the roles that fan out: not ready when the delivery log's last partition ends within
   * READY_PARTITION_MARGIN_MS (or has ended): with no DEFAULT partition, deliveries dated past it
   * cannot be stored, so fan-out stops. The hourly ensure() (and every start) keeps days ahead.
   */
  private async checkReady(database: ProbeDatabase): Promise<void> {
    const until = await this.repository.lastUntil(database);
    const now = this.clock.now().getTime();
    if (until && until.getTime() - now > READY_PARTITION_MARGIN_MS) return;
    const when = until ? `ends at ${until.toISOString()}` : 'has no partition';
    throw new Error(
      `the delivery log ${when}: deliveries after it cannot be stored (no DEFAULT partition); workers make DELIVERY_LOG_PARTITIONS_AHEAD_DAYS days ahead every hour and at start, so look at their logs ("delivery log partitions ahead")`,
    );
  }

  /** Days from now to the end of webhook_deliveries' last partition (delivery_log_days_ahead). */
  async daysAhead(): Promise<number> {
    const until = await this.repository.lastUntil();
    return until ? (until.getTime() - this.clock.now().getTime()) / DAY_MS : 0;
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
