import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EventSubscriber, PublishedEvent } from '../events/domain-event';
import { OutboxRelay } from '../events/outbox-relay';
import { PayloadMode } from '../webhooks/webhook.types';
import { newEventId } from './deliveries.service';
import { DeliveryQueue } from './delivery-queue';
import { PayloadVariants } from './payloads';

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
 * The unique (source event, endpoint) index makes a replayed batch create nothing twice. The
 * endpoints that get the same variant of an event share one stored payload.
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
    const payloads = new PayloadVariants();
    const rows = targets.map((t) => {
      const event = byId.get(t.outbox_id)!;
      return {
        eventId: newEventId(),
        endpointId: t.endpoint_id,
        userId: t.user_id,
        sourceEventId: event.id,
        lineId: event.lineId,
        type: event.type,
        mode: t.mode,
        digest: payloads.of(event, t.mode, t.message_history_count),
        createdAt: event.occurredAt,
      };
    });
    // Each distinct payload is stored once (or found, when a replay or another event stored the
    // same content before: DO UPDATE, not DO NOTHING, so its id is returned), then the deliveries.
    const stored = payloads.distinct();
    const inserted: Array<{ id: string; endpoint_id: string }> = await manager.query(
      `WITH payload AS (
             INSERT INTO webhook_payloads (digest, data)
             SELECT decode(digest, 'hex'), data FROM unnest($1::text[], $2::json[]) AS p(digest, data)
             ON CONFLICT (digest) DO UPDATE SET data = webhook_payloads.data
             RETURNING id, encode(digest, 'hex') AS digest)
       INSERT INTO webhook_deliveries
         (event_id, endpoint_id, user_id, source_event_id, line_id, event_type, mode, payload_id, event_created_at, status, next_attempt_at)
       SELECT x.event_id, x.endpoint_id, x.user_id, x.source_event_id, x.line_id, x.event_type, x.mode, payload.id, x.created_at, 'pending', now()
         FROM unnest($3::text[], $4::uuid[], $5::uuid[], $6::bigint[], $7::uuid[], $8::text[], $9::text[], $10::text[], $11::timestamptz[])
                AS x(event_id, endpoint_id, user_id, source_event_id, line_id, event_type, mode, digest, created_at)
         JOIN payload ON payload.digest = x.digest
       ON CONFLICT (source_event_id, endpoint_id) WHERE source_event_id IS NOT NULL AND resent_from_id IS NULL DO NOTHING
       RETURNING id, endpoint_id`,
      [
        stored.map((p) => p.digest),
        stored.map((p) => p.json),
        rows.map((r) => r.eventId),
        rows.map((r) => r.endpointId),
        rows.map((r) => r.userId),
        rows.map((r) => r.sourceEventId),
        rows.map((r) => r.lineId),
        rows.map((r) => r.type),
        rows.map((r) => r.mode),
        rows.map((r) => r.digest),
        rows.map((r) => r.createdAt),
      ],
    );
    return () => this.queue.enqueue(inserted.map((r) => ({ deliveryId: r.id, endpointId: r.endpoint_id, attempt: 1 })));
  }
}
