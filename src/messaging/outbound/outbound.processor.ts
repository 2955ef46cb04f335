import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Job, Queue } from 'bull';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { PeriodicTask } from '../../common/periodic-task';
import { OUTBOUND_QUEUE, OutboundService } from './outbound.service';

const SWEEP_EVERY_MS = 30_000;

/** Runs hand-off jobs in worker processes, and re-enqueues QUEUED messages whose job was lost. */
@Injectable()
export class OutboundProcessor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(OutboundProcessor.name);
  private readonly task = new PeriodicTask('outbound sweep', this.logger, () => this.sweep());

  constructor(
    @InjectQueue(OUTBOUND_QUEUE) private readonly queue: Queue<{ messageId: string }>,
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly outbound: OutboundService,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.processRole === 'api') return;
    void this.queue.process(20, (job: Job<{ messageId: string }>) => this.outbound.handOff(job.data.messageId, job.attemptsMade));
    this.task.start(SWEEP_EVERY_MS);
  }

  onApplicationShutdown(): void {
    this.task.stop();
  }

  async sweep(): Promise<void> {
    const rows: Array<{ id: string }> = await this.dataSource.query(
      `SELECT id FROM messages WHERE direction = 'OUTBOUND' AND status = 'QUEUED' AND created_at < now() - interval '1 minute'
        ORDER BY created_at LIMIT 500`,
    );
    for (const row of rows) await this.outbound.enqueue(row.id);
  }
}
