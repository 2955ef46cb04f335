import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EventSubscriber, PublishedEvent } from '../events/domain-event';
import { OutboxRelay } from '../events/outbox-relay';
import { PayloadMode } from '../webhooks/webhook.types';
import { newEventId } from './deliveries.service';
import { DeliveryQueue } from './delivery-queue';
import { buildEventData } from './payloads';

interface Target {
  outbox_id: string;
  endpoint_id: string;
  user_id: string;
  mode: PayloadMode;
  message_history_count: number;
}

/**
 * Turns each committed event into one delivery row per receiving endpoint. An endpoint receives
 * an event when it is active, subscribes to the kind, belongs to the event's org and:
 * - for a line event: its owner has live access to the line now, and its scope is all channels
 *   or lists that line (a deleted line gives no access and so matches nothing);
 * - for an org-wide event (contact.merged): its scope is all channels.
 * The unique (source event, endpoint) index makes a replayed batch create nothing twice.
 */
@Injectable()
export class FanOutSubscriber implements EventSubscriber, OnModuleInit {
  readonly name = 'webhook-delivery';

  constructor(
    private readonly relay: OutboxRelay,
    private readonly queue: DeliveryQueue,
  ) {}

  onModuleInit(): void {
    this.relay.subscribe(this);
  }

  async handle(events: PublishedEvent[], manager: EntityManager): Promise<() => Promise<void>> {
    const targets: Target[] = await manager.query(
      `SELECT o.id::text AS outbox_id, e.id AS endpoint_id, e.user_id, e.mode, e.message_history_count
         FROM unnest($1::bigint[], $2::text[], $3::uuid[], $4::uuid[]) AS o(id, type, org_id, line_id)
         JOIN webhook_endpoints e ON e.org_id = o.org_id AND e.status = 'active' AND o.type = ANY (e.events)
        WHERE CASE
          WHEN o.line_id IS NULL THEN e.all_channels
          ELSE EXISTS (
                 SELECT 1 FROM line_memberships m JOIN lines l ON l.id = m.line_id AND l.deleted_at IS NULL
                  WHERE m.user_id = e.user_id AND m.line_id = o.line_id)
               AND (e.all_channels OR EXISTS (
                 SELECT 1 FROM webhook_endpoint_channels c WHERE c.endpoint_id = e.id AND c.line_id = o.line_id))
        END`,
      [events.map((e) => e.id), events.map((e) => e.type), events.map((e) => e.orgId), events.map((e) => e.lineId)],
    );
    if (targets.length === 0) return async () => undefined;
    const byId = new Map(events.map((e) => [e.id, e]));
    const rows = targets.map((t) => {
      const event = byId.get(t.outbox_id)!;
      return {
        eventId: newEventId(),
        endpointId: t.endpoint_id,
        userId: t.user_id,
        sourceEventId: event.id,
        type: event.type,
        mode: t.mode,
        data: JSON.stringify(buildEventData(event.type, event.data, t.mode, t.message_history_count)),
        createdAt: event.occurredAt,
      };
    });
    const inserted: Array<{ id: string; endpoint_id: string }> = await manager.query(
      `INSERT INTO webhook_deliveries
         (event_id, endpoint_id, user_id, source_event_id, event_type, mode, data, event_created_at, status, next_attempt_at)
       SELECT *, 'pending', now() FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::bigint[], $5::text[], $6::text[], $7::json[], $8::timestamptz[])
       ON CONFLICT (source_event_id, endpoint_id) WHERE source_event_id IS NOT NULL AND resent_from_id IS NULL DO NOTHING
       RETURNING id, endpoint_id`,
      [
        rows.map((r) => r.eventId),
        rows.map((r) => r.endpointId),
        rows.map((r) => r.userId),
        rows.map((r) => r.sourceEventId),
        rows.map((r) => r.type),
        rows.map((r) => r.mode),
        rows.map((r) => r.data),
        rows.map((r) => r.createdAt),
      ],
    );
    return () => this.queue.enqueue(inserted.map((r) => ({ deliveryId: r.id, endpointId: r.endpoint_id, attempt: 1 })));
  }
}
