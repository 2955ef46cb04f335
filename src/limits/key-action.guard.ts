import { CanActivate, ExecutionContext, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { Request, Response } from 'express';
import { AuthenticatedRequest } from '../identity/principal';
import { KEY_ACTION, KeyActionKind, routeAuthKind } from '../auth/auth.decorators';
import { bearerToken } from '../auth/auth.guard';
import { ForbiddenError } from '../common/errors';
import { whenResponseCloses } from '../common/response-close';
import { ApiKeyLimits } from './api-key-limits.service';

/**
 * The one check every surface that acts for an API key passes (issue 30): the permission the route
 * declares with @KeyAction, the key's rate limit (MCP_RATE_LIMIT calls a window, one budget for
 * every surface) and its running-calls slots (MCP_KEY_CONCURRENCY, shared with the tool endpoint).
 * Runs after AuthGuard resolved the key and before the body is read, so a refused request costs
 * no body. The tool endpoint (`per-call`) applies the same limits per message itself: its
 * admission middleware holds the slot before the key is looked up, and McpService counts a
 * batch's messages and checks each tool's permission.
 */
@Injectable()
export class KeyActionGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly limits: ApiKeyLimits,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (routeAuthKind(this.reflector, targets) !== 'api-key') return true;
    const action = this.reflector.getAllAndOverride<KeyActionKind | undefined>(KEY_ACTION, targets);
    // KeyActionAudit refuses to start with such a route: this only keeps a gap closed if it ever ran.
    if (action === undefined) throw new Error(`${routeName(context.getClass(), context.getHandler())} is an API-key route without @KeyAction`);
    if (action === 'per-call') return true;
    const http = context.switchToHttp();
    const request = http.getRequest<Request & AuthenticatedRequest>();
    const caller = request.principal;
    const token = bearerToken(request);
    if (!caller || caller.keyId === null || token === null) throw new Error('KeyActionGuard ran before the API key was resolved');
    // A key that may not do this is refused before it takes a slot or a call of its budget.
    if (!caller.permissions.includes(action)) {
      throw new ForbiddenError(
        `this route needs the ${action} permission, which this API key does not have (it has ${caller.permissions.join(', ')})`,
        'permissions',
      );
    }
    const ticket = this.limits.enter(token);
    // After the key's lookup: its client may have gone already (then the slot is given back at once).
    whenResponseCloses(http.getResponse<Response>(), () => ticket.release());
    try {
      await this.limits.spend(caller.keyId, 1);
    } catch (error) {
      ticket.release();
      throw error;
    }
    return true;
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
  action: KeyActionKind | undefined;
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
        action: reflector.getAllAndOverride<KeyActionKind | undefined>(KEY_ACTION, [handler, metatype]),
      });
    }
  }
  return routes;
}

function routeName(controller: { name: string }, handler: { name: string }): string {
  return `${controller.name}.${handler.name}`;
}
