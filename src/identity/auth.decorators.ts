import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata, UseGuards } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthenticatedRequest, Principal } from './principal';
import { CsrfTokenGuard } from './csrf-token.guard';
import { KeyPermission } from './key-permissions';

/** How a route authenticates. Routes are API-key routes unless they say otherwise. */
export type AuthKind = 'api-key' | 'admin' | 'ingest' | 'public' | 'session' | 'same-origin' | 'signed-body';
export const AUTH_KIND = 'auth:kind';

/** How the route (its handler, then its controller) authenticates: an API-key route unless it says otherwise. */
export function routeAuthKind(reflector: Reflector, targets: Parameters<Reflector['getAllAndOverride']>[1]): AuthKind {
  return reflector.getAllAndOverride<AuthKind | undefined>(AUTH_KIND, targets) ?? 'api-key';
}
/** The header a @SignedBody() route's signature comes in. */
export const SIGNATURE_HEADER = 'auth:signature-header';

/** Opts a route out of authentication (health checks, tracking pixels). */
export const Public = () => SetMetadata(AUTH_KIND, 'public' satisfies AuthKind);

/** The route needs `Authorization: Bearer <ADMIN_TOKEN>`. */
export const AdminOnly = () => SetMetadata(AUTH_KIND, 'admin' satisfies AuthKind);

/** A provider-facing route (carrier, mail server, mailbox sync): `Authorization: Bearer <INGEST_TOKEN>`. */
export const IngestOnly = () => SetMetadata(AUTH_KIND, 'ingest' satisfies AuthKind);

/**
 * A web page for a signed-in person (docs/web.md): the session cookie must name a live session
 * (else a GET is sent to /sign-in and anything else gets 403); a state-changing request must come
 * from the service's own origin and carry the session's `_csrf` field. The person is `@CurrentPrincipal()`.
 */
export const SessionAuth = () => applyDecorators(SetMetadata(AUTH_KIND, 'session' satisfies AuthKind), UseGuards(CsrfTokenGuard));

/**
 * A page form posted without a session (the sign-in forms): no credentials, but a state-changing
 * request must come from the service's own origin (Origin, or Sec-Fetch-Site when Origin is absent).
 * Unlike @Public(), its (small, declared) body is read.
 */
export const SameOriginForm = () => SetMetadata(AUTH_KIND, 'same-origin' satisfies AuthKind);

/**
 * A provider's callback authenticated by a signature over its body (Twilio's X-Twilio-Signature):
 * no bearer token. The auth guard requires the signature header (403 without it, before any body
 * is read) and then lets the body be read (the route's @ReadsBody must say `unauthenticated`:
 * a small budget of its own and a short deadline); a guard of the route's own checks the
 * signature before the handler runs. Use it only with such a guard.
 */
export const SignedBody = (signatureHeader: string) =>
  applyDecorators(SetMetadata(AUTH_KIND, 'signed-body' satisfies AuthKind), SetMetadata(SIGNATURE_HEADER, signatureHeader));

/**
 * What a route does for its principal, read by the one ActionGuard (identity/action.guard.ts).
 * Declared on every API-key route: the one permission it needs, checked with the key's rate limit
 * and running-calls slots before the handler runs; or `per-call` for the tool endpoint alone
 * (KeyActionAudit refuses it elsewhere), which checks each call's tool (permission) and counts
 * each message of a batch (rate) itself. An API-key route without it stops the service from
 * starting. A page (@SessionAuth) needs none: its state-changing requests count against the
 * person's budget, except a route that only takes access away (revokes an API key, a connected
 * app), which says `revokes-access` (refused on an API-key route).
 */
export type ActionKind = KeyPermission | 'per-call' | 'revokes-access';
export const KEY_ACTION = 'auth:key-action';
export const KeyAction = (action: ActionKind) => SetMetadata(KEY_ACTION, action);

/**
 * The principal the AuthGuard resolved: a KeyPrincipal on an API-key route, a Person on a
 * @SessionAuth() page. One decorator for every way in.
 */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<AuthenticatedRequest>().principal;
  if (!principal) throw new Error('CurrentPrincipal used on a route that authenticates no principal (neither an API-key route nor a @SessionAuth() page)');
  return principal;
});
