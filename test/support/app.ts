import { INestApplication } from '@nestjs/common';
import { Test, TestingModuleBuilder } from '@nestjs/testing';
import request from 'supertest';
import { configureHttpApp, HTTP_APP_OPTIONS } from '../../src/app.factory';
import { AppModule } from '../../src/app.module';
import { ADMIN_TOKEN } from './test-env';

export interface TestApp {
  app: INestApplication;
  /** A supertest agent on the app's real HTTP server. */
  http: () => ReturnType<typeof request>;
  /** Calls an admin route with the admin token. */
  admin: AdminClient;
  close: () => Promise<void>;
}

export type AdminClient = ReturnType<typeof adminClient>;

export interface TestAppOptions {
  /** Adjusts the testing module before it compiles, e.g. `(b) => b.overrideProvider(HOST_RESOLVER).useValue(fake)`. */
  overrides?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
}

/** Boots the whole service (real PostgreSQL and Redis) on an ephemeral port. */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const builder = Test.createTestingModule({ imports: [AppModule] });
  const moduleRef = await (options.overrides ? options.overrides(builder) : builder).compile();
  const app = moduleRef.createNestApplication(HTTP_APP_OPTIONS);
  configureHttpApp(app);
  await app.init();
  const server = app.getHttpServer();
  const http = () => request(server);
  return { app, http, admin: adminClient(http), close: () => app.close() };
}

function adminClient(http: () => ReturnType<typeof request>) {
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
