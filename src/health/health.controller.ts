import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { Public } from '../identity/auth.decorators';
import { RedisClient } from '../queue/queue.module';
import { DatabaseProbe } from './database-probe';

@ApiTags('health')
@Public()
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseProbe,
    private readonly indicators: HealthIndicatorService,
    private readonly redis: RedisClient,
  ) {}

  /** The process is up. */
  @Get('health')
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  /** PostgreSQL (on a connection of its own, not the app's pool) and Redis both answer; 503 otherwise. */
  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([() => this.probe('postgres', () => this.database.ping()), () => this.probe('redis', () => this.redis.ping())]);
  }

  private async probe(name: string, ping: () => Promise<void>) {
    const check = this.indicators.check(name);
    try {
      await ping();
      return check.up();
    } catch (error) {
      return check.down({ message: error instanceof Error ? error.message : 'unreachable' });
    }
  }
}
