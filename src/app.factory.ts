import { INestApplication } from '@nestjs/common';
import { NestFactory, Reflector } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { NextFunction, Request, Response } from 'express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { AuthGuard } from './auth/auth.guard';
import { HttpErrorFilter } from './common/http-error.filter';
import { applyHttpServerLimits } from './common/http-server-limits';
import { BodyReader, RequestInputGuard } from './common/request-body';
import { createValidationPipe } from './common/validation';
import { ActionGuard } from './identity/action.guard';
import { AppConfig } from './config/app-config';
import { APP_CONFIG } from './config/config.module';
import { httpMetrics } from './ops/metrics/http-metrics';
import { httpSpans } from './ops/tracing/http-spans';
import { mountQueueBoard } from './ops/queue-board/queue-board';
import { mountOAuth } from './oauth/oauth-routes';
import { ServiceMetrics } from './ops/metrics/service-metrics';

/** Nest's own body parser is off: bodies are read after authentication, by RequestInputGuard. */
export const HTTP_APP_OPTIONS = { bufferLogs: true, bodyParser: false } as const;

const ADMIN_DOCS_PATH = '/admin/docs';

/** Applies what every HTTP instance of the service needs, in the app and in tests alike. */
export function configureHttpApp(app: INestApplication): void {
  const express = app as NestExpressApplication;
  express.disable('x-powered-by');
  const config = app.get<AppConfig>(APP_CONFIG);
  express.use(httpMetrics(app.get(ServiceMetrics)));
  // Off, no span middleware at all: nothing on the request path.
  if (config.tracing.enabled) express.use(httpSpans());
  express.set('trust proxy', config.trustProxy);
  app.useLogger(app.get(Logger));
  applyHttpServerLimits(app.getHttpServer(), config.http);
  // These run after AuthGuard (APP_GUARD providers come before guards added here), in this order:
  // what the route does for its principal (a key's permission, rate and running calls, a person's
  // web action budget: identity/action.guard.ts), before any body is read; then the body is read and its text checked; then pipes validate it.
  // One BodyReader, so its budgets hold every body of the process: the routes' and the OAuth protocol routes'.
  const bodies = new BodyReader(config);
  app.useGlobalGuards(app.get(ActionGuard), new RequestInputGuard(app.get(Reflector), bodies));
  app.useGlobalPipes(createValidationPipe());
  app.enableShutdownHooks();
  // Swagger's routes live outside Nest's router (no guard): in production the admin token guards them.
  if (!config.isDevelopment) express.use(requireAdminToken(ADMIN_DOCS_PATH, app.get(AuthGuard)));
  const openApi = new DocumentBuilder()
    .setTitle('Messaging sync service: admin API')
    .setDescription('Internal operator surface. Authorization: Bearer <ADMIN_TOKEN>.')
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'ADMIN_TOKEN' })
    .build();
  SwaggerModule.setup(ADMIN_DOCS_PATH, app, () => SwaggerModule.createDocument(app, openApi));
  mountQueueBoard(app);
  mountOAuth(app, bodies);
}

/** Every path that starts with `prefix` (`/admin/docs`, `/admin/docs-json`, the UI's assets) needs the admin token. */
function requireAdminToken(prefix: string, guard: AuthGuard) {
  const errors = new HttpErrorFilter();
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!req.path.toLowerCase().startsWith(prefix)) return next();
    guard.authenticate('admin', req).then(
      () => next(),
      (error: unknown) => errors.answer(req, res, error),
    );
  };
}

export async function createHttpApp(): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule, HTTP_APP_OPTIONS);
  configureHttpApp(app);
  return app;
}
