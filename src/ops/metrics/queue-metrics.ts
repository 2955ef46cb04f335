import { Injectable, OnModuleInit } from '@nestjs/common';
import { ServiceQueues } from '../../queue/queue.module';
import { ServiceMetrics } from './service-metrics';

/** queue_jobs{queue,state}: every Bull queue of the service, counted in Redis at scrape time. */
@Injectable()
export class QueueMetrics implements OnModuleInit {
  constructor(
    private readonly queues: ServiceQueues,
    private readonly metrics: ServiceMetrics,
  ) {}

  onModuleInit(): void {
    this.metrics.addCollector('queue jobs', async () => {
      await Promise.all(
        this.queues.all().map(async (queue) => this.metrics.queueCounted(queue.name, (await queue.getJobCounts()) as unknown as Record<string, number>)),
      );
    });
  }
}
