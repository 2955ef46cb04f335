import { keyAllowsLine } from '../identity/line-access.sql';
import { FeedFilter } from './event-descriptors';
import { feedFilterSql } from './feed-filters.sql';
import { FEED_PERMISSION } from './event-feed.service';

const FILTER_COLUMNS: Record<FeedFilter, string> = { line: 'line_id', thread: 'thread', direction: 'direction', label: 'label' };

/**
 * Whether the endpoint row `e` may still be sent an event on the line whose id is the SQL
 * expression `lineId` (NULL for an org-wide event) as far as MCP Events is concerned: true for a
 * registered webhook; for a subscription's endpoint, only while the subscription has not expired
 * and the credential that subscribed (an API key or an OAuth grant: both carry the same columns)
 * still exists, still has the `webhooks` permission, and still allows the line (an org-wide event
 * needs a credential of all channels, as the feed's read rule says). The owner's live membership
 * of the line is endpoint-receives-line.sql.ts's part. Checked at fan-out and at the claim of each
 * attempt, so revoking or narrowing the credential, or the TTL running out, stops deliveries at once.
 */
export function subscriptionStillReceives(e: string, lineId: string): string {
  const credential =
    `(SELECT k.channel_access_mode, k.allowed_addresses, k.permissions FROM api_keys k WHERE k.id = sub_s.key_id` +
    ` UNION ALL SELECT g.channel_access_mode, g.allowed_addresses, g.permissions FROM oauth_grants g WHERE g.id = sub_s.key_id) sub_k`;
  const allowsLine =
    `CASE WHEN ${lineId} IS NULL THEN sub_k.channel_access_mode = 'ALL'` +
    ` ELSE EXISTS (SELECT 1 FROM lines sub_l WHERE sub_l.id = ${lineId} AND ${keyAllowsLine('sub_k', 'sub_l')}) END`;
  return (
    `(${e}.purpose = 'webhook' OR EXISTS (SELECT 1 FROM event_subscriptions sub_s WHERE sub_s.endpoint_id = ${e}.id AND sub_s.expires_at > now()` +
    ` AND EXISTS (SELECT 1 FROM ${credential} WHERE '${FEED_PERMISSION}' = ANY (sub_k.permissions) AND ${allowsLine})))`
  );
}

/**
 * Whether the outbox row `o` passes the filters (line, thread, direction, label) of the
 * subscription whose endpoint is the row `e`; true for a registered webhook (its scope is its
 * channels, endpoint-receives-line.sql.ts). The filters are the feed's (feed-filters.sql.ts).
 */
export function subscriptionFiltersPass(e: string, o: string): string {
  const filters = (Object.keys(FILTER_COLUMNS) as FeedFilter[]).map(
    (f) => `(sub_f.${FILTER_COLUMNS[f]} IS NULL OR ${feedFilterSql(f, o, `sub_f.${FILTER_COLUMNS[f]}${f === 'line' ? '::text' : ''}`)})`,
  );
  return `(${e}.purpose = 'webhook' OR EXISTS (SELECT 1 FROM event_subscriptions sub_f WHERE sub_f.endpoint_id = ${e}.id AND ${filters.join(' AND ')}))`;
}
