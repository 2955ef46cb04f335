import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, SelectQueryBuilder } from 'typeorm';
import { Principal } from '../identity/principal';
import { inIndexOrder, queryNamed } from '../database/sql';
import { PublishedEvent } from '../events/domain-event';
import { visibleDelivery, visibleEndpoint } from '../webhooks/endpoint-visibility';
import { PayloadMode } from '../webhooks/webhook.types';
import { SealedSecrets } from '../webhooks/webhooks.service';
import { DeliveryStatus, WebhookDelivery } from './webhook-delivery.entity';
import { endpointReceivesLine } from './endpoint-receives-line.sql';
import { DeliveryLogPartitions } from './delivery-log-partitions';
import { attemptOf, deliveryById, NEW_DELIVERY_IDS, NEW_DELIVERY_UUID, PAYLOAD_DAY, payloadOf } from './delivery-ids';
import { subscriptionFiltersPass, subscriptionStillReceives } from '../event-feed/event-subscriptions.sql';

/** An endpoint that receives one of a batch's events. */
export interface FanOutTarget extends SealedSecrets {
  outbox_id: string;
  endpoint_id: string;
  user_id: string;
  mode: PayloadMode;
  message_history_count: number;
  /** What a first attempt sent at once needs of the endpoint (FirstAttempt in delivery-attempts.service.ts). */
  url: string;
  purpose: string;
}

/** A delivery to create at fan-out; `digest` names its payload among the batch's stored ones. */
export interface NewDelivery {
  endpointId: string;
  userId: string;
  sourceEventId: string;
  lineId: string | null;
  type: string;
  mode: PayloadMode;
  digest: string;
  createdAt: Date;
  /** The relay's span for the event (tracing), null when off. */
  traceParent: string | null;
}

/**
 * The columns a delivery log row shows, and nothing else: the payload is never read to list (a
 * page of 26 verbose rows could otherwise weigh tens of megabytes).
 */
export const DELIVERY_VIEW_COLUMNS = [
  'id',
  'eventId',
  'endpointId',
  'eventType',
  'status',
  'attemptCount',
  'lastStatusCode',
  'lastError',
  'lastAttemptAt',
  'nextAttemptAt',
  'resentFromId',
  'createdAt',
] as const satisfies ReadonlyArray<keyof WebhookDelivery>;

export type DeliveryRow = Pick<WebhookDelivery, (typeof DELIVERY_VIEW_COLUMNS)[number]>;

/** DELIVERY_VIEW_COLUMNS of webhook_deliveries `d` in SQL, under their property names (a DeliveryRow). */
const DELIVERY_ROW_SQL = DELIVERY_VIEW_COLUMNS.map((column) => `d.${column.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)} AS "${column}"`).join(', ');

/** One delivery with what a portal's detail view shows: its payload and envelope fields. */
export interface DeliveryDetailRow extends DeliveryRow {
  recoveredAt: Date | null;
  mode: string;
  eventCreatedAt: Date;
  data: object;
}

/** One HTTP attempt of a delivery, as stored (the response body already cut to 2 KB). */
export interface AttemptDetailRow {
  attemptNumber: number;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  errorKind: string | null;
  responseBody: string | null;
}

/**
 * SQL: the attempt that succeeded, from its delivery `d`'s row (migration SuccessOnDelivery), as an
 * AttemptDetailRow. Valid where `d.success_duration_ms IS NOT NULL`: every other attempt is a
 * webhook_delivery_attempts row.
 */
const SUCCESS_ATTEMPT = `d.attempt_count AS "attemptNumber", d.last_attempt_at AS "attemptedAt", d.success_duration_ms AS "durationMs",
       d.last_status_code AS "statusCode", NULL::text AS "errorKind", d.success_response_body AS "responseBody"`;

/** A copy made by a recovery. */
export interface RecoveredRow {
  id: string;
  endpointId: string;
  /** Whether failed deliveries of the window were left for another call (more than the limit). */
  more: boolean;
  /** The event time of the oldest delivery left, when `more`. */
  nextSince: Date | null;
}

