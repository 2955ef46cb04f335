import { Request } from 'express';
import { LineRef } from '../accounts/accounts.service';
import { OrgTier } from '../accounts/account.types';
import { ForbiddenError } from '../common/errors';
import { UserRole } from './roles';

/**
 * Who is signed in to the web app, resolved afresh from the session cookie on every page request
 * (docs/web.md): the user, their org and live role, and the lines they may use now (live
 * memberships on lines not deleted). Page controllers take it with `@CurrentPerson()`.
 */
export interface Person {
  sessionId: string;
  userId: string;
  email: string;
  displayName: string;
  orgId: string;
  orgTier: OrgTier;
  role: UserRole;
  lines: LineRef[];
  /** The session's CSRF token: every form a page renders carries it in `_csrf` (web/pages/csrf-field.tsx). */
  csrfToken: string;
}

/**
 * What acting for a person needs (the API-key rules for Settings → API keys take it). Statements
 * that act for a person read the person's role and org afresh from `users` (a session's role may
 * be older than a demotion); `role` here is for the page to decide what to show.
 */
export type PersonRef = Pick<Person, 'userId' | 'orgId' | 'role'>;

/** The page kinds of authentication (auth.decorators.ts): a signed-in person, or a same-origin form without a session. */
export type PageAuthKind = 'session' | 'same-origin';

/**
 * Authenticates page requests for the global AuthGuard; the web app provides it (auth/web-sessions).
 * Throws SignInRequiredError or CrossSiteRequestError, or sets `request.person` for 'session'.
 */
export abstract class PageAuthenticator {
  abstract authenticate(kind: PageAuthKind, request: Request & { person?: Person }): Promise<void>;
}

/** No valid session: a page GET is sent to /sign-in, anything else gets 403. */
export class SignInRequiredError extends ForbiddenError {
  constructor() {
    super('sign in first: this page needs a valid session');
  }
}

/** A state-changing request that did not come from the service's own pages (Origin / Sec-Fetch-Site), or without its CSRF token. */
export class CrossSiteRequestError extends ForbiddenError {}
