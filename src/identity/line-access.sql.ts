import { SqlCondition } from '../database/sql';
import { liveLineSql } from './lines.repository';
import { Principal } from './principal';

/**
 * Which lines a user may use now, as SQL: the one rule behind an API key's lines
 * (ApiKeysRepository.callerRows, resolved on every request), behind a signed download link's
 * holder (AttachmentsRepository.fileForHolder), and, through callerLines, behind every read of a
 * person's data for a resolved `Principal`. A user `u` uses a line `l` through a membership of `u` on
 * `l` (line_memberships), while `l` is not deleted and is of `u`'s org; through an API key `k`,
 * only while the key also allows `l` (channel access ALL, or `l`'s address in its allowlist).
 */

/** The line `l` is live and of the org of the user `u` (a membership of `u` on `l` joined beside it). */
export function liveLineOfUser(l: string, u: string): string {
  return `${liveLineSql(l)} AND ${l}.org_id = ${u}.org_id`;
}

/**
 * The user whose id is the SQL expression `userId` (of the org of the row `u`: a `users` row, or
 * a row carrying its user's `org_id`) holds a membership of the line `lineId`, and that line is
 * live and of the org: whether a person may be told of an event on the line now. The one rule
 * behind webhook fan-out and delivery claims (delivery/endpoint-receives-line.sql.ts: the
 * endpoint's owner) and behind the web app's live updates (live/live.repository.ts: the person).
 */
export function holdsLiveLine(userId: string, u: string, lineId: string): string {
  return (
    `EXISTS (SELECT 1 FROM line_memberships owner_m JOIN lines owner_l ON owner_l.id = owner_m.line_id` +
    ` WHERE owner_m.line_id = ${lineId} AND owner_m.user_id = ${userId} AND ${liveLineOfUser('owner_l', u)})`
  );
}

/** The API key `k` allows the line `l`. */
export function keyAllowsLine(k: string, l: string): string {
  return `(${k}.channel_access_mode = 'ALL' OR ${l}.address = ANY (${k}.allowed_addresses))`;
}

/**
 * The caller may see a row whose line is the column `line` (and whose org is the column `org`,
 * when the row has one): the line is one of `caller.lines` (its live memberships ∩ the key's
 * allowlist when the caller was resolved), and, at the time of the statement, still live, of the
 * caller's org and held by a membership of the caller. So a line deleted, or a membership removed,
 * while a request runs (after its caller was resolved) fails closed, like one that never existed.
 *
 * Every statement that reads a person's data for a caller carries this condition; its text depends
 * only on the column names, so the statement stays one prepared text. `line = ANY (:scopeLineIds)`
 * is what the planner sees and plans with (an index condition on threads_line_recent_idx, say);
 * the check at the time of the statement is the second `= ANY`, over an array an InitPlan reads
 * once per statement from the lines' and memberships' primary keys, never once per row. (An
 * EXISTS semi-join instead made the planner drive list_agent_turns from the lines and sort all
 * of their turns: 330 buffers where 6 do.)
 */
export function callerLines(caller: Principal, line: string, org?: string): SqlCondition {
  const ofOrg = org === undefined ? '' : `${org} = :scopeOrgId AND `;
  return {
    sql:
      `(${ofOrg}${line} = ANY (:scopeLineIds::uuid[])` +
      ` AND ${line} = ANY (ARRAY(SELECT scope_l.id FROM lines scope_l JOIN line_memberships scope_m ON scope_m.line_id = scope_l.id AND scope_m.user_id = :scopeUserId` +
      ` WHERE scope_l.id = ANY (:scopeLineIds::uuid[]) AND scope_l.org_id = :scopeOrgId AND ${liveLineSql('scope_l')})))`,
    parameters: { scopeOrgId: caller.orgId, scopeUserId: caller.userId, scopeLineIds: caller.lines.map((l) => l.id) },
  };
}
