import { InjectQueue } from '@nestjs/bull';
import { Injectable } from '@nestjs/common';
import { Queue } from 'bull';

export const DELIVERY_QUEUE = 'webhook-delivery';

export interface AttemptJob {
  deliveryId: string;
  /** Lets a worker cap the attempts in flight per endpoint without a database read. */
  endpointId?: string;
  /** How often this attempt was put back because its endpoint had its share of slots. */
  postponed?: number;
  /** Which attempt this job is (1 = first); a stale duplicate finds the row moved on and does nothing. */
  attempt: number;
}

/**
 * One Bull job per attempt, with id `<deliveryId>:<attempt>`: adding the same attempt twice
 * (relay replay, sweep, resend) is a no-op, so the database can always re-drive Redis.
 */
@Injectable()
export class DeliveryQueue {
  constructor(@InjectQueue(DELIVERY_QUEUE) readonly queue: Queue<AttemptJob>) {}

  async enqueue(jobs: Array<AttemptJob & { delayMs?: number; jobIdSuffix?: string }>): Promise<void> {
    if (jobs.length === 0) return;
    await this.queue.addBulk(
      jobs.map(({ deliveryId, endpointId, attempt, postponed, delayMs, jobIdSuffix }) => ({
        data: { deliveryId, endpointId, attempt, ...(postponed ? { postponed } : {}) },
        opts: {
          jobId: `${deliveryId}:${attempt}${jobIdSuffix ?? ''}`,
          delay: delayMs && delayMs > 0 ? delayMs : undefined,
          attempts: 1,
          removeOnComplete: true,
          // Failed jobs are not kept: a kept id would block the sweep from re-adding that attempt.
          removeOnFail: true,
        },
      })),
    );
  }
}
