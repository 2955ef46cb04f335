import { createHash, randomBytes } from 'node:crypto';

/** `csk_` followed by 48 lowercase hex characters (spec: API key format). */
export const API_KEY_PATTERN = /^csk_[0-9a-f]{48}$/;

export function hashApiKey(raw: string): string {
  return createHash('sha256').update(raw, 'utf8').digest('hex');
}

export function generateApiKey(): string {
  return `csk_${randomBytes(24).toString('hex')}`;
}
