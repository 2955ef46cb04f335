import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { LineType } from '../identity/account.types';
import { Principal } from '../identity/principal';
import { queryNamed } from '../database/sql';
import { visibleEndpoint } from './endpoint-visibility';
import { END_RUN, RUNS_ENDED_BY_ANSWERS } from './failing-runs.sql';
import { WebhookEndpointChannel } from './webhook-endpoint-channel.entity';
import { WebhookEndpoint } from './webhook-endpoint.entity';
import { ChannelScope, EndpointPurpose, EndpointStatus, EventKind, PayloadMode, SignatureVersion } from './webhook.types';

/** An endpoint as tools show it: no secrets, no failure counters. */
export interface EndpointView {
  id: string;
  url: string;
  events: EventKind[];
  mode: PayloadMode;
  messageHistoryCount: number;
  status: EndpointStatus;
  channelScope: ChannelScope;
  /** The version of the webhook-signature entries: v1 (HMAC with the secret) or v1a (ed25519). */
  signatureVersion: SignatureVersion;
  /** Whether deliveries still carry the legacy X-Service-Signature header. */
  legacySignature: boolean;
  /** v1a: the public key (`whpk_`) that verifies the v1a entries; null for v1. */
  publicKey: string | null;
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A v1a endpoint's ed25519 key pair as stored: the private key sealed, the public key as `whpk_`. */
export interface StoredKeyPair {
  sealed: string;
  publicKey: string;
}

/** An endpoint's current signing material, locked for a rotation. */
export interface LockedSigning {
  secretSealed: string;
  keyPair: StoredKeyPair | null;
}

/** What a new endpoint is made of (rules applied: URL checked, scope resolved, secret sealed). */
export interface NewEndpoint {
  url: string;
  events: EventKind[];
  mode: PayloadMode;
  messageHistoryCount: number;
  /** null: all channels. */
  channels: Array<{ channelType: LineType; channelId: string }> | null;
  secretSealed: string;
  signatureVersion: SignatureVersion;
  legacySignature: boolean;
  /** v1a: the key pair; null for v1. */
  keyPair: StoredKeyPair | null;
  /** `webhook` unless told: an MCP Events subscription's endpoint row says `event_subscription`. */
  purpose?: EndpointPurpose;
}

/** An endpoint's current failing run, as the web app shows it. */
export interface FailingRunView {
  since: string;
  failures: number;
}

/** What an email to an endpoint's owner says. */
export interface EndpointNotice {
  id: string;
  url: string;
  status: EndpointStatus;
  disabledReason: string | null;
  failingSince: Date | null;
  consecutiveFailures: number;
  /** True: the service disabled it (the disabled notice); false: it has been failing for an hour. */
  disabledNoticeDue: boolean;
  ownerEmail: string;
}

/** An endpoint's failed attempts of one batch, counted towards auto-disable. */
export interface FailureCount {
  endpointId: string;
  count: number;
  /** When the earliest of them started: the start of a failing run if none was under way. */
  firstAt: Date;
}

/** An endpoint's failing run after a batch of failures was added. */
export interface FailingRun {
  id: string;
  consecutiveFailures: number;
  failingSince: Date;
  status: EndpointStatus;
}

/**
 * Every SQL statement about webhook endpoints. A method that reads or changes a user's endpoints
 * takes the `Principal` and carries its visibility condition (visibleEndpoint), so a statement
 * without the tenant filter cannot be written through here; the delivery bookkeeping methods at
 * the end act for the worker, on endpoint ids it already holds. Rules live in WebhooksService.
 */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The hot path of the tool endpoint (list_webhooks): one plain statement, no ORM. */
  async listVisible(caller: Principal): Promise<EndpointView[]> {
    const visible = visibleEndpoint(caller);
    const rows = await queryNamed<EndpointViewRow[]>(
      this.dataSource.manager,
      `${VIEW_SELECT} WHERE ${visible.sql} ORDER BY e.created_at, e.id`,
      visible.parameters,
    );
    return rows.map(toView);
  }

