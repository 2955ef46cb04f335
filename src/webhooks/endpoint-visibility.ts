import { Caller } from '../auth/caller';
import { SqlCondition } from '../database/sql';

/**
 * The one rule for which webhook endpoints a caller sees and acts on (docs/webhooks.md, "Which
 * endpoints a key limited to specific lines sees"), as a condition on the endpoint row `alias`:
 * - the endpoint is the calling user's; anybody else's reads as not found;
 * - a key with access to all channels (ALL) sees every endpoint of its user;
 * - a key limited to some lines (LINES) sees only endpoints whose scope lies wholly inside the
 *   lines it may use now (`caller.lines`: the user's live lines ∩ the key's allowlist). Hidden are
 *   all-channels endpoints, endpoints naming any other line (one outside the allowlist, one the
 *   user has lost, a deleted line) and endpoints whose scope emptied when its lines were removed.
 *
 * Every statement that reads or acts on an endpoint, or on its deliveries, carries this condition,
 * so a hidden endpoint and its deliveries answer exactly as ids that never existed.
 */
export function visibleEndpoint(caller: Caller, alias = 'e'): SqlCondition {
  const own = `${alias}.user_id = :visibleToUserId`;
  if (caller.channelAccess === 'ALL') return { sql: own, parameters: { visibleToUserId: caller.userId } };
  const scope = `webhook_endpoint_channels visible_scope WHERE visible_scope.endpoint_id = ${alias}.id`;
  return {
    sql:
      `(${own} AND NOT ${alias}.all_channels` +
      ` AND EXISTS (SELECT 1 FROM ${scope})` +
      ` AND NOT EXISTS (SELECT 1 FROM ${scope} AND visible_scope.line_id <> ALL (:visibleLineIds::uuid[])))`,
    parameters: { visibleToUserId: caller.userId, visibleLineIds: caller.lines.map((line) => line.id) },
  };
}

/**
 * Which of a visible endpoint's deliveries (the row `alias`) the caller sees and may resend: all of
 * them for a key with access to all channels; for a key limited to some lines, only deliveries of
 * events on those lines. An endpoint's scope can have been wider when older deliveries were made
 * (an all-lines endpoint narrowed later to the key's line): those carry other lines' data, and a
 * resend would send it to a URL the key can set. Org-wide events (no line) are not the key's either.
 */
export function visibleDelivery(caller: Caller, alias = 'd'): SqlCondition {
  if (caller.channelAccess === 'ALL') return { sql: 'TRUE', parameters: {} };
  return { sql: `${alias}.line_id = ANY (:visibleLineIds::uuid[])`, parameters: { visibleLineIds: caller.lines.map((line) => line.id) } };
}
