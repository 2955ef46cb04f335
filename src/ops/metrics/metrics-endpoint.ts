import { Inject, Injectable } from '@nestjs/common';
import { Request, Response } from 'express';
import { bearerToken } from '../../identity/bearer-token';
import { tokenDigest, tokenIs } from '../../auth/auth.guard';
import { UnauthorizedError } from '../../common/errors';
import { HttpErrorFilter } from '../../common/http-error.filter';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { ServiceMetrics } from './service-metrics';

/**
 * GET /metrics, wherever it is served (the api's port, METRICS_PORT): the Prometheus text
 * exposition, behind `Authorization: Bearer <METRICS_TOKEN>` when that is set.
 */
@Injectable()
export class MetricsEndpoint {
  private readonly tokenDigest: Buffer | null;
  private readonly errors = new HttpErrorFilter();

  constructor(
    private readonly metrics: ServiceMetrics,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.tokenDigest = config.metrics.token === null ? null : tokenDigest(config.metrics.token);
  }

  async handle(request: Request, response: Response): Promise<void> {
    try {
      this.authorize(request);
      const body = await this.metrics.exposition();
      response.setHeader('Content-Type', this.metrics.contentType);
      response.setHeader('Cache-Control', 'no-store');
      response.status(200).end(body);
    } catch (error) {
      this.errors.answer(request, response, error);
    }
  }

  private authorize(request: Request): void {
    if (this.tokenDigest === null) return;
    const token = bearerToken(request);
    if (token === null || !tokenIs(token, this.tokenDigest)) {
      throw new UnauthorizedError('a valid metrics token is required: Authorization: Bearer <METRICS_TOKEN>', token !== null);
    }
  }
}