  async getVisible(caller: Principal, endpointId: string, manager: EntityManager = this.dataSource.manager): Promise<EndpointView | null> {
    const visible = visibleEndpoint(caller);
    const [row] = await queryNamed<EndpointViewRow[]>(manager, `${VIEW_SELECT} WHERE e.id = :endpointId AND ${visible.sql}`, {
      endpointId,
      ...visible.parameters,
    });
    return row ? toView(row) : null;
  }

  /** The visible endpoint's failing run (when its attempts began failing, how many in a row); null when in none or not visible. */
  async failingRunVisible(caller: Principal, endpointId: string): Promise<FailingRunView | null> {
    const visible = visibleEndpoint(caller);
    const [row] = await queryNamed<Array<{ since: Date; failures: number }>>(
      this.dataSource.manager,
      `SELECT e.failing_since AS since, e.consecutive_failures AS failures FROM webhook_endpoints e
        WHERE e.id = :endpointId AND e.failing_since IS NOT NULL AND ${visible.sql}`,
      { endpointId, ...visible.parameters },
    );
    return row ? { since: row.since.toISOString(), failures: row.failures } : null;
  }

  /** The visible endpoint as an entity with its scope, its row locked for update; null when not visible. */
  async lockVisible(manager: EntityManager, caller: Principal, endpointId: string): Promise<WebhookEndpoint | null> {
    const visible = visibleEndpoint(caller);
    const [locked] = await queryNamed<Array<{ id: string }>>(
      manager,
      `SELECT e.id FROM webhook_endpoints e WHERE e.id = :endpointId AND ${visible.sql} FOR UPDATE`,
      { endpointId, ...visible.parameters },
    );
    if (!locked) return null;
    return manager.getRepository(WebhookEndpoint).findOne({ where: { id: endpointId }, relations: { channels: true } });
  }

  /** Locks the visible endpoint row and answers its sealed current secret and key pair; null when not visible. */
  async lockSigning(manager: EntityManager, caller: Principal, endpointId: string): Promise<LockedSigning | null> {
    const visible = visibleEndpoint(caller);
    const [row] = await queryNamed<Array<{ secret_sealed: string; signing_key_sealed: string | null; public_key: string | null }>>(
      manager,
      `SELECT e.secret_sealed, e.signing_key_sealed, e.public_key FROM webhook_endpoints e WHERE e.id = :endpointId AND ${visible.sql} FOR UPDATE`,
      { endpointId, ...visible.parameters },
    );
    if (!row) return null;
    return {
      secretSealed: row.secret_sealed,
      keyPair: row.signing_key_sealed && row.public_key ? { sealed: row.signing_key_sealed, publicKey: row.public_key } : null,
    };
  }

  /** A rotation: new secret (and key pair, for v1a); the current ones become the previous ones until `previousExpiresAt`. */
  async rotateSigning(
    manager: EntityManager,
    endpointId: string,
    next: { secretSealed: string; keyPair: StoredKeyPair | null; previous: LockedSigning; previousExpiresAt: Date },
  ): Promise<void> {
    await manager.update(
      WebhookEndpoint,
      { id: endpointId },
      {
        secretSealed: next.secretSealed,
        previousSecretSealed: next.previous.secretSealed,
        previousSecretExpiresAt: next.previousExpiresAt,
        signingKeySealed: next.keyPair?.sealed ?? null,
        publicKey: next.keyPair?.publicKey ?? null,
        previousSigningKeySealed: next.keyPair ? (next.previous.keyPair?.sealed ?? null) : null,
        previousPublicKey: next.keyPair ? (next.previous.keyPair?.publicKey ?? null) : null,
      },
    );
  }

