import { Request } from 'express';
import { ForbiddenError } from '../common/errors';
import { Principal } from './principal';

/** The page kinds of authentication (auth.decorators.ts): a signed-in person, or a same-origin form without a session. */
export type PageAuthKind = 'session' | 'same-origin';

/**
 * Authenticates page requests for the global AuthGuard; the web app provides it (auth/web-sessions).
 * Throws SignInRequiredError or CrossSiteRequestError, or sets `request.principal` (a Person) for 'session'.
 */
export abstract class PageAuthenticator {
  abstract authenticate(kind: PageAuthKind, request: Request & { principal?: Principal }): Promise<void>;
}

/** No valid session: a page GET is sent to /sign-in, anything else gets 403. */
export class SignInRequiredError extends ForbiddenError {
  constructor() {
    super('sign in first: this page needs a valid session');
  }
}

/** A state-changing request that did not come from the service's own pages (Origin / Sec-Fetch-Site), or without its CSRF token. */
export class CrossSiteRequestError extends ForbiddenError {}
