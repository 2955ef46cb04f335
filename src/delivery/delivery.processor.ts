import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Job } from 'bull';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { DeliveryAttemptsService } from './delivery-attempts.service';
import { AttemptJob, DeliveryQueue } from './delivery-queue';

/**
 * How long a job waits when its endpoint already has its share of attempts in flight: briefly
 * at first (a healthy endpoint's burst clears in milliseconds), doubling up to a second for an
 * endpoint whose attempts hang.
 */
const FIRST_POSTPONE_MS = 20;
const MAX_POSTPONE_MS = 1000;

/**
 * Runs delivery attempts from the queue in `worker` and `all` processes (an `api` process only
 * enqueues). The job completes with the attempt's outcome whatever it was: the database keeps
 * the attempt, and the next try is its own delayed job (a thrown error would only make Bull
 * capture a stack trace for a job that is removed at once).
 *
 * Isolation: one endpoint may hold at most DELIVERY_ENDPOINT_CONCURRENCY of this worker's slots.
 * A job beyond that is put back for a moment (a new delayed job; the database claim keeps it to
 * one send), so a receiver that hangs until the timeout cannot starve the others.
 */
@Injectable()
export class DeliveryProcessor implements OnApplicationBootstrap {
  private readonly logger = new Logger(DeliveryProcessor.name);
  private readonly inFlight = new Map<string, number>();

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
    const { deliveryId, endpointId, attempt, postponed = 0 } = job.data;
    if (endpointId && (this.inFlight.get(endpointId) ?? 0) >= this.config.delivery.endpointConcurrency) {
      const delay = Math.min(MAX_POSTPONE_MS, FIRST_POSTPONE_MS * 2 ** postponed);
      // Two alternating ids per attempt (…:pa, …:pb): a second chain started for the same attempt
      // (the sweep re-adding an overdue delivery) meets the first one's id and is dropped, so
      // postponed jobs never multiply, while a job can always hand over to the other id.
      const jobIdSuffix = String(job.id).endsWith(':pa') ? ':pb' : ':pa';
      await this.queue.enqueue([
        { deliveryId, endpointId, attempt, postponed: postponed + 1, delayMs: delay + Math.floor(Math.random() * delay), jobIdSuffix },
      ]);
      return 'postponed';
    }
    if (endpointId) this.inFlight.set(endpointId, (this.inFlight.get(endpointId) ?? 0) + 1);
    let outcome;
    try {
      outcome = await this.attempts.attempt(deliveryId, attempt);
    } finally {
      if (endpointId) {
        const left = (this.inFlight.get(endpointId) ?? 1) - 1;
        if (left > 0) this.inFlight.set(endpointId, left);
        else this.inFlight.delete(endpointId);
      }
    }
    this.logger.debug(`delivery ${deliveryId} attempt ${attempt}: ${outcome}`);
    return outcome;
  }
}
