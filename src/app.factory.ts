import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { registerBodyParsers } from './common/body-parsers';
import { createValidationPipe } from './common/validation';
import { AppConfig } from './config/app-config';
import { APP_CONFIG } from './config/config.module';
import { failure, INVALID_REQUEST } from './mcp/json-rpc';
import { MCP_PATH } from './mcp/mcp.controller';
import { EMAIL_INBOUND_MAX_BYTES, EMAIL_INBOUND_PATH } from './messaging/email/email-ingest.controller';

/** Nest's own body parser is off: registerBodyParsers decides limits and error answers. */
export const HTTP_APP_OPTIONS = { bufferLogs: true, bodyParser: false } as const;

/** Applies what every HTTP instance of the service needs, in the app and in tests alike. */
export function configureHttpApp(app: INestApplication): void {
  const express = app as NestExpressApplication;
  express.disable('x-powered-by');
  express.set('trust proxy', app.get<AppConfig>(APP_CONFIG).trustProxy);
  app.useLogger(app.get(Logger));
  const config = app.get<AppConfig>(APP_CONFIG);
  registerBodyParsers(app, {
    jsonLimit: 1024 * 1024,
    rawRoutes: [
      {
        path: `/${MCP_PATH}`,
        limit: config.mcp.maxBodyBytes,
        onError: (res, status, message) => res.status(status).json(failure(null, INVALID_REQUEST, message)),
      },
      {
        path: EMAIL_INBOUND_PATH,
        limit: EMAIL_INBOUND_MAX_BYTES,
        onError: (res, status, message) =>
          res.status(status).json({ statusCode: status, error: status === 413 ? 'Payload Too Large' : 'Bad Request', message }),
      },
    ],
  });
  app.useGlobalPipes(createValidationPipe());
  app.enableShutdownHooks();
  const openApi = new DocumentBuilder()
    .setTitle('Messaging sync service: admin API')
    .setDescription('Internal operator surface. Authorization: Bearer <ADMIN_TOKEN>.')
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'ADMIN_TOKEN' })
    .build();
  SwaggerModule.setup('admin/docs', app, () => SwaggerModule.createDocument(app, openApi));
}

export async function createHttpApp(): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule, HTTP_APP_OPTIONS);
  configureHttpApp(app);
  return app;
}
