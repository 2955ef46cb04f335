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
  /**
   * The W3C traceparent of what caused the event, when it is not the span active at publish
   * time (a batch recorded in one transaction for many requests); tracing only.
   */
  traceParent?: string | null;
}

/** A committed event as the relay hands it to subscribers. */
export interface PublishedEvent<K extends EventKind = EventKind> extends DomainEvent<K> {
  /** Outbox sequence number (bigint as string). */
  id: string;
  occurredAt: Date;
  /** Stored with the event; the relay replaces it with its own span's for the subscribers (null when tracing is off). */
  traceParent: string | null;
}
