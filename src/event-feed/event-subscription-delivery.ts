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
}

/**
 * The body of a webhook-mode delivery: the draft's EventOccurrence `{eventId, name, timestamp,
 * data, cursor}`, the same occurrence events/poll answers for the event (eventId `evt_<outbox id>`
 * in both, so a client that polls and subscribes can tell one event by it), with the cursor just
 * past it, bound to the subscription's scope: a client that falls back to events/poll resumes
 * from the last delivery it handled. Null cursor when retention has removed the event.
 */
export function subscriptionOccurrence(input: SubscriptionDeliveryInput, cursors: FeedCursors): { eventId: string; body: object } {
  const eventId = `evt_${input.sourceEventId}`;
  const timestamp = input.createdAt.toISOString();
  const cursor = input.feedPosition === null ? null : cursors.encode({ position: BigInt(input.feedPosition), scope: input.subscriptionScope });
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
