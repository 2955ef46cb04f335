import { LineRef } from '../accounts/accounts.service';
import { OrgTier, UserRole } from '../accounts/account.types';
import { ChannelAccessMode } from './api-key.entity';

/**
 * Who is calling through an API key, resolved afresh on every request: the key's owner, with the
 * owner's live role, and the lines the key may use (live memberships ∩ the key's allowlist).
 */
export interface Caller {
  keyId: string;
  userId: string;
  orgId: string;
  orgTier: OrgTier;
  role: UserRole;
  channelAccess: ChannelAccessMode;
  lines: LineRef[];
}
