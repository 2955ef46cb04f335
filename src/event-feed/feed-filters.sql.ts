import { FeedFilter } from './event-descriptors';

/**
 * Whether the outbox row `o` passes one filter of a subscription whose value is the SQL
 * expression `value` (a parameter for a poll, a column of event_subscriptions at fan-out). The
 * one definition of each filter (docs/mcp.md, "Events"): events/poll and the HTTP feed read
 * through it, webhook fan-out chooses through it. The event's data is json (events/event-payloads.ts).
 */
export function feedFilterSql(filter: FeedFilter, o: string, value: string): string {
  switch (filter) {
    case 'line':
      return `${o}.line_id = ${value}::uuid`;
    case 'thread':
      return `${o}.data -> 'thread' ->> 'id' = ${value}`;
    case 'direction':
      return `${o}.data -> 'message' ->> 'direction' = ${value}`;
    case 'label':
      return `(${o}.data -> 'labels')::jsonb ? ${value}`;
  }
}