  /**
   * A change of signature version: v1a with its key pair, or v1 (null), which drops the key pairs,
   * current and previous, so a key that no longer signs is no longer published.
   */
  async setSignatureVersion(manager: EntityManager, endpointId: string, version: SignatureVersion, keyPair: StoredKeyPair | null): Promise<void> {
    await manager.update(
      WebhookEndpoint,
      { id: endpointId },
      {
        signatureVersion: version,
        signingKeySealed: keyPair?.sealed ?? null,
        publicKey: keyPair?.publicKey ?? null,
        previousSigningKeySealed: null,
        previousPublicKey: null,
      },
    );
  }

  /**
   * The public keys a v1a endpoint signs with now, current first (the previous one while its 24 h
   * run); empty for an unknown or v1 endpoint. Public on purpose: the JWK Set route answers anyone.
   */
  async publicKeys(endpointId: string, now: Date): Promise<string[]> {
    const [row] = await queryNamed<Array<{ public_key: string | null; previous_public_key: string | null; previous_secret_expires_at: Date | null }>>(
      this.dataSource.manager,
      `SELECT public_key, previous_public_key, previous_secret_expires_at FROM webhook_endpoints
        WHERE id = :endpointId AND signature_version = 'v1a'`,
      { endpointId },
    );
    if (!row?.public_key) return [];
    const previousValid = row.previous_public_key !== null && row.previous_secret_expires_at !== null && row.previous_secret_expires_at > now;
    return previousValid ? [row.public_key, row.previous_public_key!] : [row.public_key];
  }

  /** Deletes the visible endpoint (its scope and deliveries cascade); false when not visible. */
  async deleteVisible(caller: Principal, endpointId: string): Promise<boolean> {
    const visible = visibleEndpoint(caller);
    // A DELETE answers [rows, affected count]. In a transaction of its own: its commit carries the call's audit row (src/audit).
    const [, affected] = await this.dataSource.transaction((manager) =>
      queryNamed<[unknown[], number]>(manager, `DELETE FROM webhook_endpoints e WHERE e.id = :endpointId AND ${visible.sql}`, {
        endpointId,
        ...visible.parameters,
      }),
    );
    return affected > 0;
  }

  /** Serialises the caller's registrations (its user row locked), then counts the endpoints it owns. */
  async lockOwnerAndCount(manager: EntityManager, caller: Principal): Promise<number> {
    await queryNamed(manager, 'SELECT id FROM users WHERE id = :userId FOR UPDATE', { userId: caller.userId });
    return manager.getRepository(WebhookEndpoint).countBy({ userId: caller.userId, purpose: 'webhook' });
  }

  /** A new active endpoint of the caller; answers its id. */
  async insert(manager: EntityManager, caller: Principal, endpoint: NewEndpoint): Promise<string> {
    const repo = manager.getRepository(WebhookEndpoint);
    const saved = await repo.save(
      repo.create({
        userId: caller.userId,
        orgId: caller.orgId,
        url: endpoint.url,
        events: endpoint.events,
        mode: endpoint.mode,
        messageHistoryCount: endpoint.messageHistoryCount,
        status: 'active',
        allChannels: endpoint.channels === null,
        channels: (endpoint.channels ?? []).map((c) => ({ lineId: c.channelId, channelType: c.channelType })),
        secretSealed: endpoint.secretSealed,
        previousSecretSealed: null,
        previousSecretExpiresAt: null,
        signatureVersion: endpoint.signatureVersion,
        legacySignature: endpoint.legacySignature,
        signingKeySealed: endpoint.keyPair?.sealed ?? null,
        publicKey: endpoint.keyPair?.publicKey ?? null,
        previousSigningKeySealed: null,
        previousPublicKey: null,
        consecutiveFailures: 0,
        failingSince: null,
        disabledNoticeDue: false,
        failingNoticeSentAt: null,
        disabledReason: null,
        purpose: endpoint.purpose ?? 'webhook',
      }),
    );
    return saved.id;
  }

