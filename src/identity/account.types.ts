export const ORG_TIERS = ['STARTER', 'PRO', 'POWER'] as const;
export type OrgTier = (typeof ORG_TIERS)[number];

export const LINE_TYPES = ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] as const;
export type LineType = (typeof LINE_TYPES)[number];

/** A line a principal may use now (a live membership on a line not deleted). */
export interface LineRef {
  id: string;
  type: LineType;
  address: string;
}

/** Which lines a key or grant reaches: all its person's lines, or the allowlist. */
export type ChannelAccessMode = 'ALL' | 'LINES';

/** Webhook endpoints a user may own, per org tier (spec: Limits). */
export const TIER_ENDPOINT_CAP: Record<OrgTier, number> = { STARTER: 1, PRO: 3, POWER: 10 };

/** E.164: a plus sign and 2 to 15 digits, no leading zero. */
export const E164 = /^\+[1-9]\d{1,14}$/;

/** Line and allowlist addresses are compared in one canonical form. */
export function normalizeAddress(address: string): string {
  const trimmed = address.trim();
  return trimmed.includes('@') ? trimmed.toLowerCase() : trimmed;
}
