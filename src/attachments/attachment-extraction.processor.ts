import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Job, Queue } from 'bull';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';
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
export class AttachmentExtractionProcessor implements OnModuleInit {
  private readonly logger = new Logger(AttachmentExtractionProcessor.name);

  constructor(
    @InjectQueue(EXTRACTION_QUEUE) private readonly queue: Queue<ExtractionJob>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly conversations: ConversationsService,
    private readonly extraction: AttachmentExtractionService,
    private readonly work: BackgroundWork,
  ) {}

  onModuleInit(): void {
    // A repeated provider webhook (duplicate) enqueues again: harmless (the claim), and it heals a lost enqueue.
    this.conversations.inboundRecorded.add('enqueue attachment extraction', (result) => this.extraction.enqueue(result.attachmentIds));
    // Files at once per worker process: one per extraction thread, so none waits for a thread (OCR runs one image at a time).
    // One org's files hold at most EXTRACTION_ORG_MAX_THREADS of them (fewer than the threads by
    // default): its other jobs step aside at once, so a free one takes the next job in the queue.
    this.work.queue({
      name: 'attachment extraction',
      roles: WORKER_ROLES,
      queue: this.queue,
      concurrency: this.config.extraction.threads,
      setting: 'EXTRACTION_THREADS',
      logger: this.logger,
      run: (job) => this.extraction.runJob(job.data),
    });
    // Bull's completed and failed events are local: they come only for the jobs this process runs.
    // A job that stepped aside goes back under its id once Bull has completed and removed it (the id is free again).
    this.queue.on('completed', (job: Job<ExtractionJob>, run: ExtractionRun) => {
      if (run === 'deferred') void this.extraction.requeue(job.data);
    });
    this.queue.on('failed', (job: Job<ExtractionJob>, error: Error) =>
      this.logger.warn(`extraction job for attachment ${job.data.attachmentId} failed (attempt ${job.attemptsMade}): ${error.message}`),
    );
    this.work.every({ name: 'extraction sweep', roles: WORKER_ROLES, everyMs: SWEEP_EVERY_MS, logger: this.logger, run: () => this.sweep() });
  }

  private async sweep(): Promise<void> {
    const { requeued, interrupted } = await this.extraction.sweep();
    if (requeued || interrupted) this.logger.log(`extraction sweep: ${requeued} re-enqueued, ${interrupted} interrupted claims closed`);
  }
}
