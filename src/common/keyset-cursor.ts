import { ValidationError } from './errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * An opaque keyset position for a list tool: the sort key of the last row of a page and its id.
 * The tool's name is inside, so a cursor of one list is refused by another. Rows that arrive
 * later never shift a page: the next page starts strictly after that position.
 */
export interface KeysetPosition {
  key: string;
  id: string;
}

export function encodeCursor(tool: string, position: KeysetPosition): string {
  return Buffer.from(JSON.stringify([tool, position.key, position.id]), 'utf8').toString('base64url');
}

/**
 * The position a cursor holds; a cursor that is not one of `tool`'s (tampered, truncated, from
 * another tool) is a ValidationError naming `cursor`. `isKey` checks the sort key's form.
 */
export function decodeCursor(tool: string, raw: string, isKey: (key: string) => boolean): KeysetPosition {
  try {
    const parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parsed) && parsed.length === 3) {
      const [owner, key, id] = parsed as unknown[];
      if (owner === tool && typeof key === 'string' && isKey(key) && typeof id === 'string' && UUID.test(id)) return { key, id };
    }
  } catch {
    // not base64url JSON: refused below
  }
  throw new ValidationError(`cursor is not valid: pass the nextCursor of a previous ${tool} answer`, 'cursor');
}

/** A sort key that is an ISO 8601 timestamp (kept to the millisecond, as the columns are). */
export function isIsoTimestamp(key: string): boolean {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(key) && !Number.isNaN(Date.parse(key));
}

/** A LIKE pattern that matches `text` anywhere, with the user's %, _ and \ taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
