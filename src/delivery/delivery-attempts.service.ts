import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AttachmentUrls } from '../common/attachment-urls';
import { Clock } from '../common/clock';
import { MicroBatcher } from '../common/micro-batcher';
import { DomainError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { signWebhook, SIGNATURE_HEADER } from '../sdk';
import { UrlPolicy } from '../webhooks/url-policy/url-policy';
import { EndpointStatus } from '../webhooks/webhook.types';
import { SealedSecrets, WebhooksService } from '../webhooks/webhooks.service';
import { DeliveryQueue } from './delivery-queue';
import { SendResult, WebhookSender } from './webhook-sender';

export const USER_AGENT = 'MessagingSync-Webhooks/1.0';

/** How long a claimed attempt may run before a sweep treats it as lost (timeout plus margin). */
const LEASE_MARGIN_MS = 20_000;

/**
 * A success answered at s.at ends the endpoint's failing run if the run began (its first failed
 * attempt started) no later (w is the endpoint row, s the batch's latest answer of that
 * endpoint): a run that began after the answer stands.
 */
const ENDS_FAILING_RUN = '(w.failing_since IS NULL OR w.failing_since <= s.at)';

/** PostgreSQL's SQLSTATE for a deadlock, after which the statement can simply run again. */
const DEADLOCK_DETECTED = '40P01';

/** What an attempt needs of its delivery row. */
interface ClaimedDelivery {
  id: string;
  eventId: string;
  endpointId: string;
  eventType: string;
  mode: string;
  data: object;
  eventCreatedAt: Date;
}

interface ClaimedEndpoint extends SealedSecrets {
  url: string;
  status: EndpointStatus;
  /** In a failing run when claimed: a success must end it. */
  endpoint_failing: boolean;
}

interface Claimed {
  /** The attempt's time: claimed, signed and recorded at it. */
  now: Date;
  delivery: ClaimedDelivery;
  endpoint: ClaimedEndpoint;
}

/** A failed attempt: a status other than 2xx, or no answer. */
interface Failure {
  delivery: ClaimedDelivery;
  attempt: number;
  now: Date;
  result: SendResult;
}

/** What a success writes: the attempt row and the delivery's final state. */
interface Success {
  delivery: ClaimedDelivery;
  attempt: number;
  now: Date;
  statusCode: number;
  responseBody: string;
  durationMs: number;
  /** Its endpoint was in a failing run when the attempt was claimed: this success ends it. */
  endsFailingRun: boolean;
}

interface ClaimedRow extends ClaimedEndpoint {
  id: string;
  attempt_count: number;
  event_id: string;
  endpoint_id: string;
  event_type: string;
  mode: string;
  data: object;
  event_created_at: Date;
}

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed' | 'cancelled' | 'skipped';

/**
 * One attempt of one delivery, start to end: claim it in the database (so no attempt is sent
 * twice, whatever Redis replays), check the URL again and pin the address, sign the exact bytes,
 * POST, record the attempt, then succeed, schedule the next try, or fail for good.
 */
@Injectable()
export class DeliveryAttemptsService implements OnModuleInit {
  private readonly logger = new Logger(DeliveryAttemptsService.name);
  private readonly maxAttempts: number;
  /** Concurrent attempts share round trips and commits: one claim statement and one success statement per batch. */
  private readonly claims: MicroBatcher<{ deliveryId: string; attempt: number }, Claimed | null>;
  private readonly successes: MicroBatcher<Success, boolean>;
  private readonly failures: MicroBatcher<Failure, AttemptOutcome>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly webhooks: WebhooksService,
    private readonly urlPolicy: UrlPolicy,
    private readonly sender: WebhookSender,
    private readonly queue: DeliveryQueue,
    private readonly attachmentUrls: AttachmentUrls,
    private readonly clock: Clock,
  ) {
    this.maxAttempts = config.delivery.retryScheduleMs.length + 1;
    this.claims = new MicroBatcher((items) => this.claimBatch(items));
    this.successes = new MicroBatcher((items) => this.recordSuccessBatch(items));
    this.failures = new MicroBatcher((items) => this.recordFailureBatch(items));
  }

  onModuleInit(): void {
    this.webhooks.onEndpointDisabled((endpointId, manager) => this.cancelWaiting(endpointId, manager));
  }

  /** Waiting deliveries of a disabled endpoint are cancelled, in the transaction that disabled it. */
  async cancelWaiting(endpointId: string, manager: EntityManager): Promise<void> {
    await manager.query(
      `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, updated_at = now()
        WHERE endpoint_id = $1 AND status IN ('pending', 'retrying')`,
      [endpointId],
    );
  }

  async attempt(deliveryId: string, attempt: number): Promise<AttemptOutcome> {
    if (attempt > this.maxAttempts) {
      // Swept after an attempt whose worker died: that attempt was the last one allowed.
      await this.dataSource.query(
        `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, updated_at = now(),
                last_error = COALESCE(last_error, 'the last attempt was interrupted')
          WHERE id = $1 AND attempt_count = $2 - 1 AND status IN ('pending', 'retrying')`,
        [deliveryId, attempt],
      );
      return 'skipped';
    }
    const claimed = await this.claim(deliveryId, attempt);
    if (!claimed) return 'skipped';
    const { delivery, endpoint, now } = claimed;
    if (endpoint.status !== 'active') {
      await this.dataSource.query(`UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL WHERE id = $1`, [deliveryId]);
      return 'cancelled';
    }

    let result: SendResult;
    try {
      const { url, addresses } = await this.urlPolicy.check(endpoint.url);
      const body = this.serialize(delivery, now);
      const timestamp = Math.floor(now.getTime() / 1000);
      result = await this.sender.send({
        url,
        address: addresses[0],
        body,
        timeoutMs: this.config.delivery.timeoutMs,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          [SIGNATURE_HEADER.toLowerCase()]: signWebhook(body, this.webhooks.signingSecrets(endpoint, now), timestamp),
          'x-service-event-id': delivery.eventId,
          'x-service-event-type': delivery.eventType,
        },
      });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      // The URL no longer passes the policy (e.g. its name now resolves privately): a failed attempt.
      result = { ok: false, statusCode: null, errorKind: 'url_refused', error: error.message, durationMs: 0 };
    }
    if (result.ok && 'responseBody' in result) {
      const recorded = await this.successes.submit({
        delivery,
        attempt,
        now,
        statusCode: result.statusCode,
        responseBody: result.responseBody,
        durationMs: result.durationMs,
        endsFailingRun: endpoint.endpoint_failing,
      });
      return recorded ? 'succeeded' : 'cancelled'; // not recorded: the endpoint was deleted meanwhile
    }
    return this.failures.submit({ delivery, attempt, now, result });
  }

  /** Envelope bytes for this attempt; attachment links are signed afresh, valid 1 h from now. */
  private serialize(delivery: ClaimedDelivery, now: Date): string {
    const data = delivery.data as { attachments?: Array<{ id: string }> };
    const withUrls = Array.isArray(data.attachments)
      ? { ...data, attachments: data.attachments.map((a) => ({ ...a, url: this.attachmentUrls.sign(a.id, now) })) }
      : data;
    return JSON.stringify({
      id: delivery.eventId,
      type: delivery.eventType,
      createdAt: delivery.eventCreatedAt.toISOString(),
      endpointId: delivery.endpointId,
      mode: delivery.mode,
      data: withUrls,
    });
  }

  /**
   * Takes attempt N of the delivery for this worker, with its payload and what sending needs of its endpoint;
   * null when it is not due: already done, cancelled, or attempt N was taken before (a replayed
   * or duplicate job), or the endpoint is gone. Concurrent claims go to the database together.
   */
  private claim(deliveryId: string, attempt: number): Promise<Claimed | null> {
    return this.claims.submit({ deliveryId, attempt });
  }

  /** One UPDATE for a batch of claims; each row can be taken once, so a duplicate in the batch gets null. */
  private async claimBatch(items: Array<{ deliveryId: string; attempt: number }>): Promise<Array<Claimed | null>> {
    const now = this.clock.now();
    const lease = new Date(now.getTime() + this.config.delivery.timeoutMs + LEASE_MARGIN_MS);
    // A row another transaction is changing (disable cancelling it, a duplicate job's claim) is
    // skipped rather than waited for: waiting on rows in batch order could deadlock with a
    // disable, which takes them in its own order. A skipped row that is still due is swept.
    const [rows]: [Array<ClaimedRow>, number] = await this.dataSource.query(
      `WITH due AS (
             SELECT d.id, x.attempt FROM webhook_deliveries d JOIN unnest($1::uuid[], $2::int[]) AS x(id, attempt) ON d.id = x.id
              WHERE d.attempt_count = x.attempt - 1 AND d.status IN ('pending', 'retrying')
                FOR NO KEY UPDATE OF d SKIP LOCKED)
       UPDATE webhook_deliveries d
          SET attempt_count = due.attempt, last_attempt_at = $3, next_attempt_at = $4, updated_at = now()
         FROM due, webhook_endpoints e, webhook_payloads p
        WHERE d.id = due.id AND e.id = d.endpoint_id AND p.id = d.payload_id
        RETURNING d.id, d.attempt_count, d.event_id, d.endpoint_id, d.event_type, d.mode, p.data, d.event_created_at,
                  e.url, e.status, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
                  (e.consecutive_failures <> 0 OR e.failing_since IS NOT NULL) AS endpoint_failing`,
      [items.map((i) => i.deliveryId), items.map((i) => i.attempt), now, lease],
    );
    const taken = new Map((rows ?? []).map((row) => [`${row.id}:${row.attempt_count}`, row]));
    return items.map(({ deliveryId, attempt }) => {
      const key = `${deliveryId}:${attempt}`;
      const row = taken.get(key);
      if (!row) return null;
      taken.delete(key); // a second job for the same attempt in this batch gets nothing
      return {
        now,
        delivery: {
          id: row.id,
          eventId: row.event_id,
          endpointId: row.endpoint_id,
          eventType: row.event_type,
          mode: row.mode,
          data: row.data,
          eventCreatedAt: row.event_created_at,
        },
        endpoint: row,
      };
    });
  }

  /**
   * Records a batch of successful attempts in one statement (one commit): each attempt row, its
   * delivery marked succeeded, and the failing run of any endpoint that had one cleared. Answers,
   * per item, whether it was recorded (false: its endpoint was deleted meanwhile, and its
   * deliveries with it). A deadlock with a concurrent disable or delete is retried.
   */
  private async recordSuccessBatch(items: Success[]): Promise<boolean[]> {
    const params = [
      items.map((i) => i.delivery.id),
      items.map((i) => i.attempt),
      items.map((i) => i.now),
      items.map((i) => i.durationMs),
      items.map((i) => i.statusCode),
      items.map((i) => i.responseBody),
      items.map((i) => i.delivery.endpointId),
      [...new Set(items.filter((i) => i.endsFailingRun).map((i) => i.delivery.endpointId))],
    ];
    // Each endpoint is locked once, at the strength it needs, before its delivery rows: KEY SHARE
    // (conflicts only with deleting it, so successes to one endpoint do not wait for each other),
    // or NO KEY UPDATE for one whose failing run this batch ends. Taking KEY SHARE and then
    // upgrading it to reset the counters would deadlock with update_webhook queued between.
    const sql = `
      WITH input AS (
             SELECT * FROM unnest($1::uuid[], $2::int[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::uuid[])
                        AS x(delivery_id, attempt_number, attempted_at, duration_ms, status_code, response_body, endpoint_id)),
           failing AS (
             SELECT id FROM webhook_endpoints WHERE id = ANY ($8::uuid[]) ORDER BY id FOR NO KEY UPDATE),
           healthy AS (
             SELECT id FROM webhook_endpoints WHERE id IN (SELECT endpoint_id FROM input) AND id <> ALL ($8::uuid[]) ORDER BY id FOR KEY SHARE),
           endpoint AS (SELECT id FROM failing UNION ALL SELECT id FROM healthy),
           live AS (SELECT input.* FROM input JOIN endpoint ON endpoint.id = input.endpoint_id),
           attempt AS (
             INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code, response_body)
             SELECT delivery_id, attempt_number, attempted_at, duration_ms, status_code, response_body FROM live
             ON CONFLICT (delivery_id, attempt_number) DO NOTHING),
           delivery AS (
             UPDATE webhook_deliveries d
                SET status = 'succeeded', last_status_code = live.status_code, last_error = NULL, next_attempt_at = NULL, updated_at = now()
               FROM live
              WHERE d.id = live.delivery_id AND d.attempt_count = live.attempt_number AND d.status IN ('pending', 'retrying')),
           reset AS (
             UPDATE webhook_endpoints w SET consecutive_failures = 0, failing_since = NULL
               FROM (SELECT endpoint_id, max(attempted_at + duration_ms * interval '1 millisecond') AS at FROM live GROUP BY endpoint_id) s
              WHERE w.id = s.endpoint_id AND w.id IN (SELECT id FROM failing) AND ${ENDS_FAILING_RUN})
      SELECT delivery_id FROM live`;
    const rows: Array<{ delivery_id: string }> = await this.withDeadlockRetry(() => this.dataSource.query(sql, params));
    const recorded = new Set(rows.map((r) => r.delivery_id));
    await this.endRunsStartedMeanwhile(items.filter((i) => recorded.has(i.delivery.id) && !i.endsFailingRun));
    return items.map((i) => recorded.has(i.delivery.id));
  }

  /**
   * A failure of the same endpoint may have been recorded between this success's claim (which saw
   * no failing run) and its record: if that run began before the success was answered, the
   * success ends it too. A statement of its own after the commit, taking each endpoint's row lock alone:
   * upgrading the batch's KEY SHARE lock inside its statement could deadlock with update_webhook
   * queued on the row. Only rows in such a run are touched (and locked).
   */
  private async endRunsStartedMeanwhile(successes: Success[]): Promise<void> {
    const latest = new Map<string, Date>();
    for (const { delivery, now, durationMs } of successes) {
      const answeredAt = new Date(now.getTime() + durationMs);
      const seen = latest.get(delivery.endpointId);
      if (!seen || answeredAt > seen) latest.set(delivery.endpointId, answeredAt);
    }
    if (latest.size === 0) return;
    await this.dataSource
      .query(
        `UPDATE webhook_endpoints w SET consecutive_failures = 0, failing_since = NULL
           FROM unnest($1::uuid[], $2::timestamptz[]) AS s(endpoint_id, at)
          WHERE w.id = s.endpoint_id AND (w.consecutive_failures <> 0 OR w.failing_since IS NOT NULL) AND ${ENDS_FAILING_RUN}`,
        [[...latest.keys()], [...latest.values()]],
      )
      .catch((error: unknown) =>
        // Recorded already; the next success of the endpoint ends the run if this could not.
        this.logger.warn(`could not end the failing run of ${latest.size} endpoint(s): ${(error as Error).message}`),
      );
  }

  /**
   * Records a batch of failed attempts in one transaction: endpoints locked first (id order, see
   * WebhooksService.lockForFailureCount), then each attempt row and its delivery (retrying with
   * its next time, or failed after the last attempt), then the endpoints' failure counts, which
   * may disable an endpoint and so cancel its waiting deliveries, these too. Retries of the batch
   * go to the queue in one call after commit; if Redis refuses, the sweep enqueues them later.
   */
  private async recordFailureBatch(items: Failure[]): Promise<AttemptOutcome[]> {
    const rows = items.map(({ delivery, attempt, now, result }) => {
      const retryDelayMs = this.config.delivery.retryScheduleMs[attempt - 1];
      return {
        delivery,
        attempt,
        now,
        result,
        retryDelayMs,
        status: retryDelayMs === undefined ? ('failed' as const) : ('retrying' as const),
        nextAttemptAt: retryDelayMs === undefined ? null : new Date(now.getTime() + retryDelayMs),
        error: 'errorKind' in result ? `${result.errorKind}: ${result.error}` : `HTTP ${result.statusCode}`,
      };
    });
    const outcomes = await this.withDeadlockRetry(() =>
      this.dataSource.transaction(async (manager): Promise<AttemptOutcome[]> => {
        const live = await this.webhooks.lockForFailureCount([...new Set(rows.map((r) => r.delivery.endpointId))], manager);
        const kept = rows.filter((r) => live.has(r.delivery.endpointId)); // the rest were deleted meanwhile, deliveries and all
        if (kept.length > 0) {
          await manager.query(
            `WITH input AS (
                   SELECT * FROM unnest($1::uuid[], $2::int[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::timestamptz[])
                              AS x(delivery_id, attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body, status, last_error, next_attempt_at)),
                 attempt AS (
                   INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body)
                   SELECT delivery_id, attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body FROM input
                   ON CONFLICT (delivery_id, attempt_number) DO NOTHING)
             UPDATE webhook_deliveries d
                SET status = input.status, last_status_code = input.status_code, last_error = input.last_error,
                    next_attempt_at = input.next_attempt_at, updated_at = now()
               FROM input
              WHERE d.id = input.delivery_id AND d.attempt_count = input.attempt_number AND d.status IN ('pending', 'retrying')`,
            [
              kept.map((r) => r.delivery.id),
              kept.map((r) => r.attempt),
              kept.map((r) => r.now),
              kept.map((r) => r.result.durationMs),
              kept.map((r) => r.result.statusCode),
              kept.map((r) => ('errorKind' in r.result ? r.result.errorKind : null)),
              kept.map((r) => ('responseBody' in r.result ? r.result.responseBody : null)),
              kept.map((r) => r.status),
              kept.map((r) => r.error),
              kept.map((r) => r.nextAttemptAt),
            ],
          );
        }
        const perEndpoint = new Map<string, { endpointId: string; count: number; firstAt: Date }>();
        for (const r of kept) {
          const entry = perEndpoint.get(r.delivery.endpointId) ?? { endpointId: r.delivery.endpointId, count: 0, firstAt: r.now };
          entry.count += 1;
          if (r.now < entry.firstAt) entry.firstAt = r.now;
          perEndpoint.set(r.delivery.endpointId, entry);
        }
        const now = rows.reduce((latest, r) => (r.now > latest ? r.now : latest), rows[0].now);
        const disabled = await this.webhooks.recordFailures([...perEndpoint.values()], now, manager);
        // A disabled endpoint's waiting deliveries were cancelled, those of this batch too.
        return rows.map((r) => (!live.has(r.delivery.endpointId) || disabled.has(r.delivery.endpointId) ? 'cancelled' : r.status));
      }),
    );
    const retries = rows.filter((_, i) => outcomes[i] === 'retrying');
    await this.queue
      .enqueue(retries.map((r) => ({ deliveryId: r.delivery.id, endpointId: r.delivery.endpointId, attempt: r.attempt + 1, delayMs: r.retryDelayMs })))
      .catch((e: unknown) => this.logger.warn(`could not schedule ${retries.length} retries: ${(e as Error).message}`));
    return outcomes;
  }

  /** Runs a transaction again after PostgreSQL broke a deadlock by aborting it (nothing of it was kept). */
  private async withDeadlockRetry<T>(work: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries += 1) {
      try {
        return await work();
      } catch (error) {
        if ((error as { code?: string }).code !== DEADLOCK_DETECTED || tries >= 3) throw error;
      }
    }
  }
}
