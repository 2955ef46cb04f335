import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Request, Response } from 'express';
import { catchError, defer, from, mergeAll, mergeMap, Observable, throwError } from 'rxjs';
import { KEY_ACTION, routeAuthKind } from '../identity/auth.decorators';
import { AuthenticatedRequest } from '../identity/principal';
import { actorOf, AuditActor, AuditCallInit, runInAuditCall, targetsOf } from './audit-call';
import { AuditEventsRepository } from './audit-events.repository';
import { AuditSurface } from './audit-event.entity';
import { AuditTrail } from './audit-trail.service';
import { verdictOf } from './audit-verdict';

/** Methods that change nothing: never audited. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Audits every HTTP request that may change something (not GET/HEAD/OPTIONS) on the three HTTP
 * surfaces with a principal: the REST API-key routes (`rest`), a signed-in person's page forms
 * (`web`) and the admin API (`admin`). The MCP endpoint audits per tool call instead (its
 * route's action is `per-call`); public, ingest and provider-signed routes act for no principal
 * and are not audited. The action is `METHOD /route/:pattern`; the path's ids are the targets.
 * Runs after the guards: a request the AuthGuard or ActionGuard turned away changed nothing and
 * has no row (docs/decisions.md, "The audit trail").
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly trail: AuditTrail,
    private readonly rows: AuditEventsRepository,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
    if (READ_METHODS.has(request.method)) return next.handle();
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<string | undefined>(KEY_ACTION, targets) === 'per-call') return next.handle();
    const kind = routeAuthKind(this.reflector, targets);
    const principal = request.principal;
    const surface: AuditSurface | null =
      kind === 'admin' ? 'admin' : kind === 'api-key' && principal?.keyId ? 'rest' : kind === 'session' && principal ? 'web' : null;
    if (!surface) return next.handle();
    const response = context.switchToHttp().getResponse<Response>();
    return defer(async () => {
      const params = (request.params ?? {}) as Record<string, string>;
      const actor = surface === 'admin' ? await this.adminActor(params) : actorOf(principal!);
      const init: AuditCallInit = { ...actor, action: actionOf(request), surface, targets: targetsOf(params) };
      const call = this.trail.open(init);
      return runInAuditCall(call, () => next.handle()).pipe(
        mergeMap(async (value: unknown) => {
          const status = response.statusCode;
          const verdict =
            status >= 400
              ? { outcome: status >= 500 ? ('failed' as const) : ('refused' as const), errorCode: `HTTP_${status}` }
              : { outcome: 'ok' as const, targets: typeof value === 'object' ? targetsOf(value) : undefined };
          await this.trail.finish(call, verdict);
          return value;
        }),
        catchError((error: unknown) => from(this.trail.finish(call, verdictOf(error))).pipe(mergeMap(() => throwError(() => error)))),
      );
    }).pipe(mergeAll());
  }

  /** The admin token acts for no person; the org is the one its path names, directly or through a user, line, key or grant. */
  private async adminActor(params: Record<string, string>): Promise<AuditActor> {
    const id = (name: string): string | null => (typeof params[name] === 'string' && /^[0-9a-f-]{36}$/i.test(params[name]) ? params[name] : null);
    const orgId = await this.rows.orgOfAdminPath({
      orgId: id('orgId'),
      userId: id('userId'),
      lineId: id('lineId'),
      keyId: id('keyId'),
      grantId: id('grantId'),
    });
    return { orgId, actorKind: 'admin', credentialId: null, userId: null };
  }
}

/** `POST /api/agents/:agentId/turns`: the route's pattern, never the ids in the path. */
function actionOf(request: Request): string {
  const route = (request.route as { path?: unknown } | undefined)?.path;
  return `${request.method} ${typeof route === 'string' ? route : request.path}`;
}
