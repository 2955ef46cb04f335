import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';
import { DeliveryAttemptsRepository } from './delivery-attempts.repository';
import { DeliveryQueue } from './delivery-queue';
import { DeliveryProcessor } from './delivery.processor';

const SWEEP_BATCH = 1000;

/**
 * The database is the record of what is owed; Redis only runs it. The sweep finds deliveries due
 * for longer than the grace period (their job was lost: Redis was down or emptied, a worker died
 * mid-attempt, an enqueue failed after commit) and enqueues their next attempt again. Job ids
 * make this a no-op for jobs that still exist.
 */
@Injectable()
export class DeliverySweeper implements OnModuleInit {
  private readonly logger = new Logger(DeliverySweeper.name);

  constructor(
    private readonly attempts: DeliveryAttemptsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: DeliveryQueue,
    private readonly processor: DeliveryProcessor,
    private readonly work: BackgroundWork,
  ) {}

  onModuleInit(): void {
    this.work.every({
      name: 'delivery sweep',
      roles: WORKER_ROLES,
      everyMs: this.config.delivery.sweepIntervalMs,
      setting: 'DELIVERY_SWEEP_INTERVAL_MS',
      logger: this.logger,
      run: () => this.sweep(),
    });
  }

  /** Re-enqueues overdue deliveries; returns how many it found. */
  async sweep(): Promise<number> {
    let found = 0;
    let batch: Array<{ id: string; endpoint_id: string; attempt_count: number }>;
    let after = '00000000-0000-0000-0000-000000000000';
    do {
      batch = await this.attempts.overdue(this.config.delivery.sweepGraceMs, after, SWEEP_BATCH);
      if (batch.length === 0) break;
      after = batch[batch.length - 1].id;
      // An attempt parked in this worker is not lost, only waiting for its endpoint: not queued again.
      const lost = batch.filter((row) => !this.processor.isParked(row.id, row.attempt_count + 1));
      found += lost.length;
      await this.queue.enqueue(lost.map((row) => ({ deliveryId: row.id, endpointId: row.endpoint_id, attempt: row.attempt_count + 1 })));
    } while (batch.length === SWEEP_BATCH);
    return found;
  }
}
