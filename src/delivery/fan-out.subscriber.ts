import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { PublishedEvent } from '../events/domain-event';
import { OutboxRelay } from '../events/outbox-relay';
import { DeliveriesRepository } from './deliveries.repository';
import { newEventId } from './deliveries.service';
import { DeliveryQueue } from './delivery-queue';
import { holdFanOutShared } from './fan-out-lock.sql';
import { PayloadVariants } from './payloads';

/**
 * Turns each committed event into one delivery row per receiving endpoint. An endpoint receives
 * an event when it is active, subscribes to the kind, belongs to the event's org and:
 * - for a line event: its owner has live access to the line now, and its scope is all channels
 *   or lists that line (a deleted line gives no access and so matches nothing);
 * - for an org-wide event (contact.merged): its scope is all channels.
 * The unique (source event, endpoint) index makes a replayed batch create nothing twice. The
 * endpoints that get the same variant of an event share one stored payload. This is the only
 * place deliveries are made from events (resends and recoveries copy existing deliveries).
 */
@Injectable()
export class FanOutSubscriber implements OnModuleInit {
  constructor(
    private readonly relay: OutboxRelay,
    private readonly deliveries: DeliveriesRepository,
    private readonly queue: DeliveryQueue,
  ) {}

  onModuleInit(): void {
    this.relay.relayed.add('webhook delivery fan-out', (events, manager) => this.handle(events, manager));
  }

  async handle(events: PublishedEvent[], manager: EntityManager): Promise<() => Promise<void>> {
    // First, before the targets are read: a subscription being created waits for this batch to
    // commit, or this batch waits for it and sees it (fan-out-lock.sql.ts).
    await holdFanOutShared(manager);
    const targets = await this.deliveries.fanOutTargets(manager, events);
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
        traceParent: event.traceParent,
      };
    });
    const inserted = await this.deliveries.insertFannedOut(manager, payloads.distinct(), rows);
    return () => this.queue.enqueueBatches(inserted.map((r) => ({ deliveryId: r.id, endpointId: r.endpoint_id, attempt: 1 })));
  }
}
