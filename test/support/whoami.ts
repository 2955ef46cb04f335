import { Controller, Get } from '@nestjs/common';
import { CurrentCaller, KeyAction } from '../../src/auth/auth.decorators';
import { Caller } from '../../src/auth/caller';
import { createTestApp, TestApp, TestAppOptions } from './app';

/**
 * Test-only API-key route: no auth decorator, so the global guard treats it as an API-key route,
 * and it answers with the caller the guard resolved (user, org, role, lines) for that request.
 * Like the tool endpoint's protocol methods (ping, tools/list) it acts on nothing: any valid key
 * may call it whatever its permissions, and it is not counted ('per-call', where nothing is).
 */
@Controller('test')
export class WhoAmIController {
  @Get('whoami')
  @KeyAction('per-call')
  whoami(@CurrentCaller() caller: Caller): Caller {
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
