import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Queue } from 'bull';
import { startProcessing } from '../../queue/start-processing';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { PeriodicTask } from '../../common/periodic-task';
import { OutboundRepository } from './outbound.repository';
import { IDEMPOTENCY_KEY_LIVE_MS, OUTBOUND_QUEUE, OutboundService } from './outbound.service';
import { SendIdempotencyKeysRepository } from './send-idempotency-keys.repository';

const SWEEP_EVERY_MS = 30_000;

/** Runs hand-off jobs in worker processes, re-enqueues QUEUED messages whose job was lost, and deletes expired idempotency keys. */
@Injectable()
export class OutboundProcessor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(OutboundProcessor.name);
  private readonly task = new PeriodicTask('outbound sweep', this.logger, () => this.sweep());

  constructor(
    @InjectQueue(OUTBOUND_QUEUE) private readonly queue: Queue<{ messageId: string }>,
    private readonly messages: OutboundRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly outbound: OutboundService,
    private readonly idempotencyKeys: SendIdempotencyKeysRepository,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.processRole === 'api') return;
    startProcessing(this.queue, 20, (job) => this.outbound.handOff(job.data.messageId, job.attemptsMade), this.logger);
    this.task.start(SWEEP_EVERY_MS);
  }

  onApplicationShutdown(): void {
    this.task.stop();
  }

  async sweep(): Promise<void> {
    const rows = await this.messages.staleQueued();
    for (const row of rows) await this.outbound.enqueue(row.id);
    await this.idempotencyKeys.deleteExpired(IDEMPOTENCY_KEY_LIVE_MS);
  }
}
