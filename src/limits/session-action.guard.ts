import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Request } from 'express';
import { AuthenticatedRequest } from '../identity/principal';
import { routeAuthKind } from '../auth/auth.decorators';
import { RateLimits } from './rate-limits.service';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
const REVOKES_ACCESS = 'limits:revokes-access';

/**
 * The route only takes access away (revokes an API key, a connected app): not counted against the
 * person's action budget, so someone who spent it (or a script with their cookie that spent it for
 * them) can still shut the door. Signing out is a same-origin form, not counted either.
 */
export const RevokesAccess = () => SetMetadata(REVOKES_ACCESS, true);

/**
 * The web app's counterpart of KeyActionGuard: every state-changing request of a signed-in person
 * (a reply, an approval, a label, a note, a new key or webhook: every POST of a @SessionAuth()
 * route, whichever page it comes from) counts against the person's budget of
 * WEB_ACTION_RATE_LIMIT actions a window, across every replica and every session of the person.
 * A session has no API key, so without this the reply and approve forms could send without the
 * budget the tool endpoint holds an agent to. One global guard, so a new page's form cannot
 * forget it. Runs after AuthGuard resolved the person (and refused a cross-site request) and
 * before the body is read, so a refused request costs no body. Page reads are not counted: each
 * reads at most its page, and an open page refetches itself on live events (docs/web.md). Nor are
 * the routes that only revoke access (@RevokesAccess()).
 */
@Injectable()
export class SessionActionGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly rateLimits: RateLimits,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (routeAuthKind(this.reflector, targets) !== 'session') return true;
    const request = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
    if (READS.has(request.method) || this.reflector.getAllAndOverride<boolean>(REVOKES_ACCESS, targets)) return true;
    if (!request.principal || request.principal.keyId !== null) throw new Error('SessionActionGuard ran before the session was resolved');
    await this.rateLimits.consume('webActions', request.principal.userId, 1, 'your account');
    return true;
  }
}
