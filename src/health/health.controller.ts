import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Public } from '../auth/auth.decorators';
import { RedisClient } from '../queue/queue.module';

@ApiTags('health')
@Public()
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly redis: RedisClient,
  ) {}

  /** The process is up. */
  @Get('health')
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  /** PostgreSQL and Redis both answer; 503 otherwise. */
  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([
      () => this.database.pingCheck('postgres', { timeout: 2000 }),
      async () => {
        const check = this.indicators.check('redis');
        try {
          await this.redis.ping();
          return check.up();
        } catch (error) {
          return check.down({ message: error instanceof Error ? error.message : 'unreachable' });
        }
      },
    ]);
  }
}
