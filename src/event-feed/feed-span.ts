import { Principal } from '../identity/principal';
import type { Subscription } from './event-feed.service';
import { EventFeedRepository, FeedRow } from './event-feed.repository';

/** What one read of a subscription found: the events to give, where its cursor goes, and whether any were skipped. */
export interface FeedSpan {
  /** At most maxEvents, in commit order, without those older than maxAgeMs. */
  rows: FeedRow[];
  /** Past the last event read, or (none left) up to the head read in the same snapshot. */
  position: bigint;
  /** Retention deleted events after `after`, or maxAgeMs skipped some. */
  truncated: boolean;
  hasMore: boolean;
}

/**
 * One read of the caller's events after `after`: the step every mode repeats (a poll once per
 * request, a stream on each wake of FeedWakes). A quiet subscription's cursor moves up to the head,
 * so it keeps up with the log and does not fall behind retention.
 */
export async function readSpan(
  repository: EventFeedRepository,
  caller: Principal,
  subscription: Subscription,
  after: bigint,
  maxEvents: number,
  maxAgeMs: number | undefined,
): Promise<FeedSpan> {
  const page = await repository.read(caller, { after, kind: subscription.kind, filters: subscription.filters, limit: maxEvents + 1 });
  const hasMore = page.rows.length > maxEvents;
  const rows = hasMore ? page.rows.slice(0, maxEvents) : page.rows;
  const floor = maxAgeMs === undefined ? undefined : Date.now() - maxAgeMs;
  const kept = floor === undefined ? rows : rows.filter((r) => r.occurred_at.getTime() >= floor);
  const truncated = after < BigInt(page.horizon) || kept.length < rows.length;
  const last = rows.length > 0 ? BigInt(rows[rows.length - 1].position) : after;
  const position = hasMore ? last : [last, after, BigInt(page.head ?? '0')].reduce((a, b) => (b > a ? b : a));
  return { rows: kept, position, truncated, hasMore };
}
