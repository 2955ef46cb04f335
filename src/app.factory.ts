import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { createValidationPipe } from './common/validation';

/** Applies what every HTTP instance of the service needs, in the app and in tests alike. */
export function configureHttpApp(app: INestApplication): void {
  const express = app as NestExpressApplication;
  express.disable('x-powered-by');
  express.set('trust proxy', false);
  app.useLogger(app.get(Logger));
  app.useGlobalPipes(createValidationPipe());
  app.enableShutdownHooks();
  const openApi = new DocumentBuilder()
    .setTitle('Messaging sync service: admin API')
    .setDescription('Internal operator surface. Authorization: Bearer <ADMIN_TOKEN>.')
    .setVersion('1')
    .addBearerAuth()
    .build();
  SwaggerModule.setup('admin/docs', app, () => SwaggerModule.createDocument(app, openApi));
}

export async function createHttpApp(): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule, { bufferLogs: true });
  configureHttpApp(app);
  return app;
}