  /** Writes an endpoint read with lockVisible; `channels` given replaces its scope wholesale. */
  async save(manager: EntityManager, endpoint: WebhookEndpoint, channels?: Array<{ channelType: LineType; channelId: string }> | null): Promise<void> {
    if (channels !== undefined) {
      await manager.delete(WebhookEndpointChannel, { endpointId: endpoint.id });
      endpoint.allChannels = channels === null;
      endpoint.channels = (channels ?? []).map((c) =>
        Object.assign(new WebhookEndpointChannel(), { endpointId: endpoint.id, lineId: c.channelId, channelType: c.channelType }),
      );
    }
    await manager.getRepository(WebhookEndpoint).save(endpoint);
  }

  /**
   * Locks endpoints in id order (the order every writer of several endpoints uses: update_webhook,
   * delete_webhook's cascade), before any of their delivery rows; answers the ids that still exist.
   */
  async lockForFailureCount(manager: EntityManager, endpointIds: string[]): Promise<Set<string>> {
    const rows = await queryNamed<Array<{ id: string }>>(
      manager,
      'SELECT id FROM webhook_endpoints WHERE id = ANY (:endpointIds::uuid[]) ORDER BY id FOR NO KEY UPDATE',
      { endpointIds },
    );
    return new Set(rows.map((r) => r.id));
  }

