import { createHash, randomBytes } from 'node:crypto';

/** A sign-in link's token: `sil_` and 43 base64url characters (32 random bytes). */
export const LINK_TOKEN_PATTERN = /^sil_[A-Za-z0-9_-]{43}$/;
/** A session cookie's token: `ses_` and 43 base64url characters. */
export const SESSION_TOKEN_PATTERN = /^ses_[A-Za-z0-9_-]{43}$/;

export function newLinkToken(): string {
  return `sil_${randomBytes(32).toString('base64url')}`;
}

export function newSessionToken(): string {
  return `ses_${randomBytes(32).toString('base64url')}`;
}

export function newCsrfToken(): string {
  return randomBytes(32).toString('base64url');
}

/** What the tables store instead of a token. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
