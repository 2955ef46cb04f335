import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { Caller } from '../auth/caller';
import { isForeignKeyViolation, NotFoundError } from '../common/errors';
import { isIsoTimestamp, KeysetCursors } from '../common/keyset-cursor';
import { WebhooksService } from '../webhooks/webhooks.service';
import { visibleDelivery, visibleEndpoint } from '../webhooks/endpoint-visibility';
import { DeliveryQueue } from './delivery-queue';
import { DeliveryStatus, WebhookDelivery } from './webhook-delivery.entity';

export const DELIVERIES_PAGE_SIZE = 25;
const LIST_TOOL = 'list_webhook_deliveries';

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
  nextAttemptAt: string | null;
  resentFromId: string | null;
  createdAt: string;
}

/** `evt_` + 32 lowercase hex: the envelope id and dedup key of one delivery. */
export function newEventId(): string {
  return `evt_${randomBytes(16).toString('hex')}`;
}

/** The delivery log of the caller's endpoints: paging and resending. */
@Injectable()
export class DeliveriesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly webhooks: WebhooksService,
    private readonly queue: DeliveryQueue,
    private readonly cursors: KeysetCursors,
  ) {}

  /**
   * 25 rows, newest first; the cursor is a keyset position (created_at, id), so rows arriving
   * later never shift a page. created_at is kept to the millisecond so it round-trips through JS.
   */
  async list(caller: Caller, endpointId: string, cursor?: string): Promise<{ deliveries: DeliveryView[]; nextCursor: string | null }> {
    await this.webhooks.find(this.dataSource.manager, caller, endpointId);
    const after = cursor === undefined ? undefined : this.cursors.decode(LIST_TOOL, cursor, isIsoTimestamp);
    const rows = await deliveryPageQuery(this.dataSource, caller, endpointId, after).getMany();
    const page = rows.slice(0, DELIVERIES_PAGE_SIZE);
    const last = page[page.length - 1];
    return {
      deliveries: page.map(toDeliveryView),
      nextCursor: rows.length > DELIVERIES_PAGE_SIZE && last ? this.cursors.encode(LIST_TOOL, { key: last.createdAt.toISOString(), id: last.id }) : null,
    };
  }

  /**
   * A new delivery of the same data with a fresh `evt_` id and createdAt, sent now. Only a delivery
   * the caller may see (visibleEndpoint, visibleDelivery); any other reads as not found.
   */
  async resend(caller: Caller, deliveryId: string): Promise<DeliveryView> {
    const repo = this.dataSource.getRepository(WebhookDelivery);
    const endpoint = visibleEndpoint(caller);
    const delivery = visibleDelivery(caller);
    const original = await repo
      .createQueryBuilder('d')
      .innerJoin('webhook_endpoints', 'e', 'e.id = d.endpoint_id')
      .where('d.id = :deliveryId', { deliveryId })
      .andWhere(endpoint.sql, endpoint.parameters)
      .andWhere(delivery.sql, delivery.parameters)
      .getOne();
    if (!original) throw NotFoundError.of('webhook delivery', deliveryId, 'deliveryId');
    const copy = await repo
      .save(
        repo.create({
          eventId: newEventId(),
          endpointId: original.endpointId,
          userId: original.userId,
          sourceEventId: original.sourceEventId,
          lineId: original.lineId,
          resentFromId: original.id,
          eventType: original.eventType,
          mode: original.mode,
          payloadId: original.payloadId, // the same stored payload: nothing is copied
          eventCreatedAt: new Date(),
          status: 'pending',
          attemptCount: 0,
          nextAttemptAt: new Date(),
        }),
      )
      .catch((error: unknown) => {
        // The original (with its endpoint or its payload) was deleted since it was read.
        throw isForeignKeyViolation(error) ? NotFoundError.of('webhook delivery', deliveryId, 'deliveryId') : error;
      });
    // If Redis refuses, the row is owed all the same: the sweep enqueues it.
    await this.queue.enqueue([{ deliveryId: copy.id, endpointId: copy.endpointId, attempt: 1 }]).catch(() => undefined);
    return toDeliveryView(copy);
  }
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

/**
 * One page of an endpoint's deliveries that the caller may see (one more row than a page, to tell
 * whether another follows), newest first.
 */
export function deliveryPageQuery(
  dataSource: DataSource,
  caller: Caller,
  endpointId: string,
  after?: { key: string; id: string },
): SelectQueryBuilder<WebhookDelivery> {
  const visible = visibleDelivery(caller);
  const query = dataSource
    .getRepository(WebhookDelivery)
    .createQueryBuilder('d')
    .select(DELIVERY_VIEW_COLUMNS.map((column) => `d.${column}`))
    .where('d.endpoint_id = :endpointId', { endpointId })
    .andWhere(visible.sql, visible.parameters)
    .orderBy('d.created_at', 'DESC')
    .addOrderBy('d.id', 'DESC')
    .take(DELIVERIES_PAGE_SIZE + 1);
  if (after) query.andWhere('(d.created_at, d.id) < (:key::timestamptz, :id::uuid)', after);
  return query;
}

export function toDeliveryView(d: Pick<WebhookDelivery, (typeof DELIVERY_VIEW_COLUMNS)[number]>): DeliveryView {
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
    nextAttemptAt: d.nextAttemptAt?.toISOString() ?? null,
    resentFromId: d.resentFromId,
    createdAt: d.createdAt.toISOString(),
  };
}
