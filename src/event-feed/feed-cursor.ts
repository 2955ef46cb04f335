import { FeedRefusal } from './event-feed.errors';

/** What every cursor this service mints starts with, so one of another system reads as foreign at once. */
const PREFIX = 'ecur1_';

/**
 * A cursor as the client holds it: an opaque string naming a position in the committed event log
 * (outbox_events.feed_position) and the subscription it was minted for (`scope`: the event name
 * and its filters, from subscriptionKey), so a cursor of one subscription cannot be replayed on
 * another one and skip its events. Not secret: the scope of what a position lets one read is the
 * caller's, checked on every read.
 */
export interface FeedCursor {
  position: bigint;
  scope: string;
}

export function encodeCursor(cursor: FeedCursor): string {
  return PREFIX + Buffer.from(`${cursor.position}.${cursor.scope}`, 'utf8').toString('base64url');
}

/**
 * The position a cursor names, or a refusal naming `field`: malformed (not one of ours) or
 * foreign (minted for another subscription).
 */
export function decodeCursor(value: string, scope: string, field = 'cursor'): bigint {
  const malformed = () => FeedRefusal.invalid(field, `${field} is not a cursor this server gave out; start again with ${field} null`);
  if (!value.startsWith(PREFIX) || value.length > 200) throw malformed();
  const text = Buffer.from(value.slice(PREFIX.length), 'base64url').toString('utf8');
  const match = /^(0|[1-9][0-9]{0,18})\.([0-9a-f]{16})$/.exec(text);
  if (!match) throw malformed();
  if (match[2] !== scope) {
    throw FeedRefusal.invalid(field, `${field} was given out for another event name or other arguments; use the cursor of this subscription, or null`);
  }
  return BigInt(match[1]);
}