/**
 * SQL of the delivery log: fan-out of committed events into delivery rows (for the relay, on
 * events it holds), and the log's reads and resends, which take the `Principal` and apply the
 * endpoint and delivery visibility rules themselves.
 */
@Injectable()
export class DeliveriesRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly partitions: DeliveryLogPartitions,
  ) {}

  /**
   * Every write of new deliveries goes through here: one that finds no partition for its day (a
   * day dropped by hand) has the days made again at once (DeliveryLogPartitions.repairAfter), and
   * still fails, so its caller tries again (the relay, in a second) or answers an error.
   */
  private writing<T>(write: Promise<T>): Promise<T> {
    return write.catch((error: unknown) => {
      this.partitions.repairAfter(error);
      throw error;
    });
  }

  /**
   * The endpoints that receive each event: active, subscribed to its kind, of its org, and for a
   * line event with the owner's live access to the line and a scope of all channels or that line
   * (endpoint-receives-line.sql.ts, checked again at each attempt's claim); an org-wide event (no
   * line) goes to all-channels endpoints only. The endpoint of an MCP Events subscription also
   * needs its subscription live, its credential still allowing the line, and its filters passed
   * (event-feed/event-subscriptions.sql.ts).
   */
  fanOutTargets(manager: EntityManager, events: PublishedEvent[]): Promise<FanOutTarget[]> {
    return queryNamed(
      manager,
      `SELECT o.id::text AS outbox_id, e.id AS endpoint_id, e.user_id, e.mode, e.message_history_count, e.url, e.purpose,
              e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at, e.signature_version, e.legacy_signature,
              e.signing_key_sealed, e.previous_signing_key_sealed
         FROM unnest(:ids::bigint[], :types::text[], :orgIds::uuid[], :lineIds::uuid[]) AS o(id, type, org_id, line_id)
         JOIN webhook_endpoints e ON e.org_id = o.org_id AND e.status = 'active' AND o.type = ANY (e.events)
        WHERE CASE
          WHEN o.line_id IS NULL THEN e.all_channels
          ELSE ${endpointReceivesLine('e', 'o.line_id')}
        END
          AND ${subscriptionStillReceives('e', 'o.line_id')}
          AND (e.purpose = 'webhook' OR EXISTS (SELECT 1 FROM outbox_events sub_o WHERE sub_o.id = o.id AND ${subscriptionFiltersPass('e', 'sub_o')}))`,
      { ids: events.map((e) => e.id), types: events.map((e) => e.type), orgIds: events.map((e) => e.orgId), lineIds: events.map((e) => e.lineId) },
    );
  }

  /**
   * Stores each distinct payload once in today's partition (or finds it, when a replay or another
   * event stored the same content today: DO UPDATE, not DO NOTHING, so its id is returned), then
   * the deliveries (their id and evt_ id made by the trigger from created_at, delivery-ids.ts).
   * A replayed batch creates nothing twice (the relay hands events on at least once, and
   * events/subscribe replays from a cursor): the unique (source event, endpoint, created_at)
   * index catches a replay in the same transaction (the same created_at), and the NOT EXISTS one
   * made by any other, in the partitions from the day before the event's (a delivery is made after
   * its event occurred). The check is a subplan, an index probe per row: OFFSET 0 keeps
   * PostgreSQL from making it an anti join, which hashed every delivery since yesterday on each
   * batch when the day's statistics were young. Two replays of one event racing across midnight
   * UTC could both insert; the relay fans out an event once, in the transaction that marks it
   * relayed, so only an events/subscribe replay racing the fan-out at midnight could
   * (docs/delivery-log.md).
   */
  insertFannedOut(
    manager: EntityManager,
    payloads: Array<{ digest: string; json: string }>,
    deliveries: NewDelivery[],
  ): Promise<Array<{ id: string; endpoint_id: string; event_id: string; source_event_id: string }>> {
    return this.writing(
      queryNamed(
        manager,
        `WITH payload AS (
             INSERT INTO webhook_payloads (digest, data, created_at)
             SELECT decode(digest, 'hex'), data, ${PAYLOAD_DAY} FROM unnest(:digests::text[], :payloads::json[]) AS p(digest, data)
             ON CONFLICT (digest, created_at) DO UPDATE SET data = webhook_payloads.data
             RETURNING id, encode(digest, 'hex') AS digest)
       INSERT INTO webhook_deliveries
         (id, event_id, created_at, endpoint_id, user_id, source_event_id, line_id, event_type, mode, payload_id, event_created_at, status,
          next_attempt_at, trace_parent)
       SELECT ${NEW_DELIVERY_IDS('x.new_id')}, x.endpoint_id, x.user_id, x.source_event_id, x.line_id, x.event_type, x.mode, payload.id, x.created_at,
              'pending', now(), x.trace_parent
         FROM (SELECT u.*, ${NEW_DELIVERY_UUID} AS new_id
                 FROM unnest(:endpointIds::uuid[], :userIds::uuid[], :sourceEventIds::bigint[], :lineIds::uuid[], :eventTypes::text[],
                             :modes::text[], :deliveryDigests::text[], :createdAts::timestamptz[], :traceParents::text[])
                        AS u(endpoint_id, user_id, source_event_id, line_id, event_type, mode, digest, created_at, trace_parent)) AS x
         JOIN payload ON payload.digest = x.digest
        WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries o
                           WHERE o.source_event_id = x.source_event_id AND o.endpoint_id = x.endpoint_id AND o.resent_from_id IS NULL
                             AND o.created_at >= delivery_log_day(x.created_at) - interval '1 day'
                          OFFSET 0)
       ON CONFLICT (source_event_id, endpoint_id, created_at) WHERE source_event_id IS NOT NULL AND resent_from_id IS NULL DO NOTHING
       RETURNING id, endpoint_id, event_id, source_event_id::text AS source_event_id`,
        {
          digests: payloads.map((p) => p.digest),
          payloads: payloads.map((p) => p.json),
          endpointIds: deliveries.map((d) => d.endpointId),
          userIds: deliveries.map((d) => d.userId),
          sourceEventIds: deliveries.map((d) => d.sourceEventId),
          lineIds: deliveries.map((d) => d.lineId),
          eventTypes: deliveries.map((d) => d.type),
          modes: deliveries.map((d) => d.mode),
          deliveryDigests: deliveries.map((d) => d.digest),
          createdAts: deliveries.map((d) => d.createdAt),
          traceParents: deliveries.map((d) => d.traceParent),
        },
      ),
    );
  }

  /**
   * One page of an endpoint's deliveries that the caller may see, newest first, keyset after
   * `after` (created_at, id); `limit` rows at most. The caller must have been shown the endpoint.
   * Read in index order (inIndexOrder): the endpoint is a prepared statement's parameter, and with
   * many endpoints in the table the generic plan guessed a few hundred rows for it and read a busy
   * endpoint's whole log through a bitmap to sort it (test/mcp/read-plans.e2e-spec.ts). Filtered
   * by a status other than succeeded, the statement's generic plan is used from its first call: it
   * reads webhook_deliveries_endpoint_status_idx, where a plan for the status's value may walk the
   * index of every endpoint's finished deliveries by time (pageQuery).
   */
  page(caller: Principal, endpointId: string, limit: number, after?: { key: string; id: string }, status?: DeliveryStatus): Promise<DeliveryRow[]> {
    return inIndexOrder(this.dataSource, (manager) => this.pageQuery(caller, endpointId, limit, after, status, manager).getMany(), {
      genericPlan: status !== undefined && status !== 'succeeded',
    });
  }

  /**
   * The statement of page(), built but not run; `status` keeps only the deliveries in that status.
   * A status other than `succeeded` also says so as a constant (`status <> 'succeeded'`), which a
   * generic plan needs to read webhook_deliveries_endpoint_status_idx (partial on that condition).
   */
  pageQuery(
    caller: Principal,
    endpointId: string,
    limit: number,
    after?: { key: string; id: string },
    status?: DeliveryStatus,
    manager: EntityManager = this.dataSource.manager,
  ): SelectQueryBuilder<WebhookDelivery> {
    const visible = visibleDelivery(caller);
    const query = manager
      .getRepository(WebhookDelivery)
      .createQueryBuilder('d')
      .select(DELIVERY_VIEW_COLUMNS.map((column) => `d.${column}`))
      .where('d.endpoint_id = :endpointId', { endpointId })
      .andWhere(visible.sql, visible.parameters)
      .orderBy('d.created_at', 'DESC')
      .addOrderBy('d.id', 'DESC')
      .take(limit);
    if (after) query.andWhere('(d.created_at, d.id) < (:key::timestamptz, :id::uuid)', after);
    if (status !== undefined) query.andWhere('d.status = :status', { status });
    if (status !== undefined && status !== 'succeeded') query.andWhere(`d.status <> 'succeeded'`);
    return query;
  }

  /** A delivery of an endpoint the caller may see, and itself visible to the caller; null otherwise. */
  findVisible(caller: Principal, deliveryId: string): Promise<WebhookDelivery | null> {
    const endpoint = visibleEndpoint(caller);
    const delivery = visibleDelivery(caller);
    return this.dataSource
      .getRepository(WebhookDelivery)
      .createQueryBuilder('d')
      .innerJoin('webhook_endpoints', 'e', 'e.id = d.endpoint_id')
      .where(deliveryById('d', ':deliveryId::uuid'), { deliveryId })
      .andWhere(endpoint.sql, endpoint.parameters)
      .andWhere(delivery.sql, delivery.parameters)
      .getOne();
  }

  /**
   * A new pending delivery of the same payload, due now; its attempts join `traceParent`'s trace.
   * The payload is copied into today's partition (shared with today's deliveries of the same
   * content), so that dropping the original's day never leaves the copy without one. Null when
   * the original was deleted since it was read.
   */
  async insertResend(original: WebhookDelivery, traceParent: string | null): Promise<DeliveryRow | null> {
    // A transaction of its own, though one statement: its commit carries the call's audit row (src/audit).
    const [row] = await this.writing(
      this.dataSource.transaction((manager) =>
        queryNamed<DeliveryRow[]>(
          manager,
          `WITH original AS (SELECT d.* FROM webhook_deliveries d WHERE ${deliveryById('d', ':id::uuid')}),
           payload AS (
             INSERT INTO webhook_payloads (digest, data, created_at)
             SELECT p.digest, p.data, ${PAYLOAD_DAY} FROM original d JOIN webhook_payloads p ON ${payloadOf('p', 'd')}
             ON CONFLICT (digest, created_at) DO UPDATE SET data = webhook_payloads.data
             RETURNING id)
       INSERT INTO webhook_deliveries AS d
         (endpoint_id, user_id, source_event_id, line_id, resent_from_id, event_type, mode, payload_id, event_created_at, status, attempt_count,
          next_attempt_at, trace_parent)
       SELECT o.endpoint_id, o.user_id, o.source_event_id, o.line_id, o.id, o.event_type, o.mode, payload.id, now(), 'pending', 0, now(), :traceParent::text
         FROM original o, payload
       RETURNING ${DELIVERY_ROW_SQL}`,
          { id: original.id, traceParent },
        ),
      ),
    );
    return row ?? null;
  }

  /** One delivery the caller may see (as findVisible) with its stored payload; null otherwise. */
  async findDetail(caller: Principal, deliveryId: string): Promise<DeliveryDetailRow | null> {
    const endpoint = visibleEndpoint(caller);
    const delivery = visibleDelivery(caller);
    const [row] = await queryNamed<DeliveryDetailRow[]>(
      this.dataSource.manager,
      `SELECT ${DELIVERY_ROW_SQL}, d.recovered_at AS "recoveredAt", d.mode, d.event_created_at AS "eventCreatedAt", p.data
         FROM webhook_deliveries d
         JOIN webhook_endpoints e ON e.id = d.endpoint_id
         JOIN webhook_payloads p ON ${payloadOf('p', 'd')}
        WHERE ${deliveryById('d', ':deliveryId::uuid')} AND ${endpoint.sql} AND ${delivery.sql}`,
      { deliveryId, ...endpoint.parameters, ...delivery.parameters },
    );
    return row ?? null;
  }

  /**
   * How long the last attempt of each delivery took, by delivery id (deliveries never attempted
   * are absent). Only for ids a visibility-checked read (`page`) answered: it reads no other row.
   * One index scan per id in each table: the (delivery_id, attempt_number) unique of the attempts,
   * and the primary key of the deliveries, whose succeeding attempt is on their row (SUCCESS_ATTEMPT).
   */
  async lastAttemptDurations(deliveryIds: string[]): Promise<Map<string, number>> {
    if (deliveryIds.length === 0) return new Map();
    const rows = await queryNamed<Array<{ deliveryId: string; durationMs: number }>>(
      this.dataSource.manager,
      `SELECT DISTINCT ON (t.delivery_id) t.delivery_id AS "deliveryId", t.duration_ms AS "durationMs"
         FROM (SELECT a.delivery_id, a.attempt_number, a.duration_ms
                 FROM unnest(:deliveryIds::uuid[]) AS x(id)
                 JOIN webhook_delivery_attempts a ON ${attemptOf('a', 'x.id')}
               UNION ALL
               SELECT d.id, d.attempt_count, d.success_duration_ms
                 FROM unnest(:deliveryIds::uuid[]) AS x(id)
                 JOIN webhook_deliveries d ON ${deliveryById('d', 'x.id')}
                WHERE d.success_duration_ms IS NOT NULL) AS t
        ORDER BY t.delivery_id, t.attempt_number DESC`,
      { deliveryIds },
    );
    return new Map(rows.map((r) => [r.deliveryId, r.durationMs]));
  }

  /**
   * The attempts of a delivery the caller may see, oldest first (none for any other delivery):
   * its attempt rows, and the attempt that succeeded, which is on the delivery's row (SUCCESS_ATTEMPT).
   */
  attemptsOf(caller: Principal, deliveryId: string): Promise<AttemptDetailRow[]> {
    const endpoint = visibleEndpoint(caller);
    const delivery = visibleDelivery(caller);
    return queryNamed<AttemptDetailRow[]>(
      this.dataSource.manager,
      `SELECT x.* FROM webhook_deliveries d
         JOIN webhook_endpoints e ON e.id = d.endpoint_id
        CROSS JOIN LATERAL (
              SELECT a.attempt_number AS "attemptNumber", a.attempted_at AS "attemptedAt", a.duration_ms AS "durationMs", a.status_code AS "statusCode",
                     a.error_kind AS "errorKind", a.response_body AS "responseBody"
                FROM webhook_delivery_attempts a WHERE ${attemptOf('a', ':deliveryId::uuid')}
              UNION ALL
              SELECT ${SUCCESS_ATTEMPT} WHERE d.success_duration_ms IS NOT NULL) AS x
        WHERE ${deliveryById('d', ':deliveryId::uuid')} AND ${endpoint.sql} AND ${delivery.sql}
        ORDER BY x."attemptNumber"`,
      { deliveryId, ...endpoint.parameters, ...delivery.parameters },
    );
  }

  /**
   * Recovery in one statement. The endpoint (visible to the caller, and active) is locked against
   * deletion first (FOR KEY SHARE, in an InitPlan, so before any delivery row). Then its `failed`
   * deliveries that the caller sees, whose event time is in [since, until), never recovered and
   * never resent, oldest first, `eventIds.length` of them at most (one more is read, to tell
   * whether any are left and from when). Each is marked recovered_at and copied as resend copies
   * it: the same payload (copied into today's partition, as insertResend), resent_from_id set, a
   * new id and evt_ id (the trigger's), event time now, pending and due now. At most `limit`. Rows another transaction holds (a concurrent recovery) are
   * skipped, and a row that changed since the statement began is tested again (recovered_at IS
   * NULL on its new version), so no delivery is copied twice.
   */
  recoverFailed(caller: Principal, endpointId: string, since: Date, until: Date, limit: number, traceParent: string | null): Promise<RecoveredRow[]> {
    const endpoint = visibleEndpoint(caller);
    const delivery = visibleDelivery(caller);
    // A transaction of its own, though one statement: its commit carries the call's audit row (src/audit).
    return this.writing(
      this.dataSource.transaction((manager) =>
        queryNamed<RecoveredRow[]>(
          manager,
          `WITH endpoint AS (
             SELECT e.id FROM webhook_endpoints e
              WHERE e.id = :endpointId AND e.status = 'active' AND ${endpoint.sql}
                FOR KEY SHARE),
           picked AS (
             SELECT d.id, d.event_created_at FROM webhook_deliveries d
              WHERE d.endpoint_id = (SELECT id FROM endpoint) AND d.status = 'failed' AND d.recovered_at IS NULL
                AND d.event_created_at >= :since AND d.event_created_at < :until AND ${delivery.sql}
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries r WHERE r.resent_from_id = d.id)
              ORDER BY d.event_created_at, d.id
              LIMIT :limit::int + 1
                FOR UPDATE OF d SKIP LOCKED),
           numbered AS (SELECT id, event_created_at, row_number() OVER (ORDER BY event_created_at, id) AS n FROM picked),
           marked AS (
             UPDATE webhook_deliveries d SET recovered_at = now(), updated_at = now()
               FROM numbered
              WHERE ${deliveryById('d', 'numbered.id')} AND numbered.n <= :limit::int
             RETURNING d.id, d.endpoint_id, d.user_id, d.source_event_id, d.line_id, d.event_type, d.mode, d.payload_id, d.created_at),
           original_payload AS (SELECT DISTINCT ON (p.id) p.id, p.digest, p.data FROM marked d JOIN webhook_payloads p ON ${payloadOf('p', 'd')}),
           payload AS (
             INSERT INTO webhook_payloads (digest, data, created_at)
             SELECT DISTINCT ON (digest) digest, data, ${PAYLOAD_DAY} FROM original_payload
             ON CONFLICT (digest, created_at) DO UPDATE SET data = webhook_payloads.data
             RETURNING id, digest),
           copy AS (
             INSERT INTO webhook_deliveries
               (endpoint_id, user_id, source_event_id, line_id, resent_from_id, event_type, mode, payload_id, event_created_at, status,
                attempt_count, next_attempt_at, trace_parent)
             SELECT m.endpoint_id, m.user_id, m.source_event_id, m.line_id, m.id, m.event_type, m.mode, payload.id, now(), 'pending', 0, now(),
                    :traceParent::text
               FROM marked m JOIN original_payload op ON op.id = m.payload_id JOIN payload ON payload.digest = op.digest
             RETURNING id, endpoint_id)
       SELECT copy.id, copy.endpoint_id AS "endpointId", left_over.event_created_at IS NOT NULL AS more, left_over.event_created_at AS "nextSince"
         FROM copy
         LEFT JOIN (SELECT event_created_at FROM numbered WHERE n = :limit::int + 1) AS left_over ON TRUE`,
          { endpointId, since, until, limit, traceParent, ...endpoint.parameters, ...delivery.parameters },
        ),
      ),
    );
  }
}
