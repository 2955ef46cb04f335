import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ProbePool } from '../database/probe-pool';
import { COMMIT_ASYNC, plannedPerCall, queryNamed } from '../database/sql';
import { SealedSecrets } from '../webhooks/webhooks.service';
import { EndpointStatus } from '../webhooks/webhook.types';
import { endpointReceivesLine } from './endpoint-receives-line.sql';
import { subscriptionStillReceives } from '../event-feed/event-subscriptions.sql';
import { subscriptionWatermark } from './waiting-position.sql';
import { inFailingRun } from '../webhooks/failing-runs.sql';
import { isUndefinedTable } from '../common/errors';
import { byDeliveryLogGroup, createdAtOfId, DeliveryLogGroup, deliveryById, deliveryIn, payloadIn } from './delivery-ids';

/** A claimed attempt: its delivery, its payload and what sending needs of its endpoint. */
export interface ClaimedRow extends SealedSecrets {
  id: string;
  attempt_count: number;
  event_id: string;
  endpoint_id: string;
  /** The endpoint's owner: whom its attachment links are minted for. */
  user_id: string;
  event_type: string;
  mode: string;
  data: object;
  event_created_at: Date;
  trace_parent: string | null;
  url: string;
  status: EndpointStatus;
  /** The outbox event the delivery came from (null for none). */
  source_event_id: string | null;
  /** For the endpoint of an MCP Events subscription: its id, its cursors' scope, and the event's feed position (null once retention removed the event). */
  subscription_id: string | null;
  subscription_scope: string | null;
  feed_position: string | null;
  /**
   * For a subscription's delivery: the safe-to-persist watermark, just before the lowest position
   * whose delivery to the endpoint still waits, other than this one; the org's feed head when none waits.
   */
  watermark: string | null;
}

/**
 * What a claim answers for each attempt it took (`refused: false`) or cancelled instead because
 * its endpoint no longer receives the event's line (`refused: true`: nothing of it is to be sent).
 */
export type ClaimResult = ClaimedRow & { refused: boolean };

/**
 * The statuses of a delivery that waits for an attempt, as a parameter of the statements prepared
 * on the probe pool: a literal list would let their generic plan prove the partial index of waiting
 * deliveries (webhook_deliveries_due_idx) usable, and read every waiting delivery to find the batch's.
 */
const WAITING = ['pending', 'retrying'];

/** The last_error of a delivery cancelled at its claim because its endpoint no longer receives the event's line. */
const REFUSED_ERROR =
  "not sent: the endpoint no longer receives this line's events (its owner's access to the line ended, or the line left its scope), " +
  'or its MCP Events subscription expired or its credential lost access';

/**
 * SQL: the partition key of an attempt row of the input's delivery (its `created_at`, as
 * attemptKeyOf in delivery-ids.ts gives it): the delivery's created_at, or '-infinity' for a
 * delivery from before the migration (the default its old attempts took).
 */
const ATTEMPT_KEY = `coalesce(created_at, '-infinity')`;

/**
 * For a statement that named a day's partition: when retention dropped that day meanwhile, its
 * deliveries are gone, and the statement is answered as if it found none of them (`none`).
 * Retention keeps every day with a waiting delivery, so only a late duplicate meets this.
 */
function goneWithItsDay<T>(none: T): (error: unknown) => T {
  return (error) => {
    if (isUndefinedTable(error)) return none;
    throw error;
  };
}

/** A 2xx answer to record. */
export interface SuccessRow {
  deliveryId: string;
  attempt: number;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number;
  responseBody: string;
  endpointId: string;
}

/** What a record of successes answers: the deliveries recorded, and which of their endpoints were in a failing run. */
export interface RecordedSuccesses {
  recorded: Set<string>;
  inFailingRun: Set<string>;
}

/** A failed attempt to record, with the delivery's next state. */
export interface FailureRow {
  deliveryId: string;
  attempt: number;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  errorKind: string | null;
  responseBody: string | null;
  status: 'retrying' | 'failed';
  lastError: string;
  nextAttemptAt: Date | null;
}

/**
 * The delivery worker's SQL: claiming attempts, recording their outcomes, cancelling and
 * sweeping. The worker acts for the system on delivery ids it holds (never for a caller), and
 * concurrent attempts share statements (MicroBatcher): one claim, one success statement, one
 * failure transaction per batch (docs/PERFORMANCE.md, change 1).
 */
