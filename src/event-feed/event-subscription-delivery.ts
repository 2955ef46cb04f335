import { FeedCursors } from './feed-cursor';

/** The header naming the subscription a webhook-mode delivery is for (the draft's "Webhook-Based Delivery"). */
export const SUBSCRIPTION_ID_HEADER = 'x-mcp-subscription-id';

/** What a delivery to a subscription's URL is built from: the claimed delivery's envelope and the subscription's place in the feed. */
export interface SubscriptionDeliveryInput {
  sourceEventId: string | null;
  eventType: string;
  createdAt: Date;
  mode: string;
  /** The envelope's data (attachment links already signed for this attempt). */
  data: object;
  subscriptionScope: string;
  feedPosition: string | null;
  /**
   * The safe-to-persist watermark the claim read: just before the lowest position whose delivery
   * to the subscription still waits (pending or retrying), other than this one; else the feed's head.
   */
  watermark: string | null;
}

/**
 * The body of a webhook-mode delivery: the draft's EventOccurrence `{eventId, name, timestamp,
 * data, cursor}`, the same occurrence events/poll answers for the event (eventId `evt_<outbox id>`
 * in both, so a client that polls and subscribes can tell one event by it), with a cursor bound
 * to the subscription's scope that is the draft's safe-to-persist watermark: every event at or
 * before it was acknowledged or abandoned (this one counts as acknowledged by whoever reads it).
 * Just before the earliest event whose delivery still waits (a retry of an earlier event, or a
 * later one in flight), so a client that persists it and resubscribes or polls from it gets that
 * event; the feed's head when none waits. Null cursor when retention has removed the event.
 */
export function subscriptionOccurrence(input: SubscriptionDeliveryInput, cursors: FeedCursors): { eventId: string; body: object } {
  const eventId = `evt_${input.sourceEventId}`;
  const timestamp = input.createdAt.toISOString();
  const position = input.feedPosition === null || input.watermark === null ? null : BigInt(input.watermark);
  const cursor = position === null ? null : cursors.encode({ position, scope: input.subscriptionScope });
  return {
    eventId,
    body: {
      eventId,
      name: input.eventType,
      timestamp,
      data: { id: eventId, type: input.eventType, createdAt: timestamp, mode: input.mode, data: input.data },
      cursor,
    },
  };
}
