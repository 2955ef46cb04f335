import { INestApplication } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { TooManyRequestsError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { OAuthMetadata, OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { RequestHandler } from 'express';
import { clientKey } from '../common/client-address';
import { RateLimitedError } from '../common/errors';
import { RateLimitName } from '../config/app-config';
import { RateLimits } from '../limits/rate-limits.service';
import { MCP_RESOURCE_PATH, OAuthService, SCOPES } from './oauth.service';

export const AUTHORIZE_PATH = '/oauth/authorize';
const TOKEN_PATH = '/oauth/token';
const REGISTER_PATH = '/oauth/register';
const REVOKE_PATH = '/oauth/revoke';

/**
 * The OAuth protocol routes outside Nest's router (no API-key guard; the SDK's handlers parse their
 * own bodies, answer with the RFC error codes and allow any origin; each client address is limited
 * by the service's own limits, counted in Redis: perAddress):
 * Protected Resource Metadata (RFC 9728), Authorization Server Metadata (RFC 8414, with Client ID
 * Metadata Documents supported: client-metadata-documents.ts), the token
 * endpoint, Dynamic Client Registration (RFC 7591) and revocation (RFC 7009). The authorization
 * endpoint is the consent page (web/pages/consent.controller.tsx).
 */
export function mountOAuth(app: INestApplication): void {
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
    client_id_metadata_document_supported: true,
  };
  express.use(`/.well-known/oauth-protected-resource${MCP_RESOURCE_PATH}`, metadataHandler(resourceMetadata));
  express.use('/.well-known/oauth-protected-resource', exactly(metadataHandler(resourceMetadata)));
  express.use('/.well-known/oauth-authorization-server', exactly(metadataHandler(serverMetadata)));
  express.use(TOKEN_PATH, perAddress(limits, 'oauthToken'), tokenHandler({ provider: oauth, rateLimit: false }));
  express.use(
    REGISTER_PATH,
    perAddress(limits, 'oauthRegister'),
    clientRegistrationHandler({ clientsStore: oauth, clientSecretExpirySeconds: 0, rateLimit: false }),
  );
  express.use(REVOKE_PATH, perAddress(limits, 'oauthToken'), revocationHandler({ provider: oauth, rateLimit: false }));
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
        res.setHeader('Access-Control-Allow-Origin', '*');
        res.setHeader('Retry-After', String(error.retryAfterSeconds));
        res.setHeader('Cache-Control', 'no-store');
        res.status(429).json(new TooManyRequestsError(error.message).toResponseObject());
      },
    );
  };
}

/** The handler for its mount path only, not the paths below it. */
function exactly(handler: ReturnType<typeof metadataHandler>): ReturnType<typeof metadataHandler> {
  return (req, res, next) => (req.path === '/' ? handler(req, res, next) : next());
}
