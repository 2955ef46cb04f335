import { Controller, Get } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { configureHttpApp, HTTP_APP_OPTIONS } from '../../src/app.factory';
import { AppModule } from '../../src/app.module';
import { CurrentCaller } from '../../src/auth/auth.decorators';
import { Caller } from '../../src/auth/caller';
import { TestApp } from './app';
import { ADMIN_TOKEN } from './test-env';

/**
 * Test-only API-key route: no decorator, so the global guard treats it as an API-key route, and
 * it answers with the caller the guard resolved (user, org, role, lines) for that request.
 */
@Controller('test')
export class WhoAmIController {
  @Get('whoami')
  whoami(@CurrentCaller() caller: Caller): Caller {
    return caller;
  }
}

/** The whole service plus GET /test/whoami, booted like createTestApp(). */
export async function createWhoAmIApp(): Promise<TestApp> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule], controllers: [WhoAmIController] }).compile();
  const app = moduleRef.createNestApplication(HTTP_APP_OPTIONS);
  configureHttpApp(app);
  await app.init();
  const server = app.getHttpServer();
  const http = () => request(server);
  // The same admin client as createTestApp() (not exported there): a body is sent only when given.
  const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  const withBody = (test: request.Test, body?: object) => (body === undefined ? test : test.send(body));
  const admin = {
    get: (path: string) => http().get(path).set(auth),
    post: (path: string, body?: object) => withBody(http().post(path).set(auth), body),
    put: (path: string, body?: object) => withBody(http().put(path).set(auth), body),
    patch: (path: string, body?: object) => withBody(http().patch(path).set(auth), body),
    delete: (path: string, body?: object) => withBody(http().delete(path).set(auth), body),
  };
  return { app, http, admin, close: () => app.close() };
}

/** GET /test/whoami with the given API key. */
export function whoami(t: TestApp, key: string) {
  return t.http().get('/test/whoami').set('Authorization', `Bearer ${key}`);
}
