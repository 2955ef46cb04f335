import { Global, Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsEndpoint } from './metrics-endpoint';
import { MetricsServer } from './metrics-server';
import { QueueMetrics } from './queue-metrics';
import { RedisMetrics } from './redis-metrics';
import { ServiceMetrics } from './service-metrics';

/** Prometheus metrics: every feature records through ServiceMetrics (docs/operations.md, "Metrics"). */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [ServiceMetrics, MetricsEndpoint, MetricsServer, QueueMetrics, RedisMetrics],
  exports: [ServiceMetrics, MetricsServer],
})
export class MetricsModule {}
