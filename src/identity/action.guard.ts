import { CanActivate, ExecutionContext, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { Request, Response } from 'express';
import { ForbiddenError } from '../common/errors';
import { whenResponseCloses } from '../common/response-close';
import { ApiKeyLimits } from '../limits/api-key-limits.service';
import { RateLimits } from '../limits/rate-limits.service';
import { ActionKind, KEY_ACTION, routeAuthKind } from './auth.decorators';
import { bearerToken } from './bearer-token';
import { actingThrough, AuthenticatedRequest, KeyPrincipal, Person } from './principal';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The one check every route that acts for a principal passes, before its handler runs and before
 * its body is read (so a refused request costs no body), whatever the way in:
 *
 * - the permission the route declares with @KeyAction (issue 30): a key or grant must hold it; a
 *   person holds every permission (bound by their role only);
 * - the principal's budget and running calls. A key or grant: its rate limit (MCP_RATE_LIMIT calls
 *   a window, one budget for every surface) and its running-calls slots (MCP_KEY_CONCURRENCY,
 *   shared with the tool endpoint). A person: every state-changing request of a @SessionAuth()
 *   page (a reply, an approval, a label, a new key or webhook) counts against their budget of
 *   WEB_ACTION_RATE_LIMIT actions a window, across every replica and every session, so the reply
 *   and approve forms cannot send without the budget the tool endpoint holds an agent to. Page
 *   reads are not counted (each reads at most its page), nor are the routes that only take access
 *   away (@KeyAction('revokes-access')), so someone who spent the budget can still shut the door.
 *
 * One global guard, so a new route or page cannot forget it. The tool endpoint (`per-call`)
 * applies the same limits per message itself: its admission middleware holds the slot before the
 * key is looked up, and McpService counts a batch's messages and checks each tool's permission.
 */
@Injectable()
export class ActionGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keyLimits: ApiKeyLimits,
    private readonly rateLimits: RateLimits,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    const kind = routeAuthKind(this.reflector, targets);
    if (kind !== 'api-key' && kind !== 'session') return true;
    const action = this.reflector.getAllAndOverride<ActionKind | undefined>(KEY_ACTION, targets);
    const http = context.switchToHttp();
    const request = http.getRequest<Request & AuthenticatedRequest>();
    if (kind === 'session') {
      if (READS.has(request.method) || action === 'revokes-access') return true;
      const person = request.principal;
      if (!person || person.keyId !== null) throw new Error('ActionGuard ran before the session was resolved');
      await this.spendPersons(person);
      return true;
    }
    // KeyActionAudit refuses to start with such a route: this only keeps a gap closed if it ever ran.
    if (action === undefined) throw new Error(`${routeName(context.getClass(), context.getHandler())} is an API-key route without @KeyAction`);
    if (action === 'per-call') return true;
    const principal = request.principal;
    const token = bearerToken(request);
    if (!principal || principal.keyId === null || token === null) throw new Error('ActionGuard ran before the API key was resolved');
    // KeyActionAudit refuses this too: only a page's route may say it takes access away.
    if (action === 'revokes-access') throw new Error(`${routeName(context.getClass(), context.getHandler())} is an API-key route declaring 'revokes-access'`);
    // A key that may not do this is refused before it takes a slot or a call of its budget.
    if (!principal.permissions.includes(action)) {
      throw new ForbiddenError(
        `this route needs the ${action} permission, which this API key does not have (it has ${principal.permissions.join(', ')})`,
        'permissions',
      );
    }
    await this.spendKeys(principal, token, http.getResponse<Response>());
    return true;
  }

  /** A key's or grant's call: one running-call slot for the request, and one call of its budget. */
  private async spendKeys(principal: KeyPrincipal, token: string, response: Response): Promise<void> {
    const ticket = this.keyLimits.enter(token);
    // After the key's lookup: its client may have gone already (then the slot is given back at once).
    whenResponseCloses(response, () => ticket.release());
    try {
      await this.keyLimits.spend(principal.keyId, 1, actingThrough(principal));
    } catch (error) {
      ticket.release();
      throw error;
    }
  }

  /** A person's web action: one of their budget. */
  private async spendPersons(person: Person): Promise<void> {
    await this.rateLimits.consume('webActions', person.userId, 1, 'your account');
  }
}

/**
 * Walks every route at start-up: an API-key route that does not declare what it does for the key
 * (@KeyAction) stops the service, so a new route cannot skip the permission, rate and concurrency
 * check.
 */
@Injectable()
export class KeyActionAudit implements OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  onApplicationBootstrap(): void {
    const routes = apiKeyRoutes(this.discovery, this.scanner, this.reflector);
    const missing = routes.filter((route) => route.action === undefined).map((route) => route.name);
    if (missing.length) {
      throw new Error(`API-key routes must declare @KeyAction (the permission they need, or 'per-call'): ${missing.join(', ')}`);
    }
    const perCall = routes.filter((route) => route.action === 'per-call' && !PER_CALL_ROUTES.includes(route.name)).map((route) => route.name);
    if (perCall.length) {
      throw new Error(`only ${PER_CALL_ROUTES.join(', ')} may declare @KeyAction('per-call'); declare the permission instead: ${perCall.join(', ')}`);
    }
    const revokes = routes.filter((route) => route.action === 'revokes-access').map((route) => route.name);
    if (revokes.length) {
      throw new Error(`only a page's route may declare @KeyAction('revokes-access'); an API-key route declares the permission it needs: ${revokes.join(', ')}`);
    }
  }
}

/**
 * The routes that check each call themselves ('per-call'): the tool endpoint alone, whose
 * admission middleware takes the key's slot and whose McpService counts every message of a batch
 * and checks each tool's permission. Any other route declaring it would skip the check.
 */
export const PER_CALL_ROUTES = ['McpController.post'];

export interface ApiKeyRoute {
  /** Controller.method */
  name: string;
  /** The route's path as declared (controller path / method path). */
  path: string;
  action: ActionKind | undefined;
}

/** Every route that authenticates with an API key (routes do unless they say otherwise), with the action it declares. */
export function apiKeyRoutes(discovery: DiscoveryService, scanner: MetadataScanner, reflector: Reflector): ApiKeyRoute[] {
  const routes: ApiKeyRoute[] = [];
  for (const wrapper of discovery.getControllers()) {
    const { instance, metatype } = wrapper;
    if (!instance || !metatype) continue;
    const prototype = Object.getPrototypeOf(instance) as object;
    for (const method of scanner.getAllMethodNames(prototype)) {
      const handler = (prototype as Record<string, unknown>)[method] as (...args: unknown[]) => unknown;
      if (Reflect.getMetadata(METHOD_METADATA, handler) === undefined) continue;
      if (routeAuthKind(reflector, [handler, metatype]) !== 'api-key') continue;
      const base = String(Reflect.getMetadata(PATH_METADATA, metatype) ?? '');
      const own = String(Reflect.getMetadata(PATH_METADATA, handler) ?? '');
      routes.push({
        name: routeName(metatype, handler),
        path: `/${[base, own].filter((part) => part && part !== '/').join('/')}`.replace(/\/+/g, '/'),
        action: reflector.getAllAndOverride<ActionKind | undefined>(KEY_ACTION, [handler, metatype]),
      });
    }
  }
  return routes;
}

function routeName(controller: { name: string }, handler: { name: string }): string {
  return `${controller.name}.${handler.name}`;
}
