import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, SelectQueryBuilder } from 'typeorm';
import { Principal } from '../identity/principal';
import { inIndexOrder, queryNamed } from '../database/sql';
import { PublishedEvent } from '../events/domain-event';
import { visibleDelivery, visibleEndpoint } from '../webhooks/endpoint-visibility';
import { PayloadMode } from '../webhooks/webhook.types';
import { DeliveryStatus, WebhookDelivery } from './webhook-delivery.entity';
import { endpointReceivesLine } from './endpoint-receives-line.sql';
import { subscriptionFiltersPass, subscriptionStillReceives } from '../event-feed/event-subscriptions.sql';

/** An endpoint that receives one of a batch's events. */
export interface FanOutTarget {
  outbox_id: string;
  endpoint_id: string;
  user_id: string;
  mode: PayloadMode;
  message_history_count: number;
}

/** A delivery to create at fan-out; `digest` names its payload among the batch's stored ones. */
export interface NewDelivery {
  eventId: string;
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
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

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
      `SELECT o.id::text AS outbox_id, e.id AS endpoint_id, e.user_id, e.mode, e.message_history_count
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
   * Stores each distinct payload once (or finds it, when a replay or another event stored the
   * same content before: DO UPDATE, not DO NOTHING, so its id is returned), then the deliveries;
   * the unique (source event, endpoint) index makes a replayed batch create nothing twice.
   */
  insertFannedOut(
    manager: EntityManager,
    payloads: Array<{ digest: string; json: string }>,
    deliveries: NewDelivery[],
  ): Promise<Array<{ id: string; endpoint_id: string }>> {
    return queryNamed(
      manager,
      `WITH payload AS (
             INSERT INTO webhook_payloads (digest, data)
             SELECT decode(digest, 'hex'), data FROM unnest(:digests::text[], :payloads::json[]) AS p(digest, data)
             ON CONFLICT (digest) DO UPDATE SET data = webhook_payloads.data
             RETURNING id, encode(digest, 'hex') AS digest)
       INSERT INTO webhook_deliveries
         (event_id, endpoint_id, user_id, source_event_id, line_id, event_type, mode, payload_id, event_created_at, status, next_attempt_at, trace_parent)
       SELECT x.event_id, x.endpoint_id, x.user_id, x.source_event_id, x.line_id, x.event_type, x.mode, payload.id, x.created_at, 'pending', now(), x.trace_parent
         FROM unnest(:eventIds::text[], :endpointIds::uuid[], :userIds::uuid[], :sourceEventIds::bigint[], :lineIds::uuid[], :eventTypes::text[],
                     :modes::text[], :deliveryDigests::text[], :createdAts::timestamptz[], :traceParents::text[])
                AS x(event_id, endpoint_id, user_id, source_event_id, line_id, event_type, mode, digest, created_at, trace_parent)
         JOIN payload ON payload.digest = x.digest
       ON CONFLICT (source_event_id, endpoint_id) WHERE source_event_id IS NOT NULL AND resent_from_id IS NULL DO NOTHING
       RETURNING id, endpoint_id`,
      {
        digests: payloads.map((p) => p.digest),
        payloads: payloads.map((p) => p.json),
        eventIds: deliveries.map((d) => d.eventId),
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
      .where('d.id = :deliveryId', { deliveryId })
      .andWhere(endpoint.sql, endpoint.parameters)
      .andWhere(delivery.sql, delivery.parameters)
      .getOne();
  }

  /** A new pending delivery of the same stored payload (nothing is copied), due now; its attempts join `traceParent`'s trace. */
  insertResend(original: WebhookDelivery, eventId: string, traceParent: string | null): Promise<WebhookDelivery> {
    const repo = this.dataSource.getRepository(WebhookDelivery);
    return repo.save(
      repo.create({
        eventId,
        endpointId: original.endpointId,
        userId: original.userId,
        sourceEventId: original.sourceEventId,
        lineId: original.lineId,
        resentFromId: original.id,
        eventType: original.eventType,
        mode: original.mode,
        payloadId: original.payloadId,
        eventCreatedAt: new Date(),
        status: 'pending',
        attemptCount: 0,
        nextAttemptAt: new Date(),
        traceParent,
      }),
    );
  }

  /** One delivery the caller may see (as findVisible) with its stored payload; null otherwise. */
  async findDetail(caller: Principal, deliveryId: string): Promise<DeliveryDetailRow | null> {
    const endpoint = visibleEndpoint(caller);
    const delivery = visibleDelivery(caller);
    const [row] = await queryNamed<DeliveryDetailRow[]>(
      this.dataSource.manager,
      `SELECT d.id, d.event_id AS "eventId", d.endpoint_id AS "endpointId", d.event_type AS "eventType", d.status, d.attempt_count AS "attemptCount",
              d.last_status_code AS "lastStatusCode", d.last_error AS "lastError", d.last_attempt_at AS "lastAttemptAt",
              d.next_attempt_at AS "nextAttemptAt", d.resent_from_id AS "resentFromId", d.recovered_at AS "recoveredAt", d.created_at AS "createdAt",
              d.mode, d.event_created_at AS "eventCreatedAt", p.data
         FROM webhook_deliveries d
         JOIN webhook_endpoints e ON e.id = d.endpoint_id
         JOIN webhook_payloads p ON p.id = d.payload_id
        WHERE d.id = :deliveryId AND ${endpoint.sql} AND ${delivery.sql}`,
      { deliveryId, ...endpoint.parameters, ...delivery.parameters },
    );
    return row ?? null;
  }

  /**
   * How long the last attempt of each delivery took, by delivery id (deliveries never attempted
   * are absent). Only for ids a visibility-checked read (`page`) answered: it reads no other row.
   * One index scan per id (the (delivery_id, attempt_number) unique).
   */
  async lastAttemptDurations(deliveryIds: string[]): Promise<Map<string, number>> {
    if (deliveryIds.length === 0) return new Map();
    const rows = await queryNamed<Array<{ deliveryId: string; durationMs: number }>>(
      this.dataSource.manager,
      `SELECT DISTINCT ON (a.delivery_id) a.delivery_id AS "deliveryId", a.duration_ms AS "durationMs"
         FROM webhook_delivery_attempts a
        WHERE a.delivery_id = ANY(:deliveryIds::uuid[])
        ORDER BY a.delivery_id, a.attempt_number DESC`,
      { deliveryIds },
    );
    return new Map(rows.map((r) => [r.deliveryId, r.durationMs]));
  }

  /** The attempts of a delivery the caller may see, oldest first (none for any other delivery). */
  attemptsOf(caller: Principal, deliveryId: string): Promise<AttemptDetailRow[]> {
    const endpoint = visibleEndpoint(caller);
    const delivery = visibleDelivery(caller);
    return queryNamed<AttemptDetailRow[]>(
      this.dataSource.manager,
      `SELECT a.attempt_number AS "attemptNumber", a.attempted_at AS "attemptedAt", a.duration_ms AS "durationMs", a.status_code AS "statusCode",
              a.error_kind AS "errorKind", a.response_body AS "responseBody"
         FROM webhook_delivery_attempts a
         JOIN webhook_deliveries d ON d.id = a.delivery_id
         JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE a.delivery_id = :deliveryId AND ${endpoint.sql} AND ${delivery.sql}
        ORDER BY a.attempt_number`,
      { deliveryId, ...endpoint.parameters, ...delivery.parameters },
    );
  }

  /**
   * Recovery in one statement. The endpoint (visible to the caller, and active) is locked against
   * deletion first (FOR KEY SHARE, in an InitPlan, so before any delivery row). Then its `failed`
   * deliveries that the caller sees, whose event time is in [since, until), never recovered and
   * never resent, oldest first, `eventIds.length` of them at most (one more is read, to tell
   * whether any are left and from when). Each is marked recovered_at and copied as resend copies
   * it: the same payload, resent_from_id set, a new evt_ id (from `eventIds`, in order), event
   * time now, pending and due now. Rows another transaction holds (a concurrent recovery) are
   * skipped, and a row that changed since the statement began is tested again (recovered_at IS
   * NULL on its new version), so no delivery is copied twice.
   */
  recoverFailed(caller: Principal, endpointId: string, since: Date, until: Date, eventIds: string[], traceParent: string | null): Promise<RecoveredRow[]> {
    const endpoint = visibleEndpoint(caller);
    const delivery = visibleDelivery(caller);
    // A transaction of its own, though one statement: its commit carries the call's audit row (src/audit).
    return this.dataSource.transaction((manager) =>
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
              LIMIT cardinality(:eventIds::text[]) + 1
                FOR UPDATE OF d SKIP LOCKED),
           numbered AS (SELECT id, event_created_at, row_number() OVER (ORDER BY event_created_at, id) AS n FROM picked),
           marked AS (
             UPDATE webhook_deliveries d SET recovered_at = now(), updated_at = now()
               FROM numbered
              WHERE d.id = numbered.id AND numbered.n <= cardinality(:eventIds::text[])
             RETURNING d.id, d.endpoint_id, d.user_id, d.source_event_id, d.line_id, d.event_type, d.mode, d.payload_id, numbered.n),
           copy AS (
             INSERT INTO webhook_deliveries
               (event_id, endpoint_id, user_id, source_event_id, line_id, resent_from_id, event_type, mode, payload_id, event_created_at, status,
                attempt_count, next_attempt_at, trace_parent)
             SELECT x.event_id, m.endpoint_id, m.user_id, m.source_event_id, m.line_id, m.id, m.event_type, m.mode, m.payload_id, now(), 'pending', 0, now(),
                    :traceParent::text
               FROM marked m JOIN unnest(:eventIds::text[]) WITH ORDINALITY AS x(event_id, n) ON x.n = m.n
             RETURNING id, endpoint_id)
       SELECT copy.id, copy.endpoint_id AS "endpointId", left_over.event_created_at IS NOT NULL AS more, left_over.event_created_at AS "nextSince"
         FROM copy
         LEFT JOIN (SELECT event_created_at FROM numbered WHERE n = cardinality(:eventIds::text[]) + 1) AS left_over ON TRUE`,
        { endpointId, since, until, eventIds, traceParent, ...endpoint.parameters, ...delivery.parameters },
      ),
    );
  }
}