@Injectable()
export class DeliveryAttemptsRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly probes: ProbePool,
  ) {}

  /** delivery_log_history_until() in epoch ms: a constant of the migration, read once. */
  private historyUntil?: Promise<number>;

  /**
   * `items` grouped by the partitions their deliveries are in (delivery-ids.ts). The batch
   * statements below name those partitions rather than the partitioned tables: planned on every
   * call, a statement on the parents plans each of their partitions (the delivery log's days
   * ahead, both ways the claim reads it): 21 ms of planning per claim against 3.6 ms on one table
   * (docs/PERFORMANCE.md, change 24). A batch is of one day but across midnight.
   */
  private async byDay<T>(items: T[], deliveryIdOf: (item: T) => string): Promise<Array<[DeliveryLogGroup, T[]]>> {
    if (items.length === 0) return [];
    this.historyUntil ??= this.dataSource.query(`SELECT delivery_log_history_until() AS until`).then(
      ([row]: Array<{ until: Date }>) => new Date(row.until).getTime(),
      (error: unknown) => {
        this.historyUntil = undefined;
        throw error;
      },
    );
    return byDeliveryLogGroup(items, deliveryIdOf, await this.historyUntil);
  }

  /** Attempt `attempt` was past the last one allowed (swept after its worker died): the delivery fails. */
  async failInterruptedLast(deliveryId: string, attempt: number): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, updated_at = now(),
              last_error = COALESCE(last_error, 'the last attempt was interrupted')
        WHERE ${deliveryById('webhook_deliveries', ':deliveryId::uuid')} AND attempt_count = :attempt - 1 AND status IN ('pending', 'retrying')`,
      { deliveryId, attempt },
    );
  }

  async cancel(deliveryId: string): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL WHERE ${deliveryById('webhook_deliveries', ':deliveryId::uuid')}`,
      { deliveryId },
    );
  }

  /** Every waiting delivery of an endpoint, cancelled in the caller's transaction (the one that disables it). */
  async cancelWaiting(manager: EntityManager, endpointId: string): Promise<void> {
    await queryNamed(
      manager,
      `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, updated_at = now()
        WHERE endpoint_id = :endpointId AND status IN ('pending', 'retrying')`,
      { endpointId },
    );
  }

  /**
   * Takes attempts in one UPDATE: each row whose previous attempt is the one before, still due.
   * A row another transaction is changing (a disable cancelling it, a duplicate job's claim) is
   * skipped rather than waited for: waiting on rows in batch order could deadlock with a disable,
   * which takes them in its own order. A skipped row that is still due is swept. The claim
   * writes only columns outside every index (the lease has its own), so PostgreSQL can keep the
   * new row version on its page without touching an index (a HOT update).
   *
   * A delivery of an event on a line is sent only while its endpoint still receives that line
   * (endpoint-receives-line.sql.ts, the rule fan-out chose it by): its owner's access to the line
   * can end, or the endpoint's scope narrow, while it waits for a retry, and its URL can have been
   * changed since. Such a row is not taken but cancelled for good, with REFUSED_ERROR, by the same
   * UPDATE (`refused: true` in the answer; its attempt count stays). A delivery of no line
   * (contact.merged) is not held to it. The endpoint of an MCP Events subscription is held, line
   * or not, to its subscription being live and its credential's access (subscriptionStillReceives),
   * and its body's cursor is a watermark the claim reads: just before the lowest position whose
   * delivery to the endpoint still waits, else the feed's head (subscriptionWatermark).
   *
   * The claims and the record of successes commit asynchronously (COMMIT_ASYNC here; the probe
   * pool's connections for claimFirst() and recordSuccesses()): a PostgreSQL crash
   * can lose their last few hundred milliseconds, and then the delivery is still due with the
   * attempt count it had, so the sweep sends it again with the same evt_ id and webhook-id (at
   * least once, as every retry). Nothing else depends on them having reached the disk. That
   * halved the WAL flushes of scenario 1 (docs/PERFORMANCE.md, change 27). Failures, which change
   * an endpoint's health, and fan-out, whose lost rows would be made again with new ids, wait.
   */
  async claim(items: Array<{ deliveryId: string; attempt: number }>, now: Date, leaseUntil: Date): Promise<ClaimResult[]> {
    const groups = await this.byDay(items, (item) => item.deliveryId);
    const answers = await Promise.all(groups.map(([group, grouped]) => this.claimIn(group, grouped, now, leaseUntil).catch(goneWithItsDay([]))));
    return answers.flat();
  }

  /** claim() of deliveries all in `group`. */
  private async claimIn(group: DeliveryLogGroup, items: Array<{ deliveryId: string; attempt: number }>, now: Date, leaseUntil: Date): Promise<ClaimResult[]> {
    const [rows] = await queryNamed<[ClaimResult[], number]>(
      this.dataSource.manager,
      plannedPerCall(`WITH due AS (
             SELECT d.id, d.created_at, x.attempt, p.data,
                    (d.line_id IS NULL OR ${endpointReceivesLine('e', 'd.line_id')}) AND ${subscriptionStillReceives('e', 'd.line_id')} AS may_send,
                    e.user_id, e.url, e.status AS endpoint_status, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
                    e.signature_version, e.legacy_signature, e.signing_key_sealed, e.previous_signing_key_sealed,
                    sub.id AS subscription_id, sub.scope AS subscription_scope, ob.feed_position AS feed_position,
                    CASE WHEN ob.feed_position IS NOT NULL THEN ${subscriptionWatermark('d.endpoint_id', 'e.org_id', 'd.id')} END AS watermark
               FROM ${COMMIT_ASYNC}, ${group.deliveries} d
               JOIN unnest(:deliveryIds::uuid[], :createdAts::timestamptz[], :attempts::int[]) AS x(id, created_at, attempt)
                 ON ${deliveryIn(group, 'd', 'x.id', 'x.created_at')}
               JOIN LATERAL ${payloadIn(group, 'd')} p ON TRUE
               JOIN webhook_endpoints e ON e.id = d.endpoint_id
               LEFT JOIN event_subscriptions sub ON sub.endpoint_id = e.id
               LEFT JOIN outbox_events ob ON sub.id IS NOT NULL AND ob.id = d.source_event_id
              WHERE d.attempt_count = x.attempt - 1 AND d.status IN ('pending', 'retrying')
                FOR NO KEY UPDATE OF d SKIP LOCKED)
       UPDATE ${group.deliveries} d
          SET attempt_count = CASE WHEN due.may_send THEN due.attempt ELSE d.attempt_count END,
              last_attempt_at = CASE WHEN due.may_send THEN :now ELSE d.last_attempt_at END,
              lease_until = CASE WHEN due.may_send THEN :leaseUntil::timestamptz END,
              -- Unchanged when sent (so the claim stays a HOT update); a refused delivery ends here.
              status = CASE WHEN due.may_send THEN d.status ELSE 'cancelled' END,
              next_attempt_at = CASE WHEN due.may_send THEN d.next_attempt_at END,
              last_error = CASE WHEN due.may_send THEN d.last_error ELSE :refusedError END,
              updated_at = now()
         FROM due
        WHERE ${deliveryIn(group, 'd', 'due.id', 'due.created_at')}
        RETURNING d.id, due.attempt AS attempt_count, NOT due.may_send AS refused, d.event_id, d.endpoint_id, due.user_id, d.event_type, d.mode, due.data,
                  d.event_created_at, d.trace_parent, due.url, due.endpoint_status AS status, due.secret_sealed, due.previous_secret_sealed,
                  due.previous_secret_expires_at, due.signature_version, due.legacy_signature, due.signing_key_sealed, due.previous_signing_key_sealed,
                  d.source_event_id::text AS source_event_id, due.subscription_id, due.subscription_scope, due.feed_position::text AS feed_position,
                  due.watermark::text AS watermark`),
      {
        deliveryIds: items.map((i) => i.deliveryId),
        createdAts: items.map((i) => createdAtOfId(i.deliveryId)),
        attempts: items.map((i) => i.attempt),
        now,
        leaseUntil,
        refusedError: REFUSED_ERROR,
      },
    );
    return rows ?? [];
  }

  /**
   * Takes first attempts that fan-out made in this process a moment ago and handed over with what
   * sending needs (FirstAttempt in delivery-attempts.service.ts): the row alone, as claim() takes
   * it (due, attempt 1 not taken, locked rows skipped), without reading the endpoint, the payload
   * or the line access again. Answers the ids taken. Prepared on the probe pool, as the record of
   * successes is (recordSuccessesIn).
   */
  async claimFirst(deliveryIds: string[], now: Date, leaseUntil: Date): Promise<string[]> {
    const groups = await this.byDay(deliveryIds, (id) => id);
    const answers = await Promise.all(groups.map(([group, ids]) => this.claimFirstIn(group, ids, now, leaseUntil).catch(goneWithItsDay([]))));
    return answers.flat();
  }

  /** claimFirst() of deliveries all in `group`: prepared on the probe pool (recordSuccessesIn says why). */
  private async claimFirstIn(group: DeliveryLogGroup, deliveryIds: string[], now: Date, leaseUntil: Date): Promise<string[]> {
    const rows = await this.probes.query<{ id: string }>(
      `WITH due AS (
             SELECT d.id, d.created_at
               FROM ${group.deliveries} d
               JOIN unnest(:deliveryIds::uuid[], :createdAts::timestamptz[]) AS x(id, created_at) ON ${deliveryIn(group, 'd', 'x.id', 'x.created_at')}
              WHERE d.attempt_count = 0 AND d.status = ANY (:waiting::text[])
                FOR NO KEY UPDATE OF d SKIP LOCKED)
       UPDATE ${group.deliveries} d
          SET attempt_count = 1, last_attempt_at = :now, lease_until = :leaseUntil::timestamptz, updated_at = now()
         FROM due
        WHERE ${deliveryIn(group, 'd', 'due.id', 'due.created_at')}
        RETURNING d.id`,
      { deliveryIds, createdAts: deliveryIds.map(createdAtOfId), waiting: WAITING, now, leaseUntil },
    );
    return rows.map((row) => row.id);
  }

  /**
   * Records successes in one statement (one commit): the endpoints locked first, KEY SHARE in id
   * order (it conflicts only with deleting one, so successes and failures of an endpoint do not
   * wait for each other), then each delivery marked succeeded with its attempt on its own row
   * (success_duration_ms, success_response_body; migration SuccessOnDelivery). An attempt whose
   * delivery no longer waited for it (cancelled meanwhile, or its lease ran out and the sweep sent
   * the next attempt) gets an attempt row instead, so it is kept all the same. The failing
   * runs they end are ended after the commit (WebhooksService.endRunsAnsweredBefore), for the
   * endpoints this statement found in one (`inFailingRun`). Answers the deliveries recorded (the
   * others' endpoints were deleted meanwhile, deliveries and all).
   */
  async recordSuccesses(items: SuccessRow[]): Promise<RecordedSuccesses> {
    const groups = await this.byDay(items, (item) => item.deliveryId);
    const answers = await Promise.all(groups.map(([group, grouped]) => this.recordSuccessesIn(group, grouped).catch(goneWithItsDay([]))));
    const rows = answers.flat();
    return {
      recorded: new Set(rows.map((r) => r.delivery_id)),
      inFailingRun: new Set(rows.filter((r) => r.in_failing_run).map((r) => r.endpoint_id)),
    };
  }

  /**
   * recordSuccesses() of deliveries all in `group`: the ids recorded, each with whether its
   * endpoint was in a failing run. Prepared on the probe pool (ProbePool): planned once per
   * connection and day, with scans ruled out (what that holds against: PROBE_SETTINGS); planning
   * it on every call (plannedPerCall, as claim() still is)
   * cost more than running it (docs/PERFORMANCE.md, change 38). Its connections commit without
   * waiting for the disk, as COMMIT_ASYNC does for claim().
   */
  private async recordSuccessesIn(
    group: DeliveryLogGroup,
    items: SuccessRow[],
  ): Promise<Array<{ delivery_id: string; endpoint_id: string; in_failing_run: boolean }>> {
    return this.probes.query(
      `WITH input AS (
             SELECT * FROM unnest(:deliveryIds::uuid[], :createdAts::timestamptz[], :attempts::int[], :attemptedAts::timestamptz[], :durations::int[],
                                  :statusCodes::int[], :responseBodies::text[], :endpointIds::uuid[])
                        AS x(delivery_id, created_at, attempt_number, attempted_at, duration_ms, status_code, response_body, endpoint_id)),
           endpoint AS (SELECT id, ${inFailingRun('webhook_endpoints')} AS in_failing_run FROM webhook_endpoints
                         WHERE id IN (SELECT endpoint_id FROM input) ORDER BY id FOR KEY SHARE),
           live AS (SELECT input.*, endpoint.in_failing_run FROM input JOIN endpoint ON endpoint.id = input.endpoint_id),
           delivery AS (
             UPDATE ${group.deliveries} d
                SET status = 'succeeded', last_status_code = live.status_code, last_error = NULL, next_attempt_at = NULL, lease_until = NULL,
                    last_attempt_at = live.attempted_at, success_duration_ms = live.duration_ms, success_response_body = live.response_body, updated_at = now()
               FROM live
              WHERE ${deliveryIn(group, 'd', 'live.delivery_id', 'live.created_at')} AND d.attempt_count = live.attempt_number AND d.status = ANY (:waiting::text[])
             RETURNING d.id, d.attempt_count),
           attempt AS (
             INSERT INTO ${group.attempts} (delivery_id, delivery_created_at, attempt_number, attempted_at, duration_ms, status_code, response_body)
             SELECT delivery_id, ${ATTEMPT_KEY}, attempt_number, attempted_at, duration_ms, status_code, response_body FROM live
              -- A batch may hold a late success of an attempt and the success of the next one, of one delivery: only the one recorded on the row is left out.
              WHERE NOT EXISTS (SELECT FROM delivery WHERE delivery.id = live.delivery_id AND delivery.attempt_count = live.attempt_number)
             ON CONFLICT (delivery_id, attempt_number, delivery_created_at) DO NOTHING)
      SELECT delivery_id, endpoint_id, in_failing_run FROM live`,
      {
        deliveryIds: items.map((i) => i.deliveryId),
        createdAts: items.map((i) => createdAtOfId(i.deliveryId)),
        attempts: items.map((i) => i.attempt),
        attemptedAts: items.map((i) => i.attemptedAt),
        durations: items.map((i) => i.durationMs),
        statusCodes: items.map((i) => i.statusCode),
        responseBodies: items.map((i) => i.responseBody),
        endpointIds: items.map((i) => i.endpointId),
        waiting: WAITING,
      },
    );
  }

  /** Each failed attempt's row and its delivery's next state, in the caller's transaction (endpoints locked first). */
  async recordFailures(manager: EntityManager, items: FailureRow[]): Promise<void> {
    // One after the other: the statements share the caller's transaction (and connection). A
    // failed attempt's delivery waits, so retention keeps its day (no undefined_table here).
    for (const [group, grouped] of await this.byDay(items, (item) => item.deliveryId)) await this.recordFailuresIn(manager, group, grouped);
  }

  /** recordFailures() of deliveries all in `group`. */
  private async recordFailuresIn(manager: EntityManager, group: DeliveryLogGroup, items: FailureRow[]): Promise<void> {
    await queryNamed(
      manager,
      plannedPerCall(`WITH input AS (
             SELECT * FROM unnest(:deliveryIds::uuid[], :createdAts::timestamptz[], :attempts::int[], :attemptedAts::timestamptz[], :durations::int[],
                                  :statusCodes::int[], :errorKinds::text[], :responseBodies::text[], :statuses::text[], :lastErrors::text[],
                                  :nextAttemptAts::timestamptz[])
                        AS x(delivery_id, created_at, attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body, status, last_error,
                             next_attempt_at)),
           attempt AS (
             INSERT INTO ${group.attempts} (delivery_id, delivery_created_at, attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body)
             SELECT delivery_id, ${ATTEMPT_KEY}, attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body FROM input
             ON CONFLICT (delivery_id, attempt_number, delivery_created_at) DO NOTHING)
       UPDATE ${group.deliveries} d
          SET status = input.status, last_status_code = input.status_code, last_error = input.last_error,
              next_attempt_at = input.next_attempt_at, lease_until = NULL, updated_at = now()
         FROM input
        WHERE ${deliveryIn(group, 'd', 'input.delivery_id', 'input.created_at')} AND d.attempt_count = input.attempt_number AND d.status IN ('pending', 'retrying')`),
      {
        deliveryIds: items.map((i) => i.deliveryId),
        createdAts: items.map((i) => createdAtOfId(i.deliveryId)),
        attempts: items.map((i) => i.attempt),
        attemptedAts: items.map((i) => i.attemptedAt),
        durations: items.map((i) => i.durationMs),
        statusCodes: items.map((i) => i.statusCode),
        errorKinds: items.map((i) => i.errorKind),
        responseBodies: items.map((i) => i.responseBody),
        statuses: items.map((i) => i.status),
        lastErrors: items.map((i) => i.lastError),
        nextAttemptAts: items.map((i) => i.nextAttemptAt),
      },
    );
  }

  /**
   * Deliveries due for longer than `graceMs` (their job was lost), in id order after `after`; a
   * claimed one only once its lease too is older than that (its worker died mid-attempt).
   */
  overdue(graceMs: number, after: string, limit: number): Promise<Array<{ id: string; endpoint_id: string; attempt_count: number }>> {
    return queryNamed(
      this.dataSource.manager,
      `SELECT id, endpoint_id, attempt_count FROM webhook_deliveries
        WHERE status IN ('pending', 'retrying') AND next_attempt_at < now() - :grace::interval
          AND (lease_until IS NULL OR lease_until < now() - :grace::interval) AND id > :after
        ORDER BY id LIMIT :limit`,
      { grace: `${graceMs} milliseconds`, after, limit },
    );
  }
}