  /** Adds failures to each endpoint's run (starting one where none was under way); answers the runs, in id order. */
  async addFailures(manager: EntityManager, failures: FailureCount[]): Promise<FailingRun[]> {
    // For UPDATE ... RETURNING, TypeORM's postgres driver answers [rows, affectedCount], not rows.
    const [rows] = await queryNamed<[Array<{ id: string; consecutive_failures: number; failing_since: Date; status: EndpointStatus }>, number]>(
      manager,
      `UPDATE webhook_endpoints w
          SET consecutive_failures = w.consecutive_failures + x.count, failing_since = COALESCE(w.failing_since, x.first_at)
         FROM unnest(:ids::uuid[], :counts::int[], :firstAts::timestamptz[]) AS x(id, count, first_at)
        WHERE w.id = x.id
        RETURNING w.id, w.consecutive_failures, w.failing_since, w.status`,
      { ids: failures.map((f) => f.endpointId), counts: failures.map((f) => f.count), firstAts: failures.map((f) => f.firstAt) },
    );
    return (rows ?? [])
      .map((r) => ({ id: r.id, consecutiveFailures: r.consecutive_failures, failingSince: new Date(r.failing_since), status: r.status }))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /**
   * Ends the failing runs that began before each endpoint's latest answered success: one
   * statement per endpoint (failing-runs.sql.ts says why), in id order; answers how many ended.
   */
  async endRunsAnsweredBefore(latest: Map<string, Date>): Promise<number> {
    const due = await queryNamed<Array<{ id: string; at: Date }>>(this.dataSource.manager, RUNS_ENDED_BY_ANSWERS, {
      endpointIds: [...latest.keys()],
      answeredAts: [...latest.values()],
    });
    let ended = 0;
    for (const { id, at } of due) {
      const [, count] = await queryNamed<[unknown[], number]>(this.dataSource.manager, END_RUN, { endpointId: id, at });
      ended += count;
    }
    return ended;
  }

  /** Every endpoint of every org, counted by status (metrics). */
  async countByStatus(): Promise<Record<string, number>> {
    const rows = await this.dataSource.query<Array<{ status: string; count: number }>>(
      'SELECT status, count(*)::int AS count FROM webhook_endpoints GROUP BY status',
    );
    return Object.fromEntries(rows.map((row) => [row.status, row.count]));
  }

  /** Disabled by the service (auto-disable): its owner is to be told (disabled_notice_due). */
  async disable(manager: EntityManager, endpointId: string, reason: string): Promise<void> {
    await queryNamed(
      manager,
      `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = :reason, disabled_notice_due = true, updated_at = now() WHERE id = :endpointId`,
      { endpointId, reason },
    );
  }

  /** Active endpoints failing since `before` or earlier, locked in id order (others' locks skipped). */
  async lockFailingSince(manager: EntityManager, before: Date): Promise<Array<{ id: string; failingSince: Date; consecutiveFailures: number }>> {
    const rows = await queryNamed<Array<{ id: string; failing_since: Date; consecutive_failures: number }>>(
      manager,
      `SELECT id, failing_since, consecutive_failures FROM webhook_endpoints
        WHERE status = 'active' AND failing_since <= :before ORDER BY id FOR UPDATE SKIP LOCKED`,
      { before },
    );
    return rows.map((r) => ({ id: r.id, failingSince: r.failing_since, consecutiveFailures: r.consecutive_failures }));
  }

  /**
   * Endpoints whose owner is to be told something, locked (others' locks skipped), with what the
   * email needs: disabled by the service and not told yet, or failing since `failingBefore` or
   * earlier and not told of this run yet. Registered webhooks only: an MCP Events subscription's
   * agent learns its delivery state from deliveryStatus when it refreshes, and its owner never
   * saw that endpoint (the webhook pages do not show it), so no email is sent for one.
   */
  async lockNoticesDue(manager: EntityManager, failingBefore: Date, limit: number): Promise<EndpointNotice[]> {
    return queryNamed<EndpointNotice[]>(
      manager,
      `SELECT e.id, e.url, e.status, e.disabled_reason AS "disabledReason", e.failing_since AS "failingSince",
              e.consecutive_failures AS "consecutiveFailures", e.disabled_notice_due AS "disabledNoticeDue", u.email AS "ownerEmail"
         FROM webhook_endpoints e JOIN users u ON u.id = e.user_id
        WHERE e.purpose = 'webhook'
          AND (e.disabled_notice_due OR (e.status = 'active' AND e.failing_since <= :failingBefore AND e.failing_notice_sent_at IS NULL))
        ORDER BY e.id LIMIT :limit FOR UPDATE OF e SKIP LOCKED`,
      { failingBefore, limit },
    );
  }

  /** The notice was sent: a disabled notice is no longer due; a failing one is not sent again in this run. */
  async noticeSent(manager: EntityManager, notice: EndpointNotice, at: Date): Promise<void> {
    await queryNamed(
      manager,
      notice.disabledNoticeDue
        ? `UPDATE webhook_endpoints SET disabled_notice_due = false WHERE id = :id`
        : `UPDATE webhook_endpoints SET failing_notice_sent_at = :at WHERE id = :id`,
      { id: notice.id, at },
    );
  }
}

const VIEW_SELECT = `
  SELECT e.id, e.url, e.events, e.mode, e.message_history_count, e.status, e.all_channels, e.disabled_reason, e.created_at, e.updated_at,
         e.signature_version, e.legacy_signature, e.public_key,
         COALESCE((SELECT json_agg(json_build_object('channelType', c.channel_type, 'channelId', c.line_id) ORDER BY c.line_id)
                     FROM webhook_endpoint_channels c WHERE c.endpoint_id = e.id), '[]') AS channels
    FROM webhook_endpoints e`;

interface EndpointViewRow {
  id: string;
  url: string;
  events: EventKind[];
  mode: PayloadMode;
  message_history_count: number;
  status: EndpointStatus;
  all_channels: boolean;
  signature_version: SignatureVersion;
  legacy_signature: boolean;
  public_key: string | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
  channels: ChannelScope['channels'];
}

/** The one mapping from an endpoint row to its view. */
function toView(row: EndpointViewRow): EndpointView {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    mode: row.mode,
    messageHistoryCount: row.message_history_count,
    status: row.status,
    channelScope: { allChannels: row.all_channels, channels: row.channels },
    signatureVersion: row.signature_version,
    legacySignature: row.legacy_signature,
    publicKey: row.public_key,
    disabledReason: row.disabled_reason,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
