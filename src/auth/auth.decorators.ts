import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { Caller } from './caller';

/** How a route authenticates. Routes are API-key routes unless they say otherwise. */
export type AuthKind = 'api-key' | 'admin' | 'ingest' | 'public';
export const AUTH_KIND = 'auth:kind';

/** Opts a route out of authentication (health checks, tracking pixels). */
export const Public = () => SetMetadata(AUTH_KIND, 'public' satisfies AuthKind);

/** The route needs `Authorization: Bearer <ADMIN_TOKEN>`. */
export const AdminOnly = () => SetMetadata(AUTH_KIND, 'admin' satisfies AuthKind);

/** A provider-facing route (carrier, mail server, mailbox sync): `Authorization: Bearer <INGEST_TOKEN>`. */
export const IngestOnly = () => SetMetadata(AUTH_KIND, 'ingest' satisfies AuthKind);

export interface AuthenticatedRequest {
  caller?: Caller;
}

/** The caller resolved by the API-key guard. */
export const CurrentCaller = createParamDecorator((_: unknown, ctx: ExecutionContext): Caller => {
  const caller = ctx.switchToHttp().getRequest<AuthenticatedRequest>().caller;
  if (!caller) throw new Error('CurrentCaller used on a route that is not an API-key route');
  return caller;
});
