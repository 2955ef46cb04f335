/**
 * Which lines a user may use now, as SQL conditions over the aliases a statement joins: the one
 * rule behind an API key's lines (ApiKeysRepository.callerRows, resolved on every request) and
 * behind a signed download link's holder (AttachmentsRepository.fileForHolder). A user `u` uses a
 * line `l` through a membership of `u` on `l` (line_memberships; the statement joins it), while
 * `l` is not deleted and is of `u`'s org; through an API key `k`, only while the key also allows
 * `l` (channel access ALL, or `l`'s address in its allowlist).
 */

/** The line `l` is live and of the org of the user `u` (a membership of `u` on `l` joined beside it). */
export function liveLineOfUser(l: string, u: string): string {
  return `${l}.deleted_at IS NULL AND ${l}.org_id = ${u}.org_id`;
}

/** The API key `k` allows the line `l`. */
export function keyAllowsLine(k: string, l: string): string {
  return `(${k}.channel_access_mode = 'ALL' OR ${l}.address = ANY (${k}.allowed_addresses))`;
}
