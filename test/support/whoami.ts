import { Controller, Get } from '@nestjs/common';
import { CurrentPrincipal, KeyAction } from '../../src/identity/auth.decorators';
import { Principal } from '../../src/identity/principal';
import { createTestApp, TestApp, TestAppOptions } from './app';

/**
 * Test-only API-key route: no auth decorator, so the global guard treats it as an API-key route,
 * and it answers with the caller the guard resolved (user, org, role, lines) for that request.
 * It reads: it needs the key's `read` permission, as every API-key route declares what it needs.
 */
@Controller('test')
export class WhoAmIController {
  @Get('whoami')
  @KeyAction('read')
  whoami(@CurrentPrincipal() caller: Principal): Principal {
    return caller;
  }
}

/** The whole service plus GET /test/whoami. */
export function createWhoAmIApp(options: Omit<TestAppOptions, 'controllers'> = {}): Promise<TestApp> {
  return createTestApp({ ...options, controllers: [WhoAmIController] });
}

/** GET /test/whoami with the given API key. */
export function whoami(t: TestApp, key: string) {
  return t.http().get('/test/whoami').set('Authorization', `Bearer ${key}`);
}
