import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AttachmentUrls } from '../common/attachment-urls';
import { Clock } from '../common/clock';
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
}

interface ClaimedRow extends ClaimedEndpoint {
  id: string;
  event_id: string;
  endpoint_id: string;
  event_type: string;
  mode: string;
  data: object;
  event_created_at: Date;
}

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed' | 'cancelled' | 'skipped';

/** The thrown error that tells Bull an attempt failed (so Bull records it). */
export class DeliveryAttemptFailed extends Error {
  override name = 'DeliveryAttemptFailed';
}

/**
 * One attempt of one delivery, start to end: claim it in the database (so no attempt is sent
 * twice, whatever Redis replays), check the URL again and pin the address, sign the exact bytes,
 * POST, record the attempt, then succeed, schedule the next try, or fail for good.
 */
@Injectable()
export class DeliveryAttemptsService implements OnModuleInit {
  private readonly logger = new Logger(DeliveryAttemptsService.name);
  private readonly maxAttempts: number;

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
    const now = this.clock.now();
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
    const claimed = await this.claim(deliveryId, attempt, now);
    if (!claimed) return 'skipped';
    const { delivery, endpoint } = claimed;
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
    return this.record(delivery, attempt, now, result);
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
   * Takes attempt N of the delivery for this worker, with what sending needs of its endpoint, in
   * one statement; null when it is not due: already done, cancelled, or attempt N was taken
   * before (a replayed or duplicate job), or the endpoint is gone.
   */
  private async claim(deliveryId: string, attempt: number, now: Date): Promise<{ delivery: ClaimedDelivery; endpoint: ClaimedEndpoint } | null> {
    const lease = new Date(now.getTime() + this.config.delivery.timeoutMs + LEASE_MARGIN_MS);
    const [rows]: [Array<ClaimedRow>, number] = await this.dataSource.query(
      `UPDATE webhook_deliveries d
          SET attempt_count = $2, last_attempt_at = $3, next_attempt_at = $4, updated_at = now()
         FROM webhook_endpoints e
        WHERE d.id = $1 AND d.attempt_count = $2 - 1 AND d.status IN ('pending', 'retrying') AND e.id = d.endpoint_id
        RETURNING d.id, d.event_id, d.endpoint_id, d.event_type, d.mode, d.data, d.event_created_at,
                  e.url, e.status, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at`,
      [deliveryId, attempt, now, lease],
    );
    const row = rows?.[0];
    if (!row) return null;
    return {
      delivery: {
        id: row.id, eventId: row.event_id, endpointId: row.endpoint_id, eventType: row.event_type, mode: row.mode, data: row.data,
        eventCreatedAt: row.event_created_at,
      },
      endpoint: row,
    };
  }

  private async record(delivery: ClaimedDelivery, attempt: number, now: Date, result: SendResult): Promise<AttemptOutcome> {
    const retryDelay = result.ok ? undefined : this.config.delivery.retryScheduleMs[attempt - 1];
    let outcome: AttemptOutcome = result.ok ? 'succeeded' : retryDelay === undefined ? 'failed' : 'retrying';
    const nextAttemptAt = outcome === 'retrying' ? new Date(now.getTime() + retryDelay!) : null;
    const error = 'errorKind' in result ? `${result.errorKind}: ${result.error}` : result.ok ? null : `HTTP ${result.statusCode}`;
    await this.dataSource.transaction(async (manager) => {
      // The endpoint is locked before the delivery rows, the order delete_webhook (cascade) and
      // update_webhook (disable, cancel waiting) take them in; the reverse order deadlocks. KEY
      // SHARE conflicts only with deleting the endpoint, so attempts to it do not wait for each
      // other (a failure's counter update then takes the row lock for its own statement).
      const [recorded]: Array<{ endpoint_exists: boolean }> = await manager.query(
        `WITH endpoint AS (SELECT id FROM webhook_endpoints WHERE id = $7 FOR KEY SHARE),
              attempt AS (
                INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body)
                SELECT $1, $6, $8, $9, $3, $10, $11 FROM endpoint
                ON CONFLICT (delivery_id, attempt_number) DO NOTHING),
              delivery AS (
                UPDATE webhook_deliveries
                   SET status = $2, last_status_code = $3, last_error = $4, next_attempt_at = $5, updated_at = now()
                 WHERE id = $1 AND attempt_count = $6 AND status IN ('pending', 'retrying') AND EXISTS (SELECT 1 FROM endpoint))
         SELECT EXISTS (SELECT 1 FROM endpoint) AS endpoint_exists`,
        [
          delivery.id, outcome, result.statusCode, error, nextAttemptAt, attempt, delivery.endpointId, now, result.durationMs,
          'errorKind' in result ? result.errorKind : null, 'responseBody' in result ? result.responseBody : null,
        ],
      );
      if (!recorded?.endpoint_exists) {
        outcome = 'cancelled'; // deleted meanwhile: its deliveries went with it
        return;
      }
      // This failure may disable the endpoint, which cancels its waiting deliveries, this one too.
      if (await this.webhooks.recordAttemptOutcome(delivery.endpointId, result.ok, now, manager)) outcome = 'cancelled';
    });
    if (outcome === 'retrying') {
      // If Redis refuses now, the sweep finds the due row and enqueues it later.
      await this.queue
        .enqueue([{ deliveryId: delivery.id, endpointId: delivery.endpointId, attempt: attempt + 1, delayMs: retryDelay }])
        .catch((e: unknown) => this.logger.warn(`could not schedule retry of ${delivery.id}: ${(e as Error).message}`));
    }
    return outcome;
  }
}
