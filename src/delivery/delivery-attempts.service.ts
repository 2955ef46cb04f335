import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AttachmentUrls } from '../common/attachment-urls';
import { Clock } from '../common/clock';
import { MicroBatcher } from '../common/micro-batcher';
import { DomainError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { UrlPolicy } from '../outbound-http';
import { SealedSecrets, WebhooksService } from '../webhooks/webhooks.service';
import { ClaimedRow, ClaimResult, DeliveryAttemptsRepository } from './delivery-attempts.repository';
import { DeliveryQueue } from './delivery-queue';
import { nextRetryDelayMs } from './retry-after';
import { inStoredTrace, Span, SpanKind, SpanStatusCode } from '../ops/tracing/traces';
import { SendErrorKind, SendResult, WebhookSender } from './webhook-sender';
import { signatureHeaders } from './signature-headers';
import { subscriptionOccurrence, SUBSCRIPTION_ID_HEADER } from '../event-feed/event-subscription-delivery';
import { FeedCursors } from '../event-feed/feed-cursor';

export const USER_AGENT = 'MessagingSync-Webhooks/1.0';

/** How long a claimed attempt may run before a sweep treats it as lost (timeout plus margin). */
const LEASE_MARGIN_MS = 20_000;

/** PostgreSQL's SQLSTATE for a deadlock, after which the statement can simply run again. */
const DEADLOCK_DETECTED = '40P01';

/**
 * How long what fan-out read for a first attempt (the endpoint's URL and keys, its receiving the
 * line) stands in for the claim's own reads: an attempt that starts later, parked or waiting for
 * a slot, is claimed as any other and reads them again (docs/webhooks.md, "When an attempt reads
 * its endpoint").
 */
export const FIRST_ATTEMPT_FRESH_MS = 2_000;

/** Most first attempts kept for their claim; past it, a first attempt is claimed as any other. */
const FIRST_ATTEMPTS_KEPT = 20_000;

/** What an attempt needs of its delivery row. */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  endpointId: string;
  /** The endpoint's owner: its attachment links work while this user may see the line. */
  userId: string;
  eventType: string;
  mode: string;
  data: object;
  eventCreatedAt: Date;
  /** The relay's span for the event (tracing); null when off. */
  traceParent: string | null;
  sourceEventId: string | null;
  /** Set when the endpoint is an MCP Events subscription's: the body is the draft's EventOccurrence. */
  subscription: { id: string; scope: string; feedPosition: string | null; watermark: string | null } | null;
}

export type ClaimedEndpoint = Pick<ClaimedRow, 'url' | 'status' | keyof SealedSecrets>;

/**
 * A first attempt that fan-out made in this process and hands over at once, with what sending it
 * needs, read in fan-out's transaction a moment before (its endpoint received the event's line
 * then, was active, and had this URL and these keys). Not for an MCP Events subscription's
 * endpoint, whose body the claim computes.
 */
export interface FirstAttempt {
  delivery: ClaimedDelivery;
  endpoint: ClaimedEndpoint;
  /** Date.now() when fan-out read the endpoint. */
  readAt: number;
}

interface Claimed {
  /** The attempt's time: claimed, signed and recorded at it. */
  now: Date;
  delivery: ClaimedDelivery;
  endpoint: ClaimedEndpoint;
}

