import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../identity/principal';
import { queryNamed } from '../database/sql';
import { EventKind } from '../events/event-kinds';
import { visibleDelivery } from '../webhooks/endpoint-visibility';
import { FeedFilter } from './event-descriptors';
import { feedFilterSql } from './feed-filters.sql';

export interface FeedRow {
  position: string;
  id: string;
  type: EventKind;
  /** The event's line; null for an org-wide event. */
  line_id: string | null;
  data: object;
  occurred_at: Date;
}

export interface FeedPage {
  rows: FeedRow[];
  /** The highest position of the caller's org that was visible to the statement (or the horizon, if higher); null when neither exists. */
  head: string | null;
  /** The highest position retention has deleted. */
  horizon: string;
}

/** Which events a read takes: after a position, of one kind, narrowed by the subscription's filters. */
export interface FeedQuery {
  after: bigint;
  /** null: every kind. */
  kind: EventKind | null;
  filters: Partial<Record<FeedFilter, string>>;
  limit: number;
}

const FILTER_PARAMETER: Record<FeedFilter, string> = { line: 'filterLine', thread: 'filterThread', direction: 'filterDirection', label: 'filterLabel' };

/**
 * Reads of the committed event log for a caller (docs/decisions.md, "Event feed positions"). Every
 * read carries the caller's scope, decided now, not when the event was written: the rule that
 * decides which webhook deliveries a caller sees (webhooks/endpoint-visibility.ts, visibleDelivery:
 * events of lines the caller holds now; org-wide events only for a caller with all channels), the
 * same rule fan-out applies to an endpoint's owner.
 */
@Injectable()
export class EventFeedRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * One statement, so one snapshot: the caller's next `limit` events after `after`, and the org's
   * head in the same snapshot (every position up to it is visible or will never be: positions are
   * drawn in commit order), so a cursor moved to the head skips nothing that commits later.
   * `manager`: the transaction to read in (events/subscribe reads under the fan-out lock).
   */
  async read(caller: Principal, query: FeedQuery, manager: EntityManager = this.dataSource.manager): Promise<FeedPage> {
    const scope = visibleDelivery(caller, 'o');
    const filters = (Object.keys(query.filters) as FeedFilter[]).filter((f) => query.filters[f] !== undefined);
    const parameters: Record<string, unknown> = {
      ...scope.parameters,
      orgId: caller.orgId,
      after: query.after.toString(),
      kind: query.kind,
      limit: query.limit,
    };
    for (const filter of filters) parameters[FILTER_PARAMETER[filter]] = query.filters[filter];
    const where = [
      `o.org_id = :orgId`,
      `o.feed_position > :after::bigint`,
      ...(query.kind ? ['o.type = :kind'] : []),
      scope.sql,
      ...filters.map((f) => feedFilterSql(f, 'o', `:${FILTER_PARAMETER[f]}`)),
    ];
    // The aggregate orders by the position as a number: `position` is text there, and "100" sorts before "99".
    const [row] = await queryNamed<Array<{ events: FeedRow[] | null; head: string | null; horizon: string }>>(
      manager,
      `SELECT (SELECT json_agg(e ORDER BY e.position::bigint) FROM (
                 SELECT o.feed_position::text AS position, o.id::text AS id, o.type, o.line_id, o.data, o.occurred_at
                   FROM outbox_events o WHERE ${where.join(' AND ')}
                  ORDER BY o.feed_position LIMIT :limit) e) AS events,
              GREATEST((SELECT max(feed_position) FROM outbox_events WHERE org_id = :orgId AND feed_position IS NOT NULL), h.deleted_through)::text AS head,
              h.deleted_through::text AS horizon
         FROM outbox_feed_horizon h`,
      parameters,
    );
    const rows = (row.events ?? []).map((e) => ({ ...e, occurred_at: new Date(e.occurred_at) }));
    return { rows, head: row.head, horizon: row.horizon };
  }
}
