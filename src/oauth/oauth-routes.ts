import { INestApplication, Logger } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import {
  InvalidRequestError,
  OAuthError,
  ServerError,
  TemporarilyUnavailableError,
  TooManyRequestsError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { allowedMethods } from '@modelcontextprotocol/sdk/server/auth/middleware/allowedMethods.js';
import { OAuthMetadata, OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { RequestHandler, Response, Router } from 'express';
import { clientKey } from '../common/client-address';
import { RateLimitedError } from '../common/errors';
import { BodyReader, closeIfBodyUnread, RequestBodyError, RequestBodyOptions } from '../common/request-body';
import { RateLimitName } from '../config/app-config';
import { RateLimits } from '../limits/rate-limits.service';
import { MCP_RESOURCE_PATH, OAuthService, SCOPES } from './oauth.service';

export const AUTHORIZE_PATH = '/oauth/authorize';
const TOKEN_PATH = '/oauth/token';
const REGISTER_PATH = '/oauth/register';
const REVOKE_PATH = '/oauth/revoke';
const logger = new Logger('OAuthRoutes');

/**
 * The largest token or revocation request: a form of a few hundred bytes (a code or a refresh
 * token, a PKCE verifier, a client_id URL, a redirect URI, a resource).
 */
export const OAUTH_FORM_LIMIT = 8 * 1024;
/** The largest registration request (JSON; what is kept of it is bounded again, field by field and whole). */
export const OAUTH_REGISTRATION_LIMIT = 16 * 1024;

/**
 * The OAuth protocol routes outside Nest's router (no API-key guard; the SDK's handlers answer
 * with the RFC error codes and allow any origin; each client address is limited by the service's
 * own limits, counted in Redis: perAddress; bodies are read by the service's BodyReader as bodies
 * read before authentication, within OAUTH_FORM_LIMIT or OAUTH_REGISTRATION_LIMIT: readBody):
 * Protected Resource Metadata (RFC 9728), Authorization Server Metadata (RFC 8414, with Client ID
 * Metadata Documents supported: client-metadata-documents.ts), the token
 * endpoint, Dynamic Client Registration (RFC 7591) and revocation (RFC 7009). The authorization
 * endpoint is the consent page (web/consent/consent.controller.tsx).
 */
export function mountOAuth(app: INestApplication, bodies: BodyReader): void {
  const express = app as NestExpressApplication;
  const oauth = app.get(OAuthService);
  const limits = app.get(RateLimits);
  const issuer = oauth.issuer;
  const resourceMetadata: OAuthProtectedResourceMetadata = {
    resource: oauth.resource,
    authorization_servers: [issuer],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'Messaging Sync MCP',
  };
  const serverMetadata: OAuthMetadata & Record<string, unknown> = {
    issuer,
    authorization_endpoint: `${issuer}${AUTHORIZE_PATH}`,
    token_endpoint: `${issuer}${TOKEN_PATH}`,
    registration_endpoint: `${issuer}${REGISTER_PATH}`,
    revocation_endpoint: `${issuer}${REVOKE_PATH}`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    // MCP 2026-07-28: Client ID Metadata Documents are the preferred registration; a host that
    // supports both uses them when this is true. Dynamic Client Registration is deprecated but kept
    // (registration_endpoint above) for hosts without them: OAuth metadata has no "deprecated" field.
    client_id_metadata_document_supported: true,
  };
  express.use(`/.well-known/oauth-protected-resource${MCP_RESOURCE_PATH}`, metadataHandler(resourceMetadata));
  express.use('/.well-known/oauth-protected-resource', exactly(metadataHandler(resourceMetadata)));
  express.use('/.well-known/oauth-authorization-server', exactly(metadataHandler(serverMetadata)));
  const form: RequestBodyOptions = { as: 'form', limit: OAUTH_FORM_LIMIT, repeated: 'refused' };
  express.use(TOKEN_PATH, perAddress(limits, 'oauthToken'), readBody(bodies, form), tokenHandler({ provider: oauth, rateLimit: false }));
  express.use(
    REGISTER_PATH,
    perAddress(limits, 'oauthRegister'),
    readBody(bodies, { as: 'json', limit: OAUTH_REGISTRATION_LIMIT }),
    registrationHandler(oauth),
  );
  express.use(REVOKE_PATH, perAddress(limits, 'oauthToken'), readBody(bodies, form), revocationHandler({ provider: oauth, rateLimit: false }));
}

/**
 * Reads the body of a POST to the route itself by the service's rules for bodies read before
 * authentication (docs/security.md): the route's small limit (413), no compression (415), within
 * 5 s (408), in the budget of such bodies with each address's share (429, 503), a form's name
 * given twice or JSON that does not parse refused (400), a body of another Content-Type refused
 * (415) rather than left unread. The SDK's own body parsers then find the body read and leave it:
 * theirs took 100 KB, inflated gzip, and their refusals became 500s. Every refusal is an OAuth
 * error (invalid_request, too_many_requests or temporarily_unavailable) naming the problem.
 */
function readBody(bodies: BodyReader, options: RequestBodyOptions): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'POST' || req.path !== '/') return next();
    bodies.read(req, res, { ...options, unauthenticated: true, otherTypes: 'refused' }).then(
      (body) => {
        req.body = body;
        next();
      },
      (error: unknown) => {
        if (!(error instanceof RequestBodyError)) return next(error);
        closeIfBodyUnread(req, res);
        const status = error.getStatus();
        const refusal =
          status === 429
            ? new TooManyRequestsError(error.message)
            : status === 503
              ? new TemporarilyUnavailableError(error.message)
              : new InvalidRequestError(error.message);
        answer(res, status, refusal, error.headers);
      },
    );
  };
}

