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

/** First attempts that one Bull job hands to the worker together. */
export interface AttemptBatchJob {
  batch: Array<{ deliveryId: string; endpointId: string; attempt: number }>;
}

export type DeliveryJob = AttemptJob | AttemptBatchJob;

/** Most attempts one batch job carries. */
export const ATTEMPT_BATCH_SIZE = 50;

const JOB_OPTIONS = {
  attempts: 1,
  removeOnComplete: true,
  // Failed jobs are not kept: a kept id would block the sweep from re-adding that attempt.
  removeOnFail: true,
} as const;

/**
 * Attempts as Bull jobs. A retry, a sweep's re-drive or a postponed attempt is one job with id
 * `<deliveryId>:<attempt>`: adding the same attempt twice is a no-op, so the database can always
 * re-drive Redis. The first attempts of a fan-out or a recovery go in batch jobs of up to
 * ATTEMPT_BATCH_SIZE (docs/PERFORMANCE.md, "One job per fan-out"): each job costs Bull a few
 * Redis scripts, and one per attempt was most of the worker's share of a delivery. What a lost
 * batch job held is due in the database, and the sweep re-drives it like any lost job.
 */
@Injectable()
export class DeliveryQueue {
  constructor(@InjectQueue(DELIVERY_QUEUE) readonly queue: Queue<DeliveryJob>) {}

  async enqueue(jobs: Array<AttemptJob & { delayMs?: number; jobIdSuffix?: string }>): Promise<void> {
    if (jobs.length === 0) return;
    await this.queue.addBulk(
      jobs.map(({ deliveryId, endpointId, attempt, postponed, delayMs, jobIdSuffix }) => ({
        data: { deliveryId, endpointId, attempt, ...(postponed ? { postponed } : {}) },
        opts: { ...JOB_OPTIONS, jobId: `${deliveryId}:${attempt}${jobIdSuffix ?? ''}`, delay: delayMs && delayMs > 0 ? delayMs : undefined },
      })),
    );
  }

  /** Attempts due now, in batch jobs of up to ATTEMPT_BATCH_SIZE (id `b:<first delivery id>:<attempt>`). */
  async enqueueBatches(attempts: AttemptBatchJob['batch']): Promise<void> {
    const jobs: Array<{ data: AttemptBatchJob; opts: typeof JOB_OPTIONS & { jobId: string } }> = [];
    for (let i = 0; i < attempts.length; i += ATTEMPT_BATCH_SIZE) {
      const batch = attempts.slice(i, i + ATTEMPT_BATCH_SIZE);
      jobs.push({ data: { batch }, opts: { ...JOB_OPTIONS, jobId: `b:${batch[0].deliveryId}:${batch[0].attempt}` } });
    }
    if (jobs.length > 0) await this.queue.addBulk(jobs);
  }
}
