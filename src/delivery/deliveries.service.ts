import { Injectable } from '@nestjs/common';
import { Principal } from '../identity/principal';
import { Clock } from '../common/clock';
import { ConflictError, isForeignKeyViolation, NotFoundError, ValidationError } from '../common/errors';
import { isIsoTimestamp, KeysetCursors } from '../common/keyset-cursor';
import { nextOffsetOf, RESULT_BOUNDS, textWindow } from '../common/result-bounds';
import { activeTraceParent } from '../ops/tracing/traces';
import { WebhooksService } from '../webhooks/webhooks.service';
import { AttemptDetailRow, DeliveriesRepository, DeliveryRow } from './deliveries.repository';
import { DeliveryQueue } from './delivery-queue';
import { OrgDeliveryLogRetention } from './org-delivery-log-retention';
import { DeliveryStatus } from './webhook-delivery.entity';

export const DELIVERIES_PAGE_SIZE = 25;
const LIST_TOOL = 'list_webhook_deliveries';
/** Failed deliveries one recover_webhook_deliveries call resends at most (oldest first; the rest: call again). */
export const RECOVER_MAX_DELIVERIES = 1000;
/** The longest window one recovery covers. */
export const RECOVER_MAX_WINDOW_DAYS = 7;
const DAY_MS = 86_400_000;

export interface DeliveryView {
  id: string;
  eventId: string;
  endpointId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  lastAttemptAt: string | null;
  /** How long the last attempt took (sending to the whole response, or to the error); null before the first. */
  lastDurationMs: number | null;
  nextAttemptAt: string | null;
  resentFromId: string | null;
  createdAt: string;
}

/** One delivery with its envelope (as stored: attachment links are signed per attempt, not stored) and every attempt, oldest first. */
export interface DeliveryDetail {
  delivery: DeliveryView & { recoveredAt: string | null };
  /** Whole when its JSON text is at most RESULT_BOUNDS.envelopeChars and no window was asked for; otherwise null, and envelopeText has a window of that text. */
  envelope: Envelope | null;
  /** The length of the envelope's JSON text (JSON.stringify, no spaces), in Unicode code points. */
  envelopeLength: number;
  envelopeText: string | null;
  /** Where the next window of envelopeText starts; null at the end and when the envelope is whole. */
  nextOffset: number | null;
  attempts: AttemptView[];
}

export interface Envelope {
  id: string;
  type: string;
  createdAt: string;
  endpointId: string;
  mode: string;
  data: object;
}

export interface AttemptView {
  attemptNumber: number;
  attemptedAt: string;
  durationMs: number;
  statusCode: number | null;
  errorKind: string | null;
  /** The first 2 KB (2048 bytes) of the response body, as stored; null when none was read. */
  responseBody: string | null;
}

export interface RecoverResult {
  endpointId: string;
  since: string;
  until: string;
  queued: number;
  /** True when failed deliveries of the window were left over (more than RECOVER_MAX_DELIVERIES): call again from nextSince. */
  truncated: boolean;
  nextSince: string | null;
}

/** The delivery log of the caller's endpoints: paging and resending. */
@Injectable()
export class DeliveriesService {
  constructor(
    private readonly deliveries: DeliveriesRepository,
    private readonly webhooks: WebhooksService,
    private readonly queue: DeliveryQueue,
    private readonly cursors: KeysetCursors,
    private readonly clock: Clock,
    private readonly retention: OrgDeliveryLogRetention,
  ) {}

