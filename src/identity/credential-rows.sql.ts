import { ChannelAccessMode, LineType, OrgTier } from './account.types';
import { KeyPermission } from './key-permissions';
import { keyAllowsLine, liveLineOfUser } from './line-access.sql';
import { liveLineSql } from './lines.repository';
import { UserRole } from './roles';

/**
 * The SQL that API keys (auth/) and OAuth grants (oauth/) share: a grant is a key of its person
 * with the access chosen at consent, so both resolve to a principal by one query shape, show their
 * allowlist by one aggregate, and stamp their last use by one statement.
 */

/** What resolves to a principal: a key's or a grant's row (`key_id` is the grant's id for a grant), one per line it reaches. */
export interface CredentialRow {
  key_id: string;
  user_id: string;
  org_id: string;
  tier: OrgTier;
  role: UserRole;
  mode: ChannelAccessMode;
  permissions: KeyPermission[];
  last_used_at: Date | null;
  line_id: string | null;
  line_type: LineType | null;
  line_address: string | null;
}

/**
 * The rows of the credentials `credential` (the alias of an `api_keys` or `oauth_grants` row in
 * `from`) that `where` selects: each with its person and org, and the person's live lines narrowed
 * by the credential's channel access (line-access.sql.ts), oldest line first; one row with null
 * line columns when it reaches none. `columns` come first (what the caller groups the rows by).
 */
export function credentialRowsSql(query: { columns: string; from: string; credential: string; where: string; groupBy: string }): string {
  const c = query.credential;
  return `SELECT ${query.columns}, ${c}.id AS key_id, u.id AS user_id, u.org_id, o.tier, u.role, ${c}.channel_access_mode AS mode, ${c}.permissions, ${c}.last_used_at,
              l.id AS line_id, l.type AS line_type, l.address AS line_address
         FROM ${query.from}
         JOIN users u ON u.id = ${c}.user_id
         JOIN orgs o ON o.id = u.org_id
         LEFT JOIN line_memberships m ON m.user_id = u.id
         LEFT JOIN lines l ON l.id = m.line_id AND ${liveLineOfUser('l', 'u')} AND ${keyAllowsLine(c, 'l')}
        WHERE ${query.where}
        ORDER BY ${query.groupBy}, l.created_at`;
}

/** A line of a credential's allowlist, as its person sees it: id and type null for an address no live line of the org has (it grants nothing). */
export interface AllowlistLine {
  id: string | null;
  type: LineType | null;
  address: string;
}

/**
 * The credential `credential`'s allowlist in its order, as `lines` (JSON of AllowlistLine), each
 * address matched to the live line of the org `orgId` (an SQL expression) at that address.
 */
export function allowlistLinesSql(credential: string, orgId: string): string {
  return `COALESCE((SELECT json_agg(json_build_object('id', l.id, 'type', l.type, 'address', a.address) ORDER BY a.ord)
                   FROM unnest(${credential}.allowed_addresses) WITH ORDINALITY AS a(address, ord)
                   LEFT JOIN lines l ON l.address = a.address AND l.org_id = ${orgId} AND ${liveLineSql('l')}), '[]'::json) AS lines`;
}
