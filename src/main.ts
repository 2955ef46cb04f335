import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { createHttpApp } from './app.factory';
import { AppModule } from './app.module';
import { ConfigError, loadConfig } from './config/app-config';
import { SecretBox } from './common/secret-box';
import { limitHeapGrowth } from './common/heap-growth';
import { runMigrations, withDataSource } from './database/migrate';
import { checkSealedSecrets, SealedSecretsError } from './database/sealed-secrets';
import { startTracing } from './ops/tracing/start-tracing';

/**
 * One codebase, three roles: `api` serves HTTP, `worker` runs queue processors with no HTTP server,
 * `all` (the default) does both. Migrations run first, under an advisory lock; then the process
 * refuses to start if SECRETS_KEY cannot open the secrets already stored.
 */
async function bootstrap(): Promise<void> {
  const config = loadConfig();
  await startTracing(config);
  // Delivery attempts churn through memory; a worker's heap is kept close to what it holds.
  if (config.processRole !== 'api') limitHeapGrowth();
  await runMigrations(config.databaseUrl);
  await withDataSource(config.databaseUrl, (dataSource) => checkSealedSecrets(dataSource, new SecretBox(config)));
  if (config.processRole === 'worker') {
    const context = await NestFactory.createApplicationContext(AppModule, { bufferLogs: true });
    context.useLogger(context.get(Logger));
    context.enableShutdownHooks();
    context.get(Logger).log('worker started');
    return;
  }
  const app = await createHttpApp();
  await app.listen(config.port);
  app.get(Logger).log(`listening on port ${config.port} (role ${config.processRole}, ${config.appEnv})`);
}

/**
 * A crash (an uncaught exception, an unhandled rejection) still ends the process, as Node's own
 * handling would, but writes only the error's stack: Node's report prints every property of the
 * error too, and a Redis client's error carries the command that failed with its arguments (an
 * AUTH's password).
 */
for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
  process.on(event, (error: unknown) => {
    process.stderr.write(`${event}: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}

bootstrap().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof SealedSecretsError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`startup failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  }
  process.exit(1);
});
