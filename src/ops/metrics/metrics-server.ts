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
 * to keep metrics off the public port. Beside it only the GET routes other layers add before the
 * server starts (health/: /health and /ready, so a worker can be probed too).
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(MetricsServer.name);
  private server?: Server;
  private readonly routes = new Map<string, express.RequestHandler>();

  constructor(
    private readonly endpoint: MetricsEndpoint,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Serves GET `path` on METRICS_PORT too (unauthenticated, as on the api's port); call it before the application bootstraps. */
  addRoute(path: string, handler: express.RequestHandler): void {
    this.routes.set(path, handler);
  }

  async onApplicationBootstrap(): Promise<void> {
    const port = this.config.metrics.port;
    if (port === null) return;
    const app = express();
    app.disable('x-powered-by');
    app.get('/metrics', (request, response) => void this.endpoint.handle(request, response));
    for (const [path, handler] of this.routes) app.get(path, handler);
    const served = ['/metrics', ...this.routes.keys()].map((path) => `GET ${path}`).join(', ');
    const errors = new HttpErrorFilter();
    app.use((request: express.Request, response: express.Response) =>
      errors.answer(request, response, new NotFoundError(`only ${served} ${this.routes.size ? 'are' : 'is'} served on METRICS_PORT`)),
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
