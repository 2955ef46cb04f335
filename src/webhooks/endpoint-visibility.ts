import { Principal } from '../identity/principal';
import { callerLines } from '../identity/line-access.sql';
import { SqlCondition } from '../database/sql';

/**
 * The one rule for which webhook endpoints a caller sees and acts on (docs/webhooks.md, "Which
 * endpoints a key limited to specific lines sees"), as a condition on the endpoint row `alias`:
 * - the endpoint is the calling user's; anybody else's reads as not found;
 * - a key with access to all channels (ALL) sees every endpoint of its user;
 * - a key limited to some lines (LINES) sees only endpoints whose scope lies wholly inside the
 *   lines it may see (callerLines: the user's live lines ∩ the key's allowlist). Hidden are
 *   all-channels endpoints, endpoints naming any other line (one outside the allowlist, one the
 *   user has lost, a deleted line) and endpoints whose scope emptied when its lines were removed.
 *
 * - the endpoint was registered as a webhook: the endpoint row of an MCP Events subscription
 *   (purpose `event_subscription`) is reached through events/subscribe and events/unsubscribe only.
 *
 * Every statement that reads or acts on an endpoint, or on its deliveries, carries this condition,
 * so a hidden endpoint and its deliveries answer exactly as ids that never existed.
 */
export function visibleEndpoint(caller: Principal, alias = 'e'): SqlCondition {
  const own = `${alias}.user_id = :visibleToUserId AND ${alias}.purpose = 'webhook'`;
  if (caller.channelAccess === 'ALL') return { sql: own, parameters: { visibleToUserId: caller.userId } };
  const scope = `webhook_endpoint_channels visible_scope WHERE visible_scope.endpoint_id = ${alias}.id`;
  const seen = callerLines(caller, 'visible_scope.line_id');
  return {
    sql: `(${own} AND NOT ${alias}.all_channels` + ` AND EXISTS (SELECT 1 FROM ${scope})` + ` AND NOT EXISTS (SELECT 1 FROM ${scope} AND NOT ${seen.sql}))`,
    parameters: { visibleToUserId: caller.userId, ...seen.parameters },
  };
}

/**
 * Which of a visible endpoint's deliveries (the row `alias`) the caller sees, and may resend or
 * recover: only those it could receive now. A delivery of an event on a line is seen only while
 * the caller may see the line (callerLines: live memberships on lines not deleted, narrowed by a
 * LINES key's allowlist), so when a membership is removed or the line is
 * deleted, that line's deliveries (payloads with message bodies) read as not found, drop out of
 * lists, and cannot be sent again to a URL the caller sets. An endpoint's scope can also have been
 * wider when older deliveries were made (an all-lines endpoint narrowed later): the same rule
 * hides those. A delivery of an event on no line (contact.merged is the only such kind, see
 * events/domain-event.ts) is seen by a caller with access to all channels (only endpoints of all
 * channels receive one), never by a key limited to some lines.
 *
 * A condition in the statement, never a filter after it: a page of the log stays a keyset page
 * of the (endpoint, created_at, id) index, and hidden rows are neither counted nor cursored over.
 */
export function visibleDelivery(caller: Principal, alias = 'd'): SqlCondition {
  const onLine = callerLines(caller, `${alias}.line_id`);
  return { sql: caller.channelAccess === 'ALL' ? `(${alias}.line_id IS NULL OR ${onLine.sql})` : onLine.sql, parameters: onLine.parameters };
}
