import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Job, Queue } from 'bull';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { ConversationsService } from '../conversations/conversations.service';
import { AttachmentExtractionService, EXTRACTION_QUEUE, ExtractionJob } from './attachment-extraction.service';

const SWEEP_EVERY_MS = 30_000;

/**
 * Wires extraction in: every process enqueues jobs for the attachments of new inbound messages;
 * worker processes (PROCESS_ROLE worker or all) run the jobs and the sweep.
 */
@Injectable()
export class AttachmentExtractionProcessor implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(AttachmentExtractionProcessor.name);
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectQueue(EXTRACTION_QUEUE) private readonly queue: Queue<ExtractionJob>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly conversations: ConversationsService,
    private readonly extraction: AttachmentExtractionService,
  ) {}

  onModuleInit(): void {
    // A repeated provider webhook (duplicate) enqueues again: harmless (the claim), and it heals a lost enqueue.
    this.conversations.onInboundRecorded((result) => this.extraction.enqueue(result.attachmentIds));
  }

  onApplicationBootstrap(): void {
    if (this.config.processRole === 'api') return;
    // Files at once per worker process: one per extraction thread, so none waits for a thread (OCR runs one image at a time).
    void this.queue.process(this.config.extraction.threads, async (job: Job<ExtractionJob>) => {
      await this.extraction.extract(job.data.attachmentId);
    });
    this.queue.on('failed', (job: Job<ExtractionJob>, error: Error) =>
      this.logger.warn(`extraction job for attachment ${job.data.attachmentId} failed (attempt ${job.attemptsMade}): ${error.message}`),
    );
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async sweep(): Promise<void> {
    try {
      const { requeued, interrupted } = await this.extraction.sweep();
      if (requeued || interrupted) this.logger.log(`extraction sweep: ${requeued} re-enqueued, ${interrupted} interrupted claims closed`);
    } catch (error) {
      this.logger.warn(`extraction sweep failed: ${(error as Error).message}`);
    }
  }
}
