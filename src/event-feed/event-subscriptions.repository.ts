import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../identity/principal';
import { queryNamed } from '../database/sql';
import { subscriptionWatermark } from '../delivery/waiting-position.sql';
import { EventKind } from '../events/event-kinds';
import { WebhookEndpointsRepository } from '../webhooks/webhook-endpoints.repository';
import { PayloadMode } from '../webhooks/webhook.types';
import { EventSubscription } from './event-subscription.entity';

/** A subscription to create: its own row and what its endpoint row carries. */
export interface NewSubscription {
  id: string;
  keyId: string;
  name: EventKind;
  arguments: object;
  scope: string;
  filters: { line: string | null; thread: string | null; direction: string | null; label: string | null };
  url: string;
  secretSealed: string;
  mode: PayloadMode;
  messageHistoryCount: number;
  expiresAt: Date;
}

/** A subscription as a refresh sees it, with its endpoint's delivery state. */
export interface SubscriptionState {
  id: string;
  endpointId: string;
  status: 'active' | 'disabled';
  consecutiveFailures: number;
  disabledReason: string | null;
  lastError: string | null;
  lastAttemptAt: Date | null;
  /** Past it the subscription has lapsed: it receives nothing, and a subscribe makes it anew. */
  expiresAt: Date;
}

/** A subscription the sweep deleted: expired, or (`revoked`) live but its credential gone. */
export interface EndedSubscription {
  id: string;
  url: string;
  secretSealed: string;
  revoked: boolean;
}

/**
 * The SQL of MCP Events subscriptions (docs/decisions.md, "Event subscriptions ride on endpoint
 * rows"). Every read and write names the credential: a subscription is only ever found by the
 * key or grant that made it.
 */
@Injectable()
export class EventSubscriptionsRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly endpoints: WebhookEndpointsRepository,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /** Serialises subscribes of one credential (so two at once cannot both pass the cap) and answers how many it holds. */
  async lockKeyAndCount(manager: EntityManager, keyId: string): Promise<number> {
    await queryNamed(manager, `SELECT pg_advisory_xact_lock(hashtextextended(:lock, 0))`, { lock: `event_subscriptions:${keyId}` });
    const [row] = await queryNamed<Array<{ count: number }>>(manager, `SELECT count(*)::int AS count FROM event_subscriptions WHERE key_id = :keyId`, {
      keyId,
    });
    return row.count;
  }

  /** The credential's subscription `id`, with its endpoint's delivery state and its last delivery's outcome; null if it has none. */
  async find(manager: EntityManager, keyId: string, id: string): Promise<SubscriptionState | null> {
    const [row] = await queryNamed<SubscriptionState[]>(
      manager,
      `SELECT s.id, s.endpoint_id AS "endpointId", s.expires_at AS "expiresAt", e.status, e.consecutive_failures AS "consecutiveFailures", e.disabled_reason AS "disabledReason",
              last.last_error AS "lastError", last.last_attempt_at AS "lastAttemptAt"
         FROM event_subscriptions s JOIN webhook_endpoints e ON e.id = s.endpoint_id
         LEFT JOIN LATERAL (SELECT d.last_error, d.last_attempt_at FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.last_attempt_at IS NOT NULL
                             ORDER BY d.created_at DESC, d.id DESC LIMIT 1) last ON TRUE
        WHERE s.id = :id AND s.key_id = :keyId
          FOR UPDATE OF s`,
      { id, keyId },
    );
    return row ?? null;
  }

  /** The endpoint row (purpose event_subscription, all channels: the subscription's filters and credential narrow it) and the subscription; answers the endpoint's id. */
  async insert(manager: EntityManager, caller: Principal, s: NewSubscription): Promise<string> {
    const endpointId = await this.endpoints.insert(manager, caller, {
      url: s.url,
      events: [s.name],
      mode: s.mode,
      messageHistoryCount: s.messageHistoryCount,
      channels: null,
      secretSealed: s.secretSealed,
      signatureVersion: 'v1',
      legacySignature: false,
      keyPair: null,
      purpose: 'event_subscription',
    });
    await manager.getRepository(EventSubscription).insert({
      id: s.id,
      endpointId,
      keyId: s.keyId,
      name: s.name,
      arguments: s.arguments,
      scope: s.scope,
      lineId: s.filters.line,
      thread: s.filters.thread,
      direction: s.filters.direction,
      label: s.filters.label,
      expiresAt: s.expiresAt,
    });
    return endpointId;
  }

  /** The subscription's safe-to-persist watermark now (subscriptionWatermark: the rule each delivery's body follows). */
  async watermark(manager: EntityManager, endpointId: string, orgId: string): Promise<bigint> {
    const [row] = await queryNamed<Array<{ position: string | null }>>(manager, `SELECT ${subscriptionWatermark(':endpointId', ':orgId')}::text AS position`, {
      endpointId,
      orgId,
    });
    return BigInt(row.position ?? '0');
  }

  /** Deletes a lapsed subscription found (and locked) by find, in the caller's transaction: its endpoint row, so its deliveries, go with it. */
  async deleteLapsed(manager: EntityManager, state: SubscriptionState): Promise<void> {
    await queryNamed(manager, `DELETE FROM webhook_endpoints WHERE id = :endpointId`, { endpointId: state.endpointId });
  }

  /**
   * A refresh: the new expiry and secret (the secret is sealed anew; the id does not depend on it),
   * and a disabled endpoint made active again with a fresh failure count (the client says it is
   * back by refreshing).
   */
  async refresh(manager: EntityManager, state: SubscriptionState, secretSealed: string, expiresAt: Date): Promise<void> {
    await queryNamed(manager, `UPDATE event_subscriptions SET expires_at = :expiresAt, updated_at = now() WHERE id = :id`, { id: state.id, expiresAt });
    await queryNamed(
      manager,
      `UPDATE webhook_endpoints SET secret_sealed = :secretSealed, status = 'active', consecutive_failures = 0, failing_since = NULL,
              disabled_reason = NULL, disabled_notice_due = false, failing_notice_sent_at = NULL, updated_at = now()
        WHERE id = :endpointId`,
      { endpointId: state.endpointId, secretSealed },
    );
  }

  /** Deletes the credential's subscription `id` (its endpoint row, so its deliveries, go with it); whether there was one. */
  async delete(keyId: string, id: string): Promise<boolean> {
    const [rows] = await this.dataSource.transaction((manager) =>
      queryNamed<[Array<{ id: string }>, number]>(
        manager,
        `DELETE FROM webhook_endpoints e USING event_subscriptions s WHERE s.endpoint_id = e.id AND s.id = :id AND s.key_id = :keyId RETURNING e.id`,
        { id, keyId },
      ),
    );
    return rows.length > 0;
  }

  /**
   * Deletes up to `limit` subscriptions that expired, or whose credential is gone (a revoked key, a
   * disconnected app), with their endpoint rows and deliveries; answers which.
   */
  async deleteEnded(limit: number): Promise<EndedSubscription[]> {
    const [rows] = await queryNamed<[EndedSubscription[], number]>(
      this.dataSource.manager,
      `WITH ended AS (
         SELECT s.endpoint_id, s.id, s.expires_at > now() AS revoked FROM event_subscriptions s
          WHERE s.expires_at <= now()
             OR NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = s.key_id) AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.id = s.key_id)
          LIMIT :limit)
       DELETE FROM webhook_endpoints e USING ended WHERE e.id = ended.endpoint_id
       RETURNING ended.id, e.url, e.secret_sealed AS "secretSealed", ended.revoked`,
      { limit },
    );
    return rows;
  }
}
