import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Job } from 'bull';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { DeliveryAttemptFailed, DeliveryAttemptsService } from './delivery-attempts.service';
import { AttemptJob, DeliveryQueue } from './delivery-queue';

/**
 * Runs delivery attempts from the queue in `worker` and `all` processes (an `api` process only
 * enqueues). A failed attempt throws, so Bull records it; the next try is its own delayed job.
 */
@Injectable()
export class DeliveryProcessor implements OnApplicationBootstrap {
  private readonly logger = new Logger(DeliveryProcessor.name);

  constructor(
    private readonly queue: DeliveryQueue,
    private readonly attempts: DeliveryAttemptsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.processRole === 'api') return;
    void this.queue.queue.process(this.config.delivery.concurrency, (job: Job<AttemptJob>) => this.run(job));
  }

  async run(job: Job<AttemptJob>): Promise<string> {
    const { deliveryId, attempt } = job.data;
    const outcome = await this.attempts.attempt(deliveryId, attempt);
    if (outcome === 'retrying' || outcome === 'failed') {
      throw new DeliveryAttemptFailed(`delivery ${deliveryId} attempt ${attempt} failed (${outcome})`);
    }
    this.logger.debug(`delivery ${deliveryId} attempt ${attempt}: ${outcome}`);
    return outcome;
  }
}
