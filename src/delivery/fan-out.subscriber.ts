import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { PublishedEvent } from '../events/domain-event';
import { OutboxRelay } from '../events/outbox-relay';
import { DeliveriesRepository } from './deliveries.repository';
import { DeliveryQueue } from './delivery-queue';
import { holdFanOutShared } from './fan-out-lock.sql';
import { PayloadVariants, StoredPayload } from './payloads';
import { DeliveryProcessor } from './delivery.processor';
import { ClaimedEndpoint, DeliveryAttemptsService, FirstAttempt } from './delivery-attempts.service';
import { PayloadMode } from '../webhooks/webhook.types';

/** An endpoint as a delivery row is made for it: its id, owner and payload shape. */
export interface FanOutEndpoint {
  id: string;
  userId: string;
  mode: PayloadMode;
  messageHistoryCount: number;
}

/**
 * Turns each committed event into one delivery row per receiving endpoint. An endpoint receives
 * an event when it is active, subscribes to the kind, belongs to the event's org and:
 * - for a line event: its owner has live access to the line now, and its scope is all channels
 *   or lists that line (a deleted line gives no access and so matches nothing);
 * - for an org-wide event (contact.merged): its scope is all channels.
 * A replayed batch creates nothing twice (DeliveriesRepository.insertFannedOut). The
 * endpoints that get the same variant of an event share one stored payload. This is the only
 * place deliveries are made from events (resends and recoveries copy existing deliveries).
 */
@Injectable()
export class FanOutSubscriber implements OnModuleInit {
  constructor(
    private readonly relay: OutboxRelay,
    private readonly deliveries: DeliveriesRepository,
    private readonly queue: DeliveryQueue,
    private readonly processor: DeliveryProcessor,
    private readonly attempts: DeliveryAttemptsService,
  ) {}

  onModuleInit(): void {
    this.relay.relayed.add('webhook delivery fan-out', (events, manager) => this.handle(events, manager));
  }

  async handle(events: PublishedEvent[], manager: EntityManager): Promise<() => Promise<void>> {
    // First, before the targets are read: a subscription being created waits for this batch to
    // commit, or this batch waits for it and sees it (fan-out-lock.sql.ts).
    await holdFanOutShared(manager);
    const targets = await this.deliveries.fanOutTargets(manager, events);
    const readAt = Date.now();
    const byId = new Map(events.map((e) => [e.id, e]));
    return this.insert(
      manager,
      targets.map((t) => ({
        event: byId.get(t.outbox_id)!,
        endpoint: {
          id: t.endpoint_id,
          userId: t.user_id,
          mode: t.mode,
          messageHistoryCount: t.message_history_count,
          // A subscription's endpoint is sent what its claim computes (its cursor's watermark).
          ...(t.purpose === 'webhook' ? { sending: { ...t, status: 'active' as const }, readAt } : {}),
        },
      })),
    );
  }

  /**
   * Deliveries of committed events to one endpoint, made as fan-out makes them (in `manager`'s
   * transaction; the step it answers enqueues them once that has committed): events/subscribe's
   * replay from a cursor. The caller chose the events by the endpoint's scope (each attempt's claim
   * checks it again); insertFannedOut keeps an event that fan-out
   * delivered too from having two deliveries.
   */
  deliverTo(manager: EntityManager, endpoint: FanOutEndpoint, events: PublishedEvent[]): Promise<() => Promise<void>> {
    return this.insert(
      manager,
      events.map((event) => ({ event, endpoint })),
    );
  }

  /**
   * One delivery row per (event, endpoint), payloads shared by variant; after the commit, their
   * first attempts are handed to this process's worker (DeliveryProcessor.handOverHere) or, where
   * it runs none or past what it takes, put in batch jobs. The attempts of endpoints read here
   * (`sending`) go with what sending them needs, so their claim need not read it again
   * (FirstAttempt).
   */
  private async insert(manager: EntityManager, pairs: Array<{ event: PublishedEvent; endpoint: ReadEndpoint }>): Promise<() => Promise<void>> {
    if (pairs.length === 0) return async () => undefined;
    const payloads = new PayloadVariants();
    const rows = pairs.map(({ event, endpoint }) => ({
      endpointId: endpoint.id,
      userId: endpoint.userId,
      sourceEventId: event.id,
      lineId: event.lineId,
      type: event.type,
      mode: endpoint.mode,
      digest: payloads.of(event, endpoint.mode, endpoint.messageHistoryCount),
      createdAt: event.occurredAt,
      traceParent: event.traceParent,
    }));
    const stored = payloads.distinct();
    const inserted = await this.deliveries.insertFannedOut(manager, stored, rows);
    const firstAttempts = this.firstAttempts(pairs, inserted, stored, rows);
    const batch = inserted.map((r) => ({ deliveryId: r.id, endpointId: r.endpoint_id, attempt: 1 }));
    return async () => {
      if (!this.processor.takesHandOvers()) return this.queue.enqueueBatches(batch);
      // Kept first: an attempt the hand-over starts looks for its own at once. Those that go to
      // Redis are kept too: this process's worker takes most of their jobs within
      // FIRST_ATTEMPT_FRESH_MS, and another worker's claim reads everything anyway.
      this.attempts.keepFirstAttempts(firstAttempts);
      const taken = this.processor.handOverHere(batch);
      if (taken < batch.length) await this.queue.enqueueBatches(batch.slice(taken));
    };
  }

  /** What sending each inserted delivery to an endpoint read here needs, its payload parsed once per variant. */
  private firstAttempts(
    pairs: Array<{ event: PublishedEvent; endpoint: ReadEndpoint }>,
    inserted: Array<{ id: string; endpoint_id: string; event_id: string; source_event_id: string }>,
    stored: StoredPayload[],
    rows: Array<{ digest: string }>,
  ): FirstAttempt[] {
    if (!pairs.some((p) => p.endpoint.sending)) return [];
    const byPair = new Map(pairs.map((pair, i) => [`${pair.event.id}:${pair.endpoint.id}`, { ...pair, digest: rows[i].digest }]));
    const json = new Map(stored.map((p) => [p.digest, p.json]));
    const parsed = new Map<string, object>();
    const attempts: FirstAttempt[] = [];
    for (const row of inserted) {
      const pair = byPair.get(`${row.source_event_id}:${row.endpoint_id}`);
      const { sending, readAt } = pair?.endpoint ?? {};
      if (!pair || !sending || readAt === undefined) continue;
      let data = parsed.get(pair.digest);
      if (!data) parsed.set(pair.digest, (data = JSON.parse(json.get(pair.digest)!) as object));
      attempts.push({
        readAt,
        endpoint: sending,
        delivery: {
          id: row.id,
          eventId: row.event_id,
          endpointId: row.endpoint_id,
          userId: pair.endpoint.userId,
          eventType: pair.event.type,
          mode: pair.endpoint.mode,
          data,
          eventCreatedAt: pair.event.occurredAt,
          traceParent: pair.event.traceParent,
          sourceEventId: row.source_event_id,
          subscription: null,
        },
      });
    }
    return attempts;
  }
}

/** An endpoint as fan-out read it: with what sending to it needs, when read in fan-out's transaction. */
interface ReadEndpoint extends FanOutEndpoint {
  sending?: ClaimedEndpoint;
  readAt?: number;
}
