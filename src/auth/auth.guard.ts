import { createHash, timingSafeEqual } from 'node:crypto';
import { CanActivate, ExecutionContext, Inject, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Request } from 'express';
import { ForbiddenError, UnauthorizedError } from '../common/errors';
import { allowBodyRead } from '../common/request-body';
import { AppConfig } from '../config/app-config';
import { bearerToken } from '../identity/bearer-token';
import { APP_CONFIG } from '../config/config.module';
import { API_KEY_PATTERN } from './key-management/api-key-secret';
import { ApiKeysService } from './api-keys.service';
import { AuthenticatedRequest, KeyPrincipal } from '../identity/principal';
import { AuthKind, routeAuthKind, SIGNATURE_HEADER } from '../identity/auth.decorators';
import { GrantCallers } from '../identity/grant-callers';
import { PageAuthenticator } from '../identity/page-authenticator';

/**
 * Registered globally: every route needs an API key unless marked @Public(), @AdminOnly(),
 * @IngestOnly(), @SignedBody() (checked by the route's own guard), or is a web page (@SessionAuth(), @SameOriginForm(): auth/web-sessions). The caller is resolved on every request, so a revoked key or a narrowed allowlist
 * applies at once. Guards run before any request body is read: only a request this guard
 * authenticated has its body read (RequestInputGuard), so a missing or wrong token gets 401
 * without the body being buffered.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly tokenDigests: Record<'admin' | 'ingest', Buffer>;

  constructor(
    private readonly reflector: Reflector,
    private readonly apiKeys: ApiKeysService,
    @Inject(APP_CONFIG) config: AppConfig,
    /** Page routes (@SessionAuth, @SameOriginForm): provided by the web app (auth/web-sessions). */
    @Optional() private readonly pages?: PageAuthenticator,
    /** OAuth access tokens on the MCP endpoint: provided by the OAuth module (oauth/). */
    @Optional() private readonly grants?: GrantCallers,
  ) {
    this.tokenDigests = { admin: tokenDigest(config.adminToken), ingest: tokenDigest(config.ingestToken) };
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const kind = routeAuthKind(this.reflector, [context.getHandler(), context.getClass()]);
    if (kind === 'public') return true;
    const request = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
    if (kind === 'signed-body') {
      const header = this.reflector.getAllAndOverride<string>(SIGNATURE_HEADER, [context.getHandler(), context.getClass()]);
      const value = request.headers[header.toLowerCase()];
      if (typeof value !== 'string' || value === '') {
        throw new ForbiddenError(`${header} is required: this route takes only requests signed by the provider`, header);
      }
    }
    await this.authenticate(kind, request);
    allowBodyRead(request);
    return true;
  }

  /**
   * The authentication rule, for routes and for the few HTTP surfaces outside Nest's router (the
   * admin OpenAPI docs): throws UnauthorizedError, or sets `request.principal` for an API key or grant.
   */
  async authenticate(kind: Exclude<AuthKind, 'public'>, request: Request & AuthenticatedRequest): Promise<void> {
    // The route's own guard checks the signature, over the body read after this guard.
    if (kind === 'signed-body') return;
    if (kind === 'session' || kind === 'same-origin') {
      if (!this.pages) throw new Error(`a ${kind} route needs the web app's PageAuthenticator`);
      return this.pages.authenticate(kind, request);
    }
    const token = bearerToken(request);
    if (kind === 'admin' || kind === 'ingest') {
      if (token === null || !this.tokenMatches(kind, token)) {
        throw new UnauthorizedError(`a valid ${kind} token is required`, token !== null);
      }
      return;
    }
    // The challenge (where OAuth clients start) is worked out only for a refusal.
    if (token === null) throw new UnauthorizedError('an API key is required: Authorization: Bearer csk_...', false, this.grants?.challengeFor(request));
    const caller = await this.callerOf(token, request);
    if (!caller) {
      throw new UnauthorizedError('the API key or access token is malformed, unknown, expired or revoked', true, this.grants?.challengeFor(request));
    }
    request.principal = caller;
  }

  /**
   * The caller of an API key or OAuth access token presented on `request` (its URL decides a
   * token's resource), as it is now; null when it no longer works (unknown, revoked, expired, its
   * user gone). For the API-key routes, and for long requests that check their credential again.
   */
  async callerOf(token: string, request: Request): Promise<KeyPrincipal | null> {
    return API_KEY_PATTERN.test(token) ? this.apiKeys.resolve(token) : ((await this.grants?.resolve(token, request)) ?? null);
  }

  /** Whether `token` is the admin or ingest token (constant time). Also for the queue dashboard's Basic credentials. */
  tokenMatches(kind: 'admin' | 'ingest', token: string): boolean {
    return tokenIs(token, this.tokenDigests[kind]);
  }
}

/** A configured token's digest, for tokenIs: hashing first gives equal lengths, so the comparison takes constant time. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Whether `token` is the one whose digest is `digest` (constant time). */
export function tokenIs(token: string, digest: Buffer): boolean {
  return timingSafeEqual(tokenDigest(token), digest);
}
