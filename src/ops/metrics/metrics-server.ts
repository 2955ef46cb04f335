import { Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import express from 'express';
import { NotFoundError } from '../../common/errors';
import { HttpErrorFilter } from '../../common/http-error.filter';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { MetricsEndpoint } from './metrics-endpoint';

/**
 * GET /metrics on METRICS_PORT, for processes without an HTTP server of their own (a worker) or
 * to keep metrics off the public port. Nothing else is served there.
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(MetricsServer.name);
  private server?: Server;

  constructor(
    private readonly endpoint: MetricsEndpoint,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const port = this.config.metrics.port;
    if (port === null) return;
    const app = express();
    app.disable('x-powered-by');
    app.get('/metrics', (request, response) => void this.endpoint.handle(request, response));
    const errors = new HttpErrorFilter();
    app.use((request: express.Request, response: express.Response) =>
      errors.answer(request, response, new NotFoundError('only GET /metrics is served on METRICS_PORT')),
    );
    const server = app.listen(port);
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
    this.server = server;
    this.logger.log(`metrics on port ${(server.address() as AddressInfo).port}`);
  }

  /** The port it listens on (tests start it on port 0), or null. */
  get port(): number | null {
    return this.server ? (this.server.address() as AddressInfo).port : null;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
