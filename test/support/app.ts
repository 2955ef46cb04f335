import { INestApplication, Type } from '@nestjs/common';
import { Test, TestingModuleBuilder } from '@nestjs/testing';
import request from 'supertest';
import { configureHttpApp, HTTP_APP_OPTIONS } from '../../src/app.factory';
import { AppModule } from '../../src/app.module';
import { AppConfig, loadConfig } from '../../src/config/app-config';
import { APP_CONFIG } from '../../src/config/config.module';
import { ADMIN_TOKEN } from './test-env';

export interface TestApp {
  app: INestApplication;
  /** A supertest agent on the app's real HTTP server. */
  http: () => ReturnType<typeof request>;
  /** Calls an admin route with the admin token. */
  admin: AdminClient;
  /** The configuration the app runs with (the base environment with `env` on top). */
  config: AppConfig;
  close: () => Promise<void>;
}

export type AdminClient = ReturnType<typeof adminClient>;

/** Variables to set for one app, on top of the base environment (test/support/env.ts); `undefined` unsets one. */
export type TestEnv = Record<string, string | undefined>;

export interface TestAppOptions {
  /** The app's environment: these variables over process.env, which is left untouched. */
  env?: TestEnv;
  /** Test-only controllers mounted beside the service's own (e.g. test/support/whoami.ts). */
  controllers?: Array<Type<unknown>>;
  /** Adjusts the testing module before it compiles, e.g. `(b) => b.overrideProvider(HOST_RESOLVER).useValue(fake)`. */
  overrides?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
}

/**
 * The configuration an app gets from `env` over the base environment, validated as at a real
 * boot (a bad value throws the ConfigError the service would stop with). process.env is only read.
 */
export function testConfig(env: TestEnv = {}): AppConfig {
  return loadConfig({ ...process.env, ...env });
}

/**
 * Boots the whole service (real PostgreSQL and Redis) on an ephemeral port. The app reads its
 * configuration only through APP_CONFIG (database, Redis and Bull, the logger included), so
 * providing `testConfig(env)` there configures it without touching process.env: apps with
 * different settings can be built one after another, or side by side, in one file.
 */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const config = testConfig(options.env);
  const builder = Test.createTestingModule({ imports: [AppModule], controllers: options.controllers ?? [] })
    .overrideProvider(APP_CONFIG)
    .useValue(config);
  const moduleRef = await (options.overrides ? options.overrides(builder) : builder).compile();
  const app = moduleRef.createNestApplication(HTTP_APP_OPTIONS);
  configureHttpApp(app);
  await app.init();
  const server = app.getHttpServer();
  const http = () => request(server);
  return { app, http, admin: adminClient(http), config, close: () => app.close() };
}

export function adminClient(http: () => ReturnType<typeof request>) {
  const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  const withBody = (test: request.Test, body?: object) => (body === undefined ? test : test.send(body));
  return {
    get: (path: string) => http().get(path).set(auth),
    post: (path: string, body?: object) => withBody(http().post(path).set(auth), body),
    put: (path: string, body?: object) => withBody(http().put(path).set(auth), body),
    patch: (path: string, body?: object) => withBody(http().patch(path).set(auth), body),
    delete: (path: string, body?: object) => withBody(http().delete(path).set(auth), body),
  };
}
