import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { AppConfig } from '../config/app-config';
import { FeedRefusal } from './event-feed.errors';

/** What every cursor this service mints starts with, so one of another system reads as foreign at once. */
const PREFIX = 'ecur2_';
/** The first form (a deterministic IV), minted until 2026-11-29: still opened, so a client holding one is not thrown back to "start again". */
const LEGACY_PREFIX = 'ecur1_';
const SALT_BYTES = 16;
const LEGACY_IV_BYTES = 12;
const TAG_BYTES = 16;
/** Each cursor has a key of its own (from its salt), so the IV never needs to differ. */
const ZERO_IV = Buffer.alloc(12);
/** Positions are written with a fixed width, so a cursor's length says nothing of its position. */
const POSITION_DIGITS = 19;

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
 * Mints and opens feed cursors: `ecur2_` + base64url of a random salt and AES-256-GCM of
 * `position.scope` under a key of its own, an HMAC of the salt under a key derived from
 * SECRETS_KEY (SECRETS_KEY_FALLBACKS still open, so a key rotation does not throw clients back to
 * "start again"). Sealed, not only signed, and different every time it is minted, even for the
 * same position (docs/decisions.md, "Cursors are …"): positions are drawn for every org from one
 * sequence and a quiet cursor moves to the org's head, so a readable position, or a cursor that
 * stays the same while nothing happened, would tell a caller how many events other orgs, and
 * lines it does not hold, produced and when. A cursor edited by hand fails the tag.
 */
export class FeedCursors {
  private readonly keys: Buffer[];

  constructor(config: Pick<AppConfig, 'secretsKey' | 'secretsKeyFallbacks'>) {
    this.keys = [config.secretsKey, ...config.secretsKeyFallbacks].map((key) => derive(key, 'event-feed-cursors'));
  }

  encode(cursor: FeedCursor): string {
    const plain = `${cursor.position.toString().padStart(POSITION_DIGITS, '0')}.${cursor.scope}`;
    const salt = randomBytes(SALT_BYTES);
    const cipher = createCipheriv('aes-256-gcm', saltedKey(this.keys[0], salt), ZERO_IV);
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([salt, cipher.getAuthTag(), sealed]).toString('base64url');
  }

  /**
   * The position a cursor names, or a refusal naming `field`: malformed (not one of ours, or
   * edited) or foreign (minted for another subscription).
   */
  decode(value: string, scope: string, field = 'cursor'): bigint {
    const malformed = () => FeedRefusal.invalid(field, `${field} is not a cursor this server gave out; start again with ${field} null`);
    const legacy = value.startsWith(LEGACY_PREFIX);
    if (!(legacy || value.startsWith(PREFIX)) || value.length > 200) throw malformed();
    const text = this.open(Buffer.from(value.slice(PREFIX.length), 'base64url'), legacy);
    const form = legacy ? /^(0|[1-9][0-9]{0,18})\.([0-9a-f]{16})$/ : /^([0-9]{19})\.([0-9a-f]{16})$/;
    const match = text === undefined ? null : form.exec(text);
    if (!match) throw malformed();
    if (match[2] !== scope) {
      throw FeedRefusal.invalid(field, `${field} was given out for another event name or other arguments; use the cursor of this subscription, or null`);
    }
    return BigInt(match[1]);
  }

  private open(raw: Buffer, legacy: boolean): string | undefined {
    const head = legacy ? LEGACY_IV_BYTES : SALT_BYTES;
    if (raw.length <= head + TAG_BYTES) return undefined;
    for (const key of this.keys) {
      try {
        const [cipherKey, iv] = legacy ? [key, raw.subarray(0, head)] : [saltedKey(key, raw.subarray(0, head)), ZERO_IV];
        const decipher = createDecipheriv('aes-256-gcm', cipherKey, iv);
        decipher.setAuthTag(raw.subarray(head, head + TAG_BYTES));
        return Buffer.concat([decipher.update(raw.subarray(head + TAG_BYTES)), decipher.final()]).toString('utf8');
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

/** One cursor's own key: GCM's IV may then be fixed, with no bound on how many cursors one key mints. */
function saltedKey(key: Buffer, salt: Buffer): Buffer {
  return createHmac('sha256', key).update(salt).digest();
}
