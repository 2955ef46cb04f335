import { createHash, timingSafeEqual } from 'node:crypto';
import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Request } from 'express';
import { CrossSiteRequestError } from './page-authenticator';
import { AuthenticatedRequest } from './principal';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
export const CSRF_REFUSED = 'the form is missing its CSRF token or carries a wrong one: reload the page and try again';

/**
 * The second half of CSRF protection on session routes (the first, the Origin check, runs in the
 * AuthGuard before the body is read): a state-changing request must carry the session's token in
 * its `_csrf` form field. Runs after RequestInputGuard, so the body is read by then. Compared in
 * constant time (digests first, so lengths do not leak either).
 */
@Injectable()
export class CsrfTokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
    const principal = request.principal;
    if (SAFE_METHODS.has(request.method)) return true;
    if (!csrfTokenMatches((request.body as Record<string, unknown> | undefined)?._csrf, principal?.keyId === null ? principal.csrfToken : undefined)) {
      throw new CrossSiteRequestError(CSRF_REFUSED);
    }
    return true;
  }
}

/** Whether a form's `_csrf` is the session's token (constant time: digests first, so lengths do not leak either). */
export function csrfTokenMatches(given: unknown, expected: string | undefined): boolean {
  return expected !== undefined && typeof given === 'string' && timingSafeEqual(digest(given), digest(expected));
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