/** What an endpoint answered an attempt: its status (null: no answer, see errorKind) and the request's time. */
export interface Answer {
  statusCode: number | null;
  durationMs: number;
  errorKind?: SendErrorKind;
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
  /** The cursors of webhook-mode deliveries, sealed as events/poll's (event-feed/feed-cursor.ts). */
  private readonly feedCursors: FeedCursors;
  /** Concurrent attempts share round trips and commits: one claim statement and one success statement per batch. */
  private readonly claims: MicroBatcher<{ deliveryId: string; attempt: number }, Claimed | 'refused' | null>;
  /** First attempts handed over by fan-out in this process, by delivery id, until their claim. */
  private readonly firstAttempts = new Map<string, FirstAttempt>();
  private readonly firstClaims: MicroBatcher<FirstAttempt, Claimed | null>;
  private readonly successes: MicroBatcher<Success, boolean>;
  private readonly failures: MicroBatcher<Failure, AttemptOutcome>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: DeliveryAttemptsRepository,
    private readonly webhooks: WebhooksService,
    private readonly urlPolicy: UrlPolicy,
    private readonly sender: WebhookSender,
    private readonly queue: DeliveryQueue,
    private readonly attachmentUrls: AttachmentUrls,
    private readonly clock: Clock,
    private readonly metrics: ServiceMetrics,
  ) {
    this.maxAttempts = config.delivery.retryScheduleMs.length + 1;
    this.feedCursors = new FeedCursors(config);
    this.claims = new MicroBatcher((items) => this.claimBatch(items));
    this.firstClaims = new MicroBatcher((items) => this.claimFirstBatch(items));
    this.successes = new MicroBatcher((items) => this.recordSuccessBatch(items));
    this.failures = new MicroBatcher((items) => this.recordFailureBatch(items));
  }

  onModuleInit(): void {
    this.webhooks.endpointDisabled.add('cancel waiting deliveries', (endpointId, manager) => this.cancelWaiting(endpointId, manager));
  }

  /** Waiting deliveries of a disabled endpoint are cancelled, in the transaction that disabled it. */
  cancelWaiting(endpointId: string, manager: EntityManager): Promise<void> {
    return this.repository.cancelWaiting(manager, endpointId);
  }

  /**
   * Keeps what fan-out read for these first attempts until they are claimed (claim()); those
   * beyond FIRST_ATTEMPTS_KEPT are claimed as any other attempt.
   */
  keepFirstAttempts(attempts: FirstAttempt[]): void {
    this.forgetStaleFirstAttempts();
    for (const first of attempts) {
      if (this.firstAttempts.size >= FIRST_ATTEMPTS_KEPT) return;
      this.firstAttempts.set(first.delivery.id, first);
    }
  }

  /** Forgets every first attempt kept (at shutdown: what was not started is swept and claimed as any other). */
  forgetFirstAttempts(): void {
    this.firstAttempts.clear();
  }

  /**
   * Drops what is kept for first attempts that have waited past FIRST_ATTEMPT_FRESH_MS (parked
   * behind their endpoint's limit, say): their claim reads everything again anyway. Oldest first:
   * the map keeps the order they were kept in, which is the order fan-out read them.
   */
  private forgetStaleFirstAttempts(): void {
    const oldest = Date.now() - FIRST_ATTEMPT_FRESH_MS;
    for (const [id, first] of this.firstAttempts) {
      if (first.readAt >= oldest) return;
      this.firstAttempts.delete(id);
    }
  }

  /**
   * @param onAnswered called once the endpoint has answered (or the attempt could not be sent),
   *   before the outcome is recorded, with what it answered: the endpoint's slot is free from then on.
   */
  async attempt(deliveryId: string, attempt: number, onAnswered?: (answer: Answer) => void): Promise<AttemptOutcome> {
    if (attempt > this.maxAttempts) {
      // Swept after an attempt whose worker died: that attempt was the last one allowed.
      await this.repository.failInterruptedLast(deliveryId, attempt);
      return 'skipped';
    }
    const claimed = await this.claim(deliveryId, attempt);
    if (!claimed) return 'skipped';
    if (claimed === 'refused') {
      // Cancelled by the claim: its endpoint no longer receives the event's line.
      this.metrics.deliveryAttempted('cancelled', null, null);
      return 'cancelled';
    }
    const { delivery } = claimed;
    return inStoredTrace(
      delivery.traceParent,
      'webhook attempt',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'webhook.delivery_id': delivery.id,
          'webhook.endpoint_id': delivery.endpointId,
          'webhook.attempt': attempt,
          'event.type': delivery.eventType,
        },
      },
      (span) => this.deliver(claimed, attempt, onAnswered, span),
    );
  }

  /** Sends a claimed attempt and records its outcome (in the attempt's span, when tracing). */
  private async deliver(
    claimed: Claimed,
    attempt: number,
    onAnswered: ((answer: Answer) => void) | undefined,
    span: Span | undefined,
  ): Promise<AttemptOutcome> {
    const { delivery, endpoint, now } = claimed;
    if (endpoint.status !== 'active') {
      await this.repository.cancel(delivery.id);
      this.metrics.deliveryAttempted('cancelled', null, null);
      span?.setAttribute('webhook.outcome', 'cancelled');
      return 'cancelled';
    }

    let result: SendResult;
    try {
      const { url, addresses } = await this.urlPolicy.check(endpoint.url);
      const { body, webhookId, extraHeaders } = this.serialize(delivery, now);
      const timestamp = Math.floor(now.getTime() / 1000);
      result = await this.sender.send({
        url,
        address: addresses[0],
        body,
        timeoutMs: this.config.delivery.timeoutMs,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          ...signatureHeaders(body, webhookId, timestamp, this.webhooks.signingKeys(endpoint, now)),
          ...extraHeaders,
        },
      });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      // The URL no longer passes the policy (e.g. its name now resolves privately): a failed attempt.
      result = { ok: false, statusCode: null, errorKind: 'url_refused', error: error.message, durationMs: 0 };
    }
    onAnswered?.({ statusCode: result.statusCode, durationMs: result.durationMs, ...('errorKind' in result ? { errorKind: result.errorKind } : {}) });
    const answeredAt = Date.now();
    let outcome: AttemptOutcome;
    if (result.ok && 'responseBody' in result) {
      const recorded = await this.successes.submit({
        delivery,
        attempt,
        now,
        statusCode: result.statusCode,
        responseBody: result.responseBody,
        durationMs: result.durationMs,
      });
      outcome = recorded ? 'succeeded' : 'cancelled'; // not recorded: the endpoint was deleted meanwhile
    } else {
      outcome = await this.failures.submit({ delivery, attempt, now, result });
    }
    const lagMs = outcome === 'succeeded' ? answeredAt - delivery.eventCreatedAt.getTime() : null;
    this.metrics.deliveryAttempted(outcome, 'errorKind' in result && result.errorKind === 'url_refused' ? null : result.durationMs, lagMs);
    span?.setAttributes({
      'webhook.outcome': outcome,
      'webhook.duration_ms': result.durationMs,
      ...(result.statusCode === null ? {} : { 'http.response.status_code': result.statusCode }),
      ...('errorKind' in result ? { 'error.type': result.errorKind } : {}),
    });
    if (!result.ok) span?.setStatus({ code: SpanStatusCode.ERROR, message: 'errorKind' in result ? result.errorKind : `HTTP ${result.statusCode}` });
    return outcome;
  }

  /**
   * Body bytes for this attempt, the webhook-id that signs them and the headers beside the
   * signature: the envelope with X-Service-Event-Id/-Type for an endpoint; for an MCP Events
   * subscription the draft's EventOccurrence with X-MCP-Subscription-Id. Attachment links are
   * signed afresh for the endpoint's owner, valid 1 h from now.
   */
  private serialize(delivery: ClaimedDelivery, now: Date): { body: string; webhookId: string; extraHeaders: Record<string, string> } {
    const withUrls = this.attachmentUrls.withSignedLinks(delivery.data, { userId: delivery.userId, keyId: null }, now);
    if (delivery.subscription) {
      const { eventId, body } = subscriptionOccurrence(
        {
          sourceEventId: delivery.sourceEventId,
          eventType: delivery.eventType,
          createdAt: delivery.eventCreatedAt,
          mode: delivery.mode,
          data: withUrls,
          subscriptionScope: delivery.subscription.scope,
          feedPosition: delivery.subscription.feedPosition,
          watermark: delivery.subscription.watermark,
        },
        this.feedCursors,
      );
      return { body: JSON.stringify(body), webhookId: eventId, extraHeaders: { [SUBSCRIPTION_ID_HEADER]: delivery.subscription.id } };
    }
    const extraHeaders = { 'x-service-event-id': delivery.eventId, 'x-service-event-type': delivery.eventType };
    const body = JSON.stringify({
      id: delivery.eventId,
      type: delivery.eventType,
      createdAt: delivery.eventCreatedAt.toISOString(),
      endpointId: delivery.endpointId,
      mode: delivery.mode,
      data: withUrls,
    });
    return { body, webhookId: delivery.eventId, extraHeaders };
  }

  /**
   * Takes attempt N of the delivery for this worker, with its payload and what sending needs of its endpoint;
   * null when it is not due: already done, cancelled, or attempt N was taken before (a replayed
   * or duplicate job), or the endpoint is gone; 'refused' when the claim cancelled it instead,
   * its endpoint no longer receiving the event's line. Concurrent claims go to the database together.
   */
  private claim(deliveryId: string, attempt: number): Promise<Claimed | 'refused' | null> {
    const first = attempt === 1 ? this.firstAttempts.get(deliveryId) : undefined;
    if (first) {
      this.firstAttempts.delete(deliveryId);
      if (Date.now() - first.readAt <= FIRST_ATTEMPT_FRESH_MS) return this.firstClaims.submit(first);
    }
    return this.claims.submit({ deliveryId, attempt });
  }

  /**
   * Claims a batch of fresh first attempts by their rows alone (DeliveryAttemptsRepository.claimFirst):
   * what sending needs came with them. Null for one not taken (cancelled meanwhile, or taken by
   * a duplicate job); a second item for the same delivery in the batch gets null too.
   */
  private async claimFirstBatch(items: FirstAttempt[]): Promise<Array<Claimed | null>> {
    const now = this.clock.now();
    const lease = new Date(now.getTime() + this.config.delivery.timeoutMs + LEASE_MARGIN_MS);
    const taken = new Set(await this.repository.claimFirst([...new Set(items.map((i) => i.delivery.id))], now, lease));
    return items.map(({ delivery, endpoint }) => (taken.delete(delivery.id) ? { now, delivery, endpoint } : null));
  }

  /** One UPDATE for a batch of claims; each row can be taken once, so a duplicate in the batch gets null. */
  private async claimBatch(items: Array<{ deliveryId: string; attempt: number }>): Promise<Array<Claimed | 'refused' | null>> {
    const now = this.clock.now();
    const lease = new Date(now.getTime() + this.config.delivery.timeoutMs + LEASE_MARGIN_MS);
    const rows = await this.repository.claim(items, now, lease);
    const taken = new Map<string, ClaimResult>(rows.map((row) => [`${row.id}:${row.attempt_count}`, row]));
    return items.map(({ deliveryId, attempt }) => {
      const key = `${deliveryId}:${attempt}`;
      const row = taken.get(key);
      if (!row) return null;
      taken.delete(key); // a second job for the same attempt in this batch gets nothing
      if (row.refused) return 'refused';
      return {
        now,
        delivery: {
          id: row.id,
          eventId: row.event_id,
          endpointId: row.endpoint_id,
          userId: row.user_id,
          eventType: row.event_type,
          mode: row.mode,
          data: row.data,
          eventCreatedAt: row.event_created_at,
          traceParent: row.trace_parent,
          sourceEventId: row.source_event_id,
          subscription:
            row.subscription_id === null
              ? null
              : { id: row.subscription_id, scope: row.subscription_scope!, feedPosition: row.feed_position, watermark: row.watermark },
        },
        endpoint: row,
      };
    });
  }

  /**
   * Records a batch of successful attempts in one statement (one commit): each attempt row and its
   * delivery marked succeeded; then the failing runs they end are ended, for the endpoints the
   * statement found in one. Answers, per item, whether it was recorded (false: its endpoint was
   * deleted meanwhile, and its deliveries with it). A deadlock with a concurrent disable or delete is retried.
   */
  private async recordSuccessBatch(items: Success[]): Promise<boolean[]> {
    const { recorded, inFailingRun } = await this.withDeadlockRetry(() =>
      this.repository.recordSuccesses(
        items.map((i) => ({
          deliveryId: i.delivery.id,
          attempt: i.attempt,
          attemptedAt: i.now,
          durationMs: i.durationMs,
          statusCode: i.statusCode,
          responseBody: i.responseBody,
          endpointId: i.delivery.endpointId,
        })),
      ),
    );
    await this.endFailingRuns(items.filter((i) => recorded.has(i.delivery.id) && inFailingRun.has(i.delivery.endpointId)));
    return items.map((i) => recorded.has(i.delivery.id));
  }

  /**
   * A 2xx ends its endpoint's failing run, after the batch's commit (failing-runs.sql.ts says
   * why not in it): the run too that a failure began between this success's claim and its
   * record, if the run began before the success was answered and its record had committed when
   * the success statement read the endpoint (`successes` are those of endpoints it found in a run).
   */
  private async endFailingRuns(successes: Success[]): Promise<void> {
    const latest = new Map<string, Date>();
    for (const { delivery, now, durationMs } of successes) {
      const answeredAt = new Date(now.getTime() + durationMs);
      const seen = latest.get(delivery.endpointId);
      if (!seen || answeredAt > seen) latest.set(delivery.endpointId, answeredAt);
    }
    if (latest.size === 0) return;
    await this.webhooks.endRunsAnsweredBefore(latest).catch((error: unknown) =>
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
      const askedMs = 'retryAfterMs' in result ? result.retryAfterMs : undefined;
      const retryDelayMs = nextRetryDelayMs(this.config.delivery.retryScheduleMs, attempt, askedMs);
      return {
        delivery,
        attempt,
        now,
        result,
        retryDelayMs,
        status: retryDelayMs === undefined ? ('failed' as const) : ('retrying' as const),
        nextAttemptAt: retryDelayMs === undefined ? null : new Date(now.getTime() + retryDelayMs),
        error: 'errorKind' in result ? `${result.errorKind}: ${result.error}` : httpError(result.statusCode, askedMs),
      };
    });
    const outcomes = await this.withDeadlockRetry(() =>
      this.dataSource.transaction(async (manager): Promise<AttemptOutcome[]> => {
        const live = await this.webhooks.lockForFailureCount([...new Set(rows.map((r) => r.delivery.endpointId))], manager);
        const kept = rows.filter((r) => live.has(r.delivery.endpointId)); // the rest were deleted meanwhile, deliveries and all
        await this.repository.recordFailures(
          manager,
          kept.map((r) => ({
            deliveryId: r.delivery.id,
            attempt: r.attempt,
            attemptedAt: r.now,
            durationMs: r.result.durationMs,
            statusCode: r.result.statusCode,
            errorKind: 'errorKind' in r.result ? r.result.errorKind : null,
            responseBody: 'responseBody' in r.result ? r.result.responseBody : null,
            status: r.status,
            lastError: r.error,
            nextAttemptAt: r.nextAttemptAt,
          })),
        );
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

/** A failed attempt's error as recorded: its status, and the wait the receiver asked for, if any. */
function httpError(statusCode: number, retryAfterMs: number | undefined): string {
  return retryAfterMs === undefined ? `HTTP ${statusCode}` : `HTTP ${statusCode} (Retry-After: ${Math.ceil(retryAfterMs / 1000)} s)`;
}
