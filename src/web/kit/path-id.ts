import { Param } from '@nestjs/common';
import { UuidParam } from '../../common/uuid-param';

/**
 * The check of a web route's path id (`:id`, `:lineId`, `:threadId`...), one place for every
 * page: a parameter decorator in place of @Param, so the handler only ever sees a well-formed id
 * and a malformed one is a 400 page naming it (PageErrorFilter).
 * - `@PathId('lineId') lineId: string`: a UUID (UuidParam: "lineId must be a UUID").
 * - `@PathId('id', check) id: string`: the id as the tools check it, for a page that stands for a
 *   tool (check: the feature's argument check, e.g. webhookArguments.endpointId), so the page and
 *   the tool refuse it with the same words.
 * A route whose unknown and malformed ids must read alike (a key or a grant that is not the
 * person's reads as not found, whatever its form) takes a plain @Param: its service answers not found.
 */
export function PathId(param: string, check?: (id: string) => string): ParameterDecorator {
  return Param(param, check ? { transform: (value: string) => check(value) } : UuidParam(param));
}
