import { Controller, Get, Header, OnModuleInit, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { Response } from 'express';
import { Public } from '../identity/auth.decorators';
import { MetricsServer } from '../ops/metrics/metrics-server';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { Readiness, ReadinessReport } from './readiness';

@ApiTags('health')
@Public()
@Controller()
export class HealthController implements OnModuleInit {
  constructor(
    private readonly health: HealthCheckService,
    private readonly readiness: Readiness,
    private readonly metrics: ServiceMetrics,
    private readonly metricsServer: MetricsServer,
  ) {}

  /** Liveness: the process is up (it answers 200 while it runs, whatever its dependencies do). */
  @Get('health')
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  /**
   * Readiness: 200 when the queue can take and hand out work, PostgreSQL can be written, and (on
   * roles that relay events) the outbox relay keeps up; 503 otherwise, the body saying which
   * check failed and why (docs/operations.md, "Readiness").
   */
  @Get('ready')
  @Header('Cache-Control', 'no-store')
  async ready(@Res({ passthrough: true }) response: Response): Promise<ReadinessReport> {
    const report = await this.readiness.evaluate();
    if (report.status !== 'ok') {
      this.metrics.notReadyAnswered(Object.keys(report.error));
      response.status(503);
    }
    return report;
  }

  /** /health and /ready on METRICS_PORT as well: a worker serves nothing else to probe. */
  onModuleInit(): void {
    this.metricsServer.addRoute('/health', (_request, response) => {
      response.setHeader('Cache-Control', 'no-store');
      response.status(200).json({ status: 'ok', info: {}, error: {}, details: {} });
    });
    this.metricsServer.addRoute('/ready', (_request, response) => {
      response.setHeader('Cache-Control', 'no-store');
      void this.ready(response).then(
        (report) => response.json(report),
        () => response.status(500).json({ status: 'error', message: 'the readiness checks failed to run' }),
      );
    });
  }
}
