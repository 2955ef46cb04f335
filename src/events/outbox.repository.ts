import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { deleteInBatches } from '../database/delete-in-batches';
import { ProbeDatabase } from '../health/readiness-checks';
import { queryNamed } from '../database/sql';
import { DomainEvent, KeyedEvent, PublishedEvent, SqlEventData } from './domain-event';
import { EventKind } from './event-kinds';

/** The parameters insertFrom names itself, which the data statement's may not. */
const INSERT_FROM_PARAMETERS = new Set(['types', 'orgIds', 'lineIds', 'dataKeys', 'traceParents']);

/** Arbitrary constant naming the lock under which the relay draws feed positions (migrate.ts has another). */
const FEED_POSITION_LOCK_KEY = 727_100_043;

/** The NOTIFY channel that wakes the relay when events were committed. */
export const OUTBOX_CHANNEL = 'outbox_events';

/**
 * SQL of the transactional outbox: events are written in the transaction of the change they
 * report, claimed in batches by the relay (FOR UPDATE SKIP LOCKED, so replicas share the work),
 * marked relayed, and deleted after their retention.
 */
@Injectable()
export class OutboxRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Writes events in the caller's transaction, in their order; answers their sequence numbers. The
   * data go as one JSON array, not as a json[] parameter: an array literal would have every quote
   * and backslash of every event escaped again (an inbound message's data, with its thread's recent
   * messages, is tens of kilobytes).
   */
  async insert(manager: EntityManager, events: DomainEvent[]): Promise<string[]> {
    const rows = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO outbox_events (type, org_id, line_id, data, trace_parent)
       SELECT * FROM unnest(:types::text[], :orgIds::uuid[], :lineIds::uuid[],
                            ARRAY(SELECT d FROM json_array_elements(:data::json) WITH ORDINALITY AS x(d, n) ORDER BY n), :traceParents::text[])
       RETURNING id`,
      {
        traceParents: events.map((e) => e.traceParent ?? null),
        types: events.map((e) => e.type),
        orgIds: events.map((e) => e.orgId),
        lineIds: events.map((e) => e.lineId),
        data: JSON.stringify(events.map((e) => e.data)),
      },
    );
    return rows.map((r) => String(r.id));
  }

  /**
   * Writes events whose data a statement builds (SqlEventData), in their order, in one statement:
   * the data go from that statement's rows into the outbox without leaving the database. Answers
   * their sequence numbers; throws when an event's data row is missing.
   */
  async insertFrom(manager: EntityManager, events: KeyedEvent[], source: SqlEventData): Promise<string[]> {
    const clash = Object.keys(source.parameters).find((name) => INSERT_FROM_PARAMETERS.has(name));
    if (clash) throw new Error(`the event data statement may not name a parameter ${clash}`);
    const rows = await queryNamed<Array<{ id: string }>>(
      manager,
      // The data statement runs once (MATERIALIZED: inlined, a message's data were built once for
      // each of its events). Ids are drawn as rows reach the insert, so the events drive a nested
      // loop in their order (OFFSET 0 keeps the lookup a subquery the planner cannot turn into a
      // hash join), each taking its data row; no sort is needed.
      `WITH source AS MATERIALIZED (${source.sql})
       INSERT INTO outbox_events (type, org_id, line_id, data, trace_parent)
       SELECT e.type, e.org_id, e.line_id, d.data, e.trace_parent
         FROM unnest(:types::text[], :orgIds::uuid[], :lineIds::uuid[], :dataKeys::text[], :traceParents::text[])
                AS e(type, org_id, line_id, data_key, trace_parent)
        CROSS JOIN LATERAL (SELECT s.data FROM source s WHERE s.key = e.data_key OFFSET 0) d
       RETURNING id`,
      {
        ...source.parameters,
        types: events.map((e) => e.type),
        orgIds: events.map((e) => e.orgId),
        lineIds: events.map((e) => e.lineId),
        dataKeys: events.map((e) => e.dataKey),
        traceParents: events.map((e) => e.traceParent ?? null),
      },
    );
    if (rows.length !== events.length) {
      const keys = [...new Set(events.map((e) => e.dataKey))].join(', ');
      throw new Error(`no event data for some of ${keys}: ${rows.length} of ${events.length} events written`);
    }
    return rows.map((r) => String(r.id));
  }

  /** Wakes the relay. Two statements in one simple query run as one implicit transaction. */
  async notify(): Promise<void> {
    await this.dataSource.query(`SET LOCAL synchronous_commit = off; SELECT pg_notify('${OUTBOX_CHANNEL}', '')`);
  }

  /** Takes the oldest events not relayed yet, skipping those another relay holds. */
  async claimBatch(manager: EntityManager, limit: number): Promise<PublishedEvent[]> {
    const rows = await queryNamed<
      Array<{ id: string; type: EventKind; org_id: string; line_id: string | null; data: object; occurred_at: Date; trace_parent: string | null }>
    >(
      manager,
      `SELECT id, type, org_id, line_id, data, occurred_at, trace_parent FROM outbox_events
        WHERE relayed_at IS NULL ORDER BY id LIMIT :limit FOR UPDATE SKIP LOCKED`,
      { limit },
    );
    return rows.map(
      (r) =>
        ({
          id: String(r.id),
          type: r.type,
          orgId: r.org_id,
          lineId: r.line_id,
          data: r.data,
          occurredAt: r.occurred_at,
          traceParent: r.trace_parent,
        }) as PublishedEvent,
    );
  }

  /**
   * Marks the claimed events relayed and gives each its position in the committed event log, as
   * the last statement of the claiming transaction (docs/decisions.md, "Event feed positions"):
   * the transaction-scoped advisory lock is held from here to the commit, so two relays draw
   * positions one after the other and each one's positions are visible (committed, or gone with
   * a rollback) before the next draws any. A reader of `feed_position > p` therefore never sees
   * p + 1 before p, and the lock is held only for this statement and the commit.
   */
  async markRelayed(manager: EntityManager, ids: string[]): Promise<void> {
    await queryNamed(manager, 'SELECT pg_advisory_xact_lock(:key)', { key: FEED_POSITION_LOCK_KEY });
    await queryNamed(
      manager,
      `UPDATE outbox_events o SET relayed_at = now(), feed_position = n.position
         FROM (SELECT id, nextval('outbox_feed_position_seq') AS position
                 FROM (SELECT unnest(:ids::bigint[]) AS id ORDER BY 1) ordered) n
        WHERE o.id = n.id`,
      { ids },
    );
  }

  /** How many committed events wait for the relay, and the oldest one's age (metrics). */
  async pending(): Promise<{ count: number; oldestAgeSeconds: number }> {
    const [row] = await this.dataSource.query<Array<{ count: number; age: number | null }>>(
      `SELECT count(*)::int AS count, extract(epoch FROM now() - min(occurred_at))::float8 AS age
         FROM outbox_events WHERE relayed_at IS NULL`,
    );
    return { count: row.count, oldestAgeSeconds: row.age ?? 0 };
  }

  /**
   * Age in seconds of the oldest event waiting for the relay, or null when none waits (/ready). It
   * reads through `database`, /ready's own connection, and walks the pending index to its first entry.
   */
  async oldestPendingAgeSeconds(database: ProbeDatabase): Promise<number | null> {
    const [row] = await database.query<{ age: number }>(
      `SELECT extract(epoch FROM now() - occurred_at)::float8 AS age FROM outbox_events WHERE relayed_at IS NULL ORDER BY id LIMIT 1`,
    );
    return row ? row.age : null;
  }

  /**
   * Deletes events relayed more than `retentionMs` ago, in small batches; answers how many. Each
   * batch raises the feed's horizon (outbox_feed_horizon) to the highest position it deletes, in
   * the same statement: a feed cursor behind it may have lost events and is answered as truncated.
   */
  async deleteRelayedBefore(retentionMs: number, options: { batchSize: number; pauseMs: number }): Promise<number> {
    const { rows } = await deleteInBatches(
      this.dataSource,
      `WITH batch AS MATERIALIZED (
              SELECT id, feed_position FROM outbox_events WHERE relayed_at < now() - $1::interval
               ORDER BY relayed_at LIMIT $2 FOR UPDATE SKIP LOCKED),
            horizon AS (
              UPDATE outbox_feed_horizon SET deleted_through = GREATEST(deleted_through, (SELECT max(feed_position) FROM batch))
               WHERE EXISTS (SELECT 1 FROM batch))
       DELETE FROM outbox_events WHERE id IN (SELECT id FROM batch)`,
      [`${retentionMs} milliseconds`],
      options,
    );
    return rows;
  }
}
