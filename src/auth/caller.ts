import { LineRef } from '../accounts/accounts.service';
import { OrgTier } from '../accounts/account.types';
import { UserRole } from './roles';
import { ChannelAccessMode } from './api-key.entity';
import { KeyPermission } from './key-permissions';

/**
 * Who is calling, resolved afresh on every request: through an API key, the key's owner, with the
 * owner's live role, and the lines the key may use (live memberships ∩ the key's allowlist); or a
 * person signed in to the web app (web/caller-of.ts), with all their live lines. The services that
 * hold the rules take it; none of them reads `keyId`.
 */
export interface Caller {
  /** The API key, or null for a person's web session: only the MCP endpoint (a KeyCaller) uses it, for the key's rate limit and revocation checks. */
  keyId: string | null;
  userId: string;
  orgId: string;
  orgTier: OrgTier;
  role: UserRole;
  channelAccess: ChannelAccessMode;
  lines: LineRef[];
  /**
   * What the key may do beside its lines (auth/key-permissions.ts), read live like its role: the
   * MCP endpoint lists and runs only the tools whose permission is here. A web session has all.
   */
  permissions: KeyPermission[];
}

/** A caller through an API key (the MCP endpoint): its rate limit and revocation checks are per key. */
export type KeyCaller = Caller & { keyId: string };

/**
 * How a message names what the caller acts through: "this API key", "this app" (an OAuth grant:
 * the person connected an app, they never saw a key) or "you" (a person's own web session).
 */
export function actingThrough(caller: Pick<Caller, 'keyId'>): 'this API key' | 'this app' | 'you' {
  if (caller.keyId === null) return 'you';
  return isGrantId(caller.keyId) ? 'this app' : 'this API key';
}

/** A grant's id (UUID version 8), as opposed to an API key's (version 4). */
export function isGrantId(id: string): boolean {
  return id.length === 36 && id[14] === '8';
}
