import { ExecutionContext, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Request } from 'express';
import { assertWellFormed } from './well-formed';

const SKIP_WELL_FORMED_CHECK = 'well-formed:skip';

/**
 * Opts a route out of the REST check below. Only for routes that must never refuse text and take
 * care of it themselves: inbound email (repaired by its parser) and the tracking pixel (always the
 * GIF; a token that is not well-formed is simply not one of ours).
 */
export const SkipWellFormedCheck = () => SetMetadata(SKIP_WELL_FORMED_CHECK, true);

/**
 * The REST check, made for every route by RequestInputGuard once the body is read: route
 * params, query and JSON body must be well-formed text without U+0000 (see well-formed.ts), else
 * a ValidationError (400) naming the field, e.g. `{"field": "body", "message": "body contains
 * U+0000 (NUL), which is not allowed"}`. It runs after the auth guard (an unauthenticated caller
 * still gets 401) and before the validation pipe. Raw bodies (Buffers: the MCP endpoint, inbound
 * email) are not walked; the MCP server checks tool arguments itself. Headers need no check:
 * Node's HTTP parser refuses control characters in them (400), and decodes the rest as Latin-1,
 * which cannot make a lone surrogate.
 */
export function assertWellFormedRequest(reflector: Reflector, context: ExecutionContext): void {
  if (reflector.getAllAndOverride<boolean>(SKIP_WELL_FORMED_CHECK, [context.getHandler(), context.getClass()])) return;
  const request = context.switchToHttp().getRequest<Request>();
  assertWellFormed(request.params);
  assertWellFormed(request.query);
  assertWellFormed(request.body);
}
