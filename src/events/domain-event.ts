import { EventKind } from './event-kinds';
import { EventDataByKind } from './event-payloads';

/**
 * A domain event as published on the bus. `lineId` says which line it happened on: thread and
 * mailbox events have one; contact.merged is org-wide (null) and reaches only unscoped endpoints.
 */
export interface DomainEvent<K extends EventKind = EventKind> {
  type: K;
  orgId: string;
  lineId: string | null;
  data: EventDataByKind[K];
}

/** A committed event as the relay hands it to subscribers. */
export interface PublishedEvent<K extends EventKind = EventKind> extends DomainEvent<K> {
  /** Outbox sequence number (bigint as string). */
  id: string;
  occurredAt: Date;
}
