import { createCipheriv, createDecipheriv, createHmac, hkdfSync } from 'node:crypto';
import { AppConfig } from '../config/app-config';
import { FeedRefusal } from './event-feed.errors';

/** What every cursor this service mints starts with, so one of another system reads as foreign at once. */
const PREFIX = 'ecur1_';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * A cursor as the client holds it: an opaque string naming a position in the committed event log
 * (outbox_events.feed_position) and the subscription it was minted for (`scope`: the event name
 * and its filters, from subscriptionKey), so a cursor of one subscription cannot be replayed on
 * another one and skip its events.
 */
export interface FeedCursor {
  position: bigint;
  scope: string;
}

/**
 * Mints and opens feed cursors: `ecur1_` + base64url of AES-256-GCM of `position.scope`, under a
 * key derived from SECRETS_KEY, its IV an HMAC of the plain text under a second derived key (as
 * AES-GCM-SIV does: the same position gives the same cursor, so a client or test can tell that a
 * stream resumed where it stopped, and an IV repeats only with its plain text) (SECRETS_KEY_FALLBACKS still open, so a
 * key rotation does not throw clients back to "start again"). Sealed, not only signed
 * (docs/decisions.md, "Cursors are …"): positions are drawn for every org from one sequence and a quiet
 * cursor moves to the org's head, so a readable position would tell a caller how many events
 * other orgs, and lines it does not hold, produced and when. A cursor edited by hand fails the tag.
 */
export class FeedCursors {
  private readonly keys: Buffer[];
  private readonly ivKey: Buffer;

  constructor(config: Pick<AppConfig, 'secretsKey' | 'secretsKeyFallbacks'>) {
    this.keys = [config.secretsKey, ...config.secretsKeyFallbacks].map((key) => derive(key, 'event-feed-cursors'));
    this.ivKey = derive(config.secretsKey, 'event-feed-cursor-ivs');
  }

  encode(cursor: FeedCursor): string {
    const plain = `${cursor.position}.${cursor.scope}`;
    const iv = createHmac('sha256', this.ivKey).update(plain).digest().subarray(0, IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys[0], iv);
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
  }

  /**
   * The position a cursor names, or a refusal naming `field`: malformed (not one of ours, or
   * edited) or foreign (minted for another subscription).
   */
  decode(value: string, scope: string, field = 'cursor'): bigint {
    const malformed = () => FeedRefusal.invalid(field, `${field} is not a cursor this server gave out; start again with ${field} null`);
    if (!value.startsWith(PREFIX) || value.length > 200) throw malformed();
    const text = this.open(Buffer.from(value.slice(PREFIX.length), 'base64url'));
    const match = text === undefined ? null : /^(0|[1-9][0-9]{0,18})\.([0-9a-f]{16})$/.exec(text);
    if (!match) throw malformed();
    if (match[2] !== scope) {
      throw FeedRefusal.invalid(field, `${field} was given out for another event name or other arguments; use the cursor of this subscription, or null`);
    }
    return BigInt(match[1]);
  }

  private open(raw: Buffer): string | undefined {
    if (raw.length <= IV_BYTES + TAG_BYTES) return undefined;
    for (const key of this.keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
        decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
        return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        // the tag does not match under this key: try the next one
      }
    }
    return undefined;
  }
}

function derive(key: Buffer, info: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), info, 32));
}
