import { EntityManager } from 'typeorm';
import { Caller } from '../auth/caller';

/** A SQL condition with its `:named` parameters: for a query builder's where(), or for queryNamed(). */
export interface SqlCondition {
  sql: string;
  parameters: Record<string, unknown>;
}

/**
 * The one rule for which webhook endpoints a caller sees and acts on (spec: Authentication 3-4;
 * DESIGN, "Ownership" and "Line-scoped keys"), as a condition on the endpoint row `alias`:
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

/**
 * Runs plain SQL written with `:named` parameters (as query builders take them), so a statement
 * can carry a SqlCondition without an ORM query.
 */
export function queryNamed<T = unknown>(manager: EntityManager, sql: string, parameters: Record<string, unknown>): Promise<T> {
  const [text, values] = manager.connection.driver.escapeQueryWithParameters(sql, parameters);
  return manager.query(text, values);
}