  /**
   * 25 rows, newest first; the cursor is a keyset position (created_at, id), so rows arriving
   * later never shift a page. created_at is kept to the millisecond so it round-trips through JS.
   */
  async list(
    caller: Principal,
    endpointId: string,
    cursor?: string,
    status?: DeliveryStatus,
  ): Promise<{ deliveries: DeliveryView[]; nextCursor: string | null }> {
    await this.webhooks.get(caller, endpointId); // not found unless the caller may see the endpoint
    const after = cursor === undefined ? undefined : this.cursors.decode(LIST_TOOL, cursor, isIsoTimestamp);
    const rows = await this.deliveries.page(caller, endpointId, DELIVERIES_PAGE_SIZE + 1, after, status);
    const page = rows.slice(0, DELIVERIES_PAGE_SIZE);
    const last = page[page.length - 1];
    const durations = await this.deliveries.lastAttemptDurations(page.map((d) => d.id));
    return {
      deliveries: page.map((d) => toDeliveryView(d, durations.get(d.id) ?? null)),
      nextCursor: rows.length > DELIVERIES_PAGE_SIZE && last ? this.cursors.encode(LIST_TOOL, { key: last.createdAt.toISOString(), id: last.id }) : null,
    };
  }

  /**
   * A new delivery of the same data with a fresh `evt_` id and createdAt, sent now. Only a delivery
   * the caller may see (visibleEndpoint, visibleDelivery); any other reads as not found.
   */
  async resend(caller: Principal, deliveryId: string): Promise<DeliveryView> {
    const original = await this.deliveries.findVisible(caller, deliveryId);
    if (!original) throw NotFoundError.of('webhook delivery', deliveryId, 'deliveryId');
    const copy = await this.deliveries.insertResend(original, activeTraceParent()).catch((error: unknown) => {
      // The original's endpoint was deleted since it was read.
      throw isForeignKeyViolation(error) ? NotFoundError.of('webhook delivery', deliveryId, 'deliveryId') : error;
    });
    // The original (with its payload) was deleted since it was read.
    if (!copy) throw NotFoundError.of('webhook delivery', deliveryId, 'deliveryId');
    // If Redis refuses, the row is owed all the same: the sweep enqueues it.
    await this.queue.enqueue([{ deliveryId: copy.id, endpointId: copy.endpointId, attempt: 1 }]).catch(() => undefined);
    return toDeliveryView(copy);
  }

  /**
   * One delivery the caller may see, with its envelope and every attempt; any other reads as not
   * found. A long envelope (a verbose event with a long history) comes as its JSON text, a window
   * at a time, so that the answer fits in an agent's context (docs/mcp.md, "Result sizes").
   */
  async detail(caller: Principal, deliveryId: string, window: { offset?: number; maxChars?: number } = {}): Promise<DeliveryDetail> {
    const row = await this.deliveries.findDetail(caller, deliveryId);
    if (!row) throw NotFoundError.of('webhook delivery', deliveryId, 'deliveryId');
    const attempts = await this.deliveries.attemptsOf(caller, deliveryId);
    const envelope: Envelope = {
      id: row.eventId,
      type: row.eventType,
      createdAt: row.eventCreatedAt.toISOString(),
      endpointId: row.endpointId,
      mode: row.mode,
      data: row.data,
    };
    const { offset = 0, maxChars = RESULT_BOUNDS.envelopeTextChars } = window;
    const text = textWindow(JSON.stringify(envelope), offset, maxChars);
    const whole = window.offset === undefined && window.maxChars === undefined && text.length <= RESULT_BOUNDS.envelopeChars;
    return {
      delivery: { ...toDeliveryView(row, attempts.at(-1)?.durationMs ?? null), recoveredAt: row.recoveredAt?.toISOString() ?? null },
      envelope: whole ? envelope : null,
      envelopeLength: text.length,
      envelopeText: whole ? null : text.window,
      nextOffset: whole ? null : nextOffsetOf({ offset, maxChars }, { of: 'envelope text', name: 'envelopeLength', value: text.length }),
      attempts: attempts.map(toAttemptView),
    };
  }

