import { Injectable, OnModuleInit } from '@nestjs/common';
import { RedisConnections } from '../../queue/redis-connections';
import { ServiceMetrics } from './service-metrics';

/** redis_errors_total and redis_reconnects_total: what every Redis connection of the process goes through (an outage, a failover). */
@Injectable()
export class RedisMetrics implements OnModuleInit {
  constructor(
    private readonly connections: RedisConnections,
    private readonly metrics: ServiceMetrics,
  ) {}

  onModuleInit(): void {
    this.connections.observe((role, happening) => this.metrics.redisHappened(role, happening));
  }
}
