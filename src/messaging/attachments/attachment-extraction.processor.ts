import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Job, Queue } from 'bull';
import { startProcessing } from '../../queue/start-processing';
import { PeriodicTask } from '../../common/periodic-task';
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
  private readonly task = new PeriodicTask('extraction sweep', this.logger, () => this.sweep());

  constructor(
    @InjectQueue(EXTRACTION_QUEUE) private readonly queue: Queue<ExtractionJob>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly conversations: ConversationsService,
    private readonly extraction: AttachmentExtractionService,
  ) {}

  onModuleInit(): void {
    // A repeated provider webhook (duplicate) enqueues again: harmless (the claim), and it heals a lost enqueue.
    this.conversations.inboundRecorded.add('enqueue attachment extraction', (result) => this.extraction.enqueue(result.attachmentIds));
  }

  onApplicationBootstrap(): void {
    if (this.config.processRole === 'api') return;
    // Files at once per worker process: one per extraction thread, so none waits for a thread (OCR runs one image at a time).
    startProcessing(this.queue, this.config.extraction.threads, (job) => this.extraction.extract(job.data.attachmentId), this.logger);
    this.queue.on('failed', (job: Job<ExtractionJob>, error: Error) =>
      this.logger.warn(`extraction job for attachment ${job.data.attachmentId} failed (attempt ${job.attemptsMade}): ${error.message}`),
    );
    this.task.start(SWEEP_EVERY_MS);
  }

  onApplicationShutdown(): void {
    this.task.stop();
  }

  private async sweep(): Promise<void> {
    const { requeued, interrupted } = await this.extraction.sweep();
    if (requeued || interrupted) this.logger.log(`extraction sweep: ${requeued} re-enqueued, ${interrupted} interrupted claims closed`);
  }
}