/**
 * Dynamic Client Registration (RFC 7591), the service's own handler rather than the SDK's
 * clientRegistrationHandler: the SDK's schema drops what it does not know (application_type, which
 * the MCP authorization revision 2026-07-28 asks clients to send) and keeps any JSON under `jwks`;
 * here the body goes whole to OAuthService.register, which holds the rule. As the SDK's handlers:
 * POST only (405 otherwise), any origin (CORS, preflights answered), 201 with the registration, 400
 * with the OAuth error (invalid_client_metadata naming the field), never cached.
 */
function registrationHandler(oauth: OAuthService): Router {
  const router = Router();
  router.use(anyOrigin('POST'));
  router.use(allowedMethods(['POST']));
  router.post('/', (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    oauth.register(req.body).then(
      (client) => res.status(201).json(client),
      (error: unknown) => {
        if (error instanceof OAuthError && !(error instanceof ServerError)) return answer(res, 400, error);
        logger.error(`registration failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        answer(res, 500, new ServerError('Internal Server Error'));
      },
    );
  });
  return router;
}

/**
 * CORS as the SDK's handlers allow it (the `cors` package's defaults there): any origin may read
 * the answers; a preflight is answered 204 with the route's methods and the headers it asked for.
 */
function anyOrigin(methods: string): RequestHandler {
  return (req, res, next) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    if (req.method !== 'OPTIONS') return next();
    res.setHeader('Access-Control-Allow-Methods', methods);
    const asked = req.headers['access-control-request-headers'];
    if (asked) res.setHeader('Access-Control-Allow-Headers', asked);
    res.setHeader('Vary', 'Access-Control-Request-Headers');
    res.setHeader('Content-Length', '0');
    res.status(204).end();
  };
}

/** An OAuth error as the SDK's handlers answer one (JSON, not cached, readable from any origin), with `headers` (Retry-After…). */
function answer(res: Response, status: number, error: OAuthError, headers: Record<string, string> = {}): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Cache-Control', 'no-store');
  res.status(status).json(error.toResponseObject());
}

/**
 * Counts each request (CORS preflights aside) against the client address's budget of the limit
 * `name`, before the body is read. The SDK's own limiter is off: it counts in each process's
 * memory, 50 or 20 requests per address, which a host calling for all its users from a few
 * addresses spends at once. Over the limit: 429 with Retry-After and the OAuth error body
 * `too_many_requests`, readable from any origin as the SDK's answers are.
 */
function perAddress(limits: RateLimits, name: RateLimitName): RequestHandler {
  return (req, res, next) => {
    if (req.method === 'OPTIONS') return next();
    limits.consume(name, clientKey(req.ip), 1, 'this address').then(
      () => next(),
      (error: unknown) => {
        if (!(error instanceof RateLimitedError)) return next(error);
        answer(res, 429, new TooManyRequestsError(error.message), { 'Retry-After': String(error.retryAfterSeconds) });
      },
    );
  };
}

/** The handler for its mount path only, not the paths below it. */
function exactly(handler: ReturnType<typeof metadataHandler>): ReturnType<typeof metadataHandler> {
  return (req, res, next) => (req.path === '/' ? handler(req, res, next) : next());
}
