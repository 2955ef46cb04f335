import { Inject, Injectable } from '@nestjs/common';
import { Request } from 'express';
import { CrossSiteRequestError, PageAuthenticator, PageAuthKind, SignInRequiredError } from '../../identity/page-authenticator';
import { Principal } from '../../identity/principal';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { OriginPolicy } from '../../common/origin-policy';
import { WebSessionsService } from './web-sessions.service';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Authenticates page requests for the global AuthGuard (docs/web.md), before any body is read:
 *
 * - a state-changing request (anything but GET, HEAD, OPTIONS) must come from the service's own
 *   pages: its Origin header is PUBLIC_BASE_URL's origin (and, in development, a loopback one),
 *   or, without an Origin, its Sec-Fetch-Site is `same-origin`. A request with neither is refused
 *   too: every browser sends one of them on a POST, so only a forged request lacks both;
 * - a 'session' route needs the cookie of a live session; the person is put on the request.
 *
 * The `_csrf` field is checked after the body is read (auth/csrf-token.guard.ts).
 */
@Injectable()
export class WebAuthenticator extends PageAuthenticator {
  private readonly origins: OriginPolicy;

  constructor(
    private readonly sessions: WebSessionsService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    super();
    this.origins = new OriginPolicy({ publicBaseUrl: config.publicBaseUrl, allowedOrigins: [], allowLoopback: config.isDevelopment });
  }

  async authenticate(kind: PageAuthKind, request: Request & { principal?: Principal }): Promise<void> {
    if (!SAFE_METHODS.has(request.method) && !this.origins.sentFromOwnPages(request.headers)) {
      throw new CrossSiteRequestError('this form was not sent from this site’s own pages');
    }
    if (kind === 'same-origin') return;
    const token = this.sessions.cookie.read(request);
    const person = token === null ? null : await this.sessions.person(token);
    if (!person) throw new SignInRequiredError();
    request.principal = person;
  }
}
