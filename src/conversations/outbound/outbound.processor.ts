import { InjectQueue } from '@nestjs/bull';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Queue } from 'bull';
import { BackgroundWork, WORKER_ROLES } from '../../queue/background-work';
import { SendPoliciesService } from '../../send-policies/send-policies.service';
import { OutboundRepository } from './outbound.repository';
import { IDEMPOTENCY_KEY_LIVE_MS, OUTBOUND_QUEUE, OutboundJob, OutboundService } from './outbound.service';
import { ScheduledSends } from './scheduled-sends';
import { SendIdempotencyKeysRepository } from './send-idempotency-keys.repository';

const SWEEP_EVERY_MS = 30_000;
const HAND_OFFS_AT_ONCE = 20;

/**
 * Runs hand-off jobs and scheduled messages' due jobs in worker processes; its sweep releases due
 * SCHEDULED messages whose job was lost, re-enqueues QUEUED messages whose job was lost, and
 * deletes expired idempotency keys and the send policies' per-hour counts of hours past every window.
 */
@Injectable()
export class OutboundProcessor implements OnModuleInit {
  private readonly logger = new Logger(OutboundProcessor.name);

  constructor(
    @InjectQueue(OUTBOUND_QUEUE) private readonly queue: Queue<OutboundJob>,
    private readonly messages: OutboundRepository,
    private readonly outbound: OutboundService,
    private readonly scheduled: ScheduledSends,
    private readonly idempotencyKeys: SendIdempotencyKeysRepository,
    private readonly work: BackgroundWork,
    private readonly policies: SendPoliciesService,
  ) {}

  onModuleInit(): void {
    this.work.queue({
      name: 'outbound hand-off',
      roles: WORKER_ROLES,
      queue: this.queue,
      concurrency: HAND_OFFS_AT_ONCE,
      logger: this.logger,
      run: (job) => (job.data.due ? this.scheduled.release(job.data.messageId) : this.outbound.handOff(job.data.messageId, job.attemptsMade)),
    });
    this.work.every({ name: 'outbound sweep', roles: WORKER_ROLES, everyMs: SWEEP_EVERY_MS, logger: this.logger, run: () => this.sweep() });
  }

  async sweep(): Promise<void> {
    await this.scheduled.releaseDue();
    const rows = await this.messages.staleQueued();
    for (const row of rows) await this.outbound.enqueue(row.id);
    await this.idempotencyKeys.deleteExpired(IDEMPOTENCY_KEY_LIVE_MS);
    await this.policies.pruneCounts();
  }
}