  /**
   * Resends each `failed` delivery of the endpoint whose event time is in [since, until) (until
   * defaults to now) once, as resend does: a new delivery of the same payload with a new evt_ id,
   * sent now. A delivery already recovered, or resent by hand, is not resent again, so a second
   * call over an overlapping window queues only what failed since. At most 7 days, since within
   * the log's retention, at most 1,000 deliveries a call (oldest first; truncated says more are
   * left, from nextSince). The endpoint must be one the caller sees (else not found) and active.
   */
  async recover(caller: Principal, endpointId: string, sinceArg: string, untilArg?: string): Promise<RecoverResult> {
    const now = this.clock.now();
    const since = new Date(sinceArg);
    const until = untilArg === undefined ? now : new Date(untilArg);
    // The schema checked the form (RFC 3339 date-time); what Date cannot hold is refused as well.
    if (Number.isNaN(since.getTime())) throw new ValidationError('since must be an ISO 8601 date-time such as 2026-01-31T09:00:00Z', 'since');
    if (Number.isNaN(until.getTime())) throw new ValidationError('until must be an ISO 8601 date-time such as 2026-01-31T10:00:00Z', 'until');
    if (since > now) throw new ValidationError(`since (${since.toISOString()}) must not be in the future`, 'since');
    if (since > until) throw new ValidationError(`since (${since.toISOString()}) must not be after until (${until.toISOString()})`, 'since');
    if (until.getTime() - since.getTime() > RECOVER_MAX_WINDOW_DAYS * DAY_MS) {
      throw new ValidationError(
        `the window from since to until may be at most ${RECOVER_MAX_WINDOW_DAYS} days; recover a longer period in several calls`,
        untilArg === undefined ? 'since' : 'until',
      );
    }
    // The caller's org's retention (its own, when shorter than the installation's): older deliveries are deleted.
    const retentionDays = await this.retention.daysOf(caller.orgId);
    if (retentionDays > 0) {
      const oldest = new Date(now.getTime() - retentionDays * DAY_MS);
      if (since < oldest) {
        throw new ValidationError(
          `since must be within the delivery log's retention of ${retentionDays} days: not before ${oldest.toISOString()} (older deliveries are deleted)`,
          'since',
        );
      }
    }
    const endpoint = await this.webhooks.get(caller, endpointId); // not found unless the caller may see the endpoint
    if (endpoint.status !== 'active') {
      throw new ConflictError(
        `webhook endpoint ${endpointId} is ${endpoint.status}: a recovery would only be cancelled; turn it back on with update_webhook (status "active") first`,
      );
    }
    const copies = await this.deliveries.recoverFailed(caller, endpointId, since, until, RECOVER_MAX_DELIVERIES, activeTraceParent());
    // If Redis refuses, the rows are owed all the same: the sweep enqueues them.
    await this.queue.enqueueBatches(copies.map((c) => ({ deliveryId: c.id, endpointId: c.endpointId, attempt: 1 }))).catch(() => undefined);
    const nextSince = copies[0]?.nextSince ?? null;
    return {
      endpointId,
      since: since.toISOString(),
      until: until.toISOString(),
      queued: copies.length,
      truncated: nextSince !== null,
      nextSince: nextSince?.toISOString() ?? null,
    };
  }
}

function toAttemptView(a: AttemptDetailRow): AttemptView {
  return {
    attemptNumber: a.attemptNumber,
    attemptedAt: a.attemptedAt.toISOString(),
    durationMs: a.durationMs,
    statusCode: a.statusCode,
    errorKind: a.errorKind,
    responseBody: a.responseBody,
  };
}

export function toDeliveryView(d: DeliveryRow, lastDurationMs: number | null = null): DeliveryView {
  return {
    id: d.id,
    eventId: d.eventId,
    endpointId: d.endpointId,
    eventType: d.eventType,
    status: d.status,
    attempts: d.attemptCount,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    lastAttemptAt: d.lastAttemptAt?.toISOString() ?? null,
    lastDurationMs,
    nextAttemptAt: d.nextAttemptAt?.toISOString() ?? null,
    resentFromId: d.resentFromId,
    createdAt: d.createdAt.toISOString(),
  };
}
