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

/**
 * Event data a statement builds in the database, for events published without their data passing
 * through Node (EventBus.publishAllFrom): `sql` selects rows of (key text, data json), with its
 * `:named` parameters.
 */
export interface SqlEventData {
  sql: string;
  parameters: Record<string, unknown>;
}

/** An event whose data is the SqlEventData row with key `dataKey`. */
export type KeyedEvent<K extends EventKind = EventKind> = Omit<DomainEvent<K>, 'data'> & { dataKey: string };
