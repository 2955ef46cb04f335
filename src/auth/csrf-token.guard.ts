import { createHash, timingSafeEqual } from 'node:crypto';
import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Request } from 'express';
import { CrossSiteRequestError, Person } from './person';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The second half of CSRF protection on session routes (the first, the Origin check, runs in the
 * AuthGuard before the body is read): a state-changing request must carry the session's token in
 * its `_csrf` form field. Runs after RequestInputGuard, so the body is read by then. Compared in
 * constant time (digests first, so lengths do not leak either).
 */
@Injectable()
export class CsrfTokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request & { person?: Person }>();
    if (SAFE_METHODS.has(request.method)) return true;
    const expected = request.person?.csrfToken;
    const given = (request.body as Record<string, unknown> | undefined)?._csrf;
    if (expected === undefined || typeof given !== 'string' || !timingSafeEqual(digest(given), digest(expected))) {
      throw new CrossSiteRequestError('the form is missing its CSRF token or carries a wrong one: reload the page and try again');
    }
    return true;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
