import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ValidationError } from './errors';
import { LOWERCASE_UUID_PATTERN } from './uuid';

/** Bytes of HMAC-SHA256 a cursor carries: 128 bits, far beyond guessing. */
const MAC_BYTES = 16;
const MAC_CHARS = Math.ceil((MAC_BYTES * 4) / 3);

/**
 * An opaque keyset position for a list tool: the sort key of the last row of a page and its id.
 * Rows that arrive later never shift a page: the next page starts strictly after that position.
 */
export interface KeysetPosition {
  key: string;
  id: string;
}

/**
 * Cursors the service issues and only those: `<payload>.<mac>`, where the payload is the
 * base64url JSON `[tool, key, id]` and the mac its HMAC-SHA256 (first 128 bits, base64url) under a
 * key derived from SECRETS_KEY. The tool's name is inside, so a cursor of one list is refused by
 * another; a cursor edited by hand (another id, an impossible date such as 2026-02-30, year 0000)
 * fails the MAC and is refused before any query, naming `cursor`. The key comes from
 * configuration, so cursors stay valid across restarts and between replicas.
 */
@Injectable()
export class KeysetCursors {
  private readonly key: Buffer;

  constructor(@Inject(APP_CONFIG) config: Pick<AppConfig, 'secretsKey'>) {
    this.key = Buffer.from(hkdfSync('sha256', config.secretsKey, Buffer.alloc(0), 'keyset-cursors', 32));
  }

  encode(tool: string, position: KeysetPosition): string {
    const payload = Buffer.from(JSON.stringify([tool, position.key, position.id]), 'utf8').toString('base64url');
    return `${payload}.${this.mac(payload).toString('base64url')}`;
  }

  /**
   * The position a cursor holds; a cursor that is not one `tool` issued (forged, tampered,
   * truncated, another tool's) is a ValidationError naming `cursor`. `isKey` checks the sort key's
   * form as well: a second line of defence should the key ever leak.
   */
  decode(tool: string, raw: string, isKey: (key: string) => boolean): KeysetPosition {
    const position = this.open(tool, raw, isKey);
    if (!position) throw new ValidationError(`cursor is not valid: pass the nextCursor of a previous ${tool} answer`, 'cursor');
    return position;
  }

  private open(tool: string, raw: string, isKey: (key: string) => boolean): KeysetPosition | undefined {
    const dot = raw.lastIndexOf('.');
    if (dot <= 0 || raw.length - dot - 1 !== MAC_CHARS) return undefined;
    const payload = raw.slice(0, dot);
    const given = Buffer.from(raw.slice(dot + 1), 'base64url');
    if (given.length !== MAC_BYTES || !timingSafeEqual(given, this.mac(payload))) return undefined;
    try {
      const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
      if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
      const [owner, key, id] = parsed as unknown[];
      if (owner === tool && typeof key === 'string' && isKey(key) && typeof id === 'string' && LOWERCASE_UUID_PATTERN.test(id)) return { key, id };
    } catch {
      // not base64url JSON: refused by the caller
    }
    return undefined;
  }

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest().subarray(0, MAC_BYTES);
  }
}

const ISO_MS = /^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * A sort key that is an ISO 8601 UTC timestamp kept to the millisecond (as the columns are), of a
 * real instant (it round-trips through Date exactly: no 2026-02-30, no 24:00) in years 0001-9999
 * (PostgreSQL has no year 0000).
 */
export function isIsoTimestamp(key: string): boolean {
  const match = ISO_MS.exec(key);
  if (!match || Number(match[1]) < 1) return false;
  const time = Date.parse(key);
  return !Number.isNaN(time) && new Date(time).toISOString() === key;
}

/** A LIKE pattern that matches `text` anywhere, with the user's %, _ and \ taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
