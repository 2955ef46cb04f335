import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Job, Queue } from 'bull';
import { startProcessing } from '../queue/start-processing';
import { PeriodicTask } from '../common/periodic-task';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ConversationsService } from '../conversations/conversations.service';
import { AttachmentExtractionService, EXTRACTION_QUEUE, ExtractionJob, ExtractionRun } from './attachment-extraction.service';

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
    // One org's files hold at most EXTRACTION_ORG_MAX_THREADS of them (fewer than the threads by
    // default): its other jobs step aside at once, so a free one takes the next job in the queue.
    startProcessing(this.queue, this.config.extraction.threads, (job) => this.extraction.runJob(job.data), this.logger);
    // A job that stepped aside goes back under its id once Bull has completed and removed it (the id is free again).
    this.queue.on('completed', (job: Job<ExtractionJob>, run: ExtractionRun) => {
      if (run === 'deferred') void this.extraction.requeue(job.data);
    });
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
