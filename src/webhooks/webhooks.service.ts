import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AccountsService } from '../accounts/accounts.service';
import { Caller } from '../auth/caller';
import { CapReachedError, NotFoundError, ValidationError } from '../common/errors';
import { Clock } from '../common/clock';
import { SecretBox } from '../common/secret-box';
import { queryNamed, visibleEndpoint } from './endpoint-visibility';
import { UrlPolicy } from './url-policy/url-policy';
import { WebhookEndpointChannel } from './webhook-endpoint-channel.entity';
import { WebhookEndpoint } from './webhook-endpoint.entity';
import {
  ChannelScope,
  ChannelType,
  DEFAULT_MESSAGE_HISTORY_COUNT,
  DEFAULT_MODE,
  EndpointStatus,
  EventKind,
  PayloadMode,
  PREVIOUS_SECRET_VALIDITY_MS,
} from './webhook.types';

export interface EndpointView {
  id: string;
  url: string;
  events: EventKind[];
  mode: PayloadMode;
  messageHistoryCount: number;
  status: EndpointStatus;
  channelScope: ChannelScope;
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface RegisterInput {
  url: string;
  events: EventKind[];
  mode?: PayloadMode;
  messageHistoryCount?: number;
  channelScope?: { allChannels: boolean; channels?: Array<{ channelType: ChannelType; channelId: string }> };
}

export interface UpdateInput extends Partial<RegisterInput> {
  status?: EndpointStatus;
}

/** Runs in the transaction that disables an endpoint (the delivery module cancels waiting deliveries). */
export type EndpointDisabledHook = (endpointId: string, manager: EntityManager) => Promise<void>;

/** Auto-disable thresholds (spec: Limits). */
export const AUTO_DISABLE_CONSECUTIVE_FAILURES = 100;
export const AUTO_DISABLE_FAILING_FOR_MS = 24 * 60 * 60 * 1000;

/** The sealed signing-secret columns of an endpoint row. */
export interface SealedSecrets {
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
}

/** Signing secrets: 32 random bytes as 64 lowercase hex (spec: Webhook endpoint). */
export function generateSigningSecret(): string {
  return randomBytes(32).toString('hex');
}

/**
 * Webhook endpoints of the calling user: every query carries the caller's visibility condition
 * (visibleEndpoint), so another user's id, and for a line-scoped key an endpoint reaching beyond
 * its lines, reads as not found. Holds the rules for URLs, scopes, caps, rotation and re-enabling.
 */
@Injectable()
export class WebhooksService {
  private readonly disabledHooks: EndpointDisabledHook[] = [];

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly accounts: AccountsService,
    private readonly urlPolicy: UrlPolicy,
    private readonly secrets: SecretBox,
    private readonly clock: Clock,
  ) {}

  /** The two read tools are the hot path of the tool endpoint: one plain query each, no ORM. */
  async list(caller: Caller): Promise<EndpointView[]> {
    const visible = visibleEndpoint(caller);
    const rows = await queryNamed<EndpointViewRow[]>(
      this.dataSource.manager,
      `${VIEW_SELECT} WHERE ${visible.sql} ORDER BY e.created_at, e.id`,
      visible.parameters,
    );
    return rows.map(rowToView);
  }

  async get(caller: Caller, endpointId: string): Promise<EndpointView> {
    const visible = visibleEndpoint(caller);
    const [row] = await queryNamed<EndpointViewRow[]>(this.dataSource.manager, `${VIEW_SELECT} WHERE e.id = :endpointId AND ${visible.sql}`, {
      endpointId,
      ...visible.parameters,
    });
    if (!row) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
    return rowToView(row);
  }

  async register(caller: Caller, input: RegisterInput): Promise<{ endpoint: EndpointView; secret: string }> {
    const channels = this.resolveScope(caller, input.channelScope);
    const { url } = await this.urlPolicy.check(input.url);
    const secret = generateSigningSecret();
    const endpoint = await this.dataSource.transaction(async (tx) => {
      // Serialise registrations of one user, so two at once cannot both pass the cap.
      await tx.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [caller.userId]);
      const [count, cap] = await Promise.all([
        tx.getRepository(WebhookEndpoint).countBy({ userId: caller.userId }),
        this.accounts.effectiveEndpointCap(caller.orgId),
      ]);
      if (count >= cap.max) {
        const how = cap.source === 'grant' ? 'set by an administrator grant for your org' : `the ${caller.orgTier} tier's limit`;
        throw new CapReachedError(
          `endpoint cap reached: you may have at most ${cap.max} webhook endpoint(s) (${how}); ` +
            'delete an endpoint, upgrade the tier, or ask an administrator for an endpoint-cap grant',
        );
      }
      const repo = tx.getRepository(WebhookEndpoint);
      return repo.save(
        repo.create({
          userId: caller.userId,
          orgId: caller.orgId,
          url: url.href,
          events: input.events,
          mode: input.mode ?? DEFAULT_MODE,
          messageHistoryCount: input.messageHistoryCount ?? DEFAULT_MESSAGE_HISTORY_COUNT,
          status: 'active',
          allChannels: channels === null,
          channels: (channels ?? []).map((c) => ({ lineId: c.channelId, channelType: c.channelType })),
          secretSealed: this.secrets.seal(secret),
          previousSecretSealed: null,
          previousSecretExpiresAt: null,
          consecutiveFailures: 0,
          failingSince: null,
          disabledReason: null,
        }),
      );
    });
    return { endpoint: toView(endpoint), secret };
  }

  async update(caller: Caller, endpointId: string, input: UpdateInput): Promise<EndpointView> {
    const channels = input.channelScope === undefined ? undefined : this.resolveScope(caller, input.channelScope);
    const url = input.url === undefined ? undefined : (await this.urlPolicy.check(input.url)).url.href;
    const saved = await this.dataSource.transaction(async (tx) => {
      const endpoint = await this.find(tx, caller, endpointId, true);
      if (url !== undefined) endpoint.url = url;
      if (input.events !== undefined) endpoint.events = input.events;
      if (input.mode !== undefined) endpoint.mode = input.mode;
      if (input.messageHistoryCount !== undefined) endpoint.messageHistoryCount = input.messageHistoryCount;
      if (channels !== undefined) {
        // A supplied scope replaces the previous one wholesale.
        await tx.delete(WebhookEndpointChannel, { endpointId: endpoint.id });
        endpoint.allChannels = channels === null;
        endpoint.channels = (channels ?? []).map((c) =>
          Object.assign(new WebhookEndpointChannel(), { endpointId: endpoint.id, lineId: c.channelId, channelType: c.channelType }),
        );
      }
      if (input.status === 'disabled' && endpoint.status !== 'disabled') {
        endpoint.status = 'disabled';
        endpoint.disabledReason = 'disabled with update_webhook';
        await this.runDisabledHooks(endpoint.id, tx);
      } else if (input.status === 'active' && endpoint.status !== 'active') {
        // Re-enabling starts a fresh count towards auto-disable.
        Object.assign(endpoint, { status: 'active', disabledReason: null, consecutiveFailures: 0, failingSince: null });
      }
      return tx.getRepository(WebhookEndpoint).save(endpoint);
    });
    return toView(saved);
  }

  /** A new secret, returned once; the previous one keeps signing for 24 hours. */
  async rotateSecret(caller: Caller, endpointId: string, now = this.clock.now()): Promise<{ endpoint: EndpointView; secret: string }> {
    const secret = generateSigningSecret();
    const visible = visibleEndpoint(caller);
    const endpoint = await this.dataSource.transaction(async (tx) => {
      const current = await tx
        .getRepository(WebhookEndpoint)
        .createQueryBuilder('e')
        .addSelect('e.secretSealed')
        .where('e.id = :id', { id: endpointId })
        .andWhere(visible.sql, visible.parameters)
        .setLock('pessimistic_write')
        .getOne();
      if (!current) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
      await tx.update(
        WebhookEndpoint,
        { id: current.id },
        {
          secretSealed: this.secrets.seal(secret),
          previousSecretSealed: current.secretSealed,
          previousSecretExpiresAt: new Date(now.getTime() + PREVIOUS_SECRET_VALIDITY_MS),
        },
      );
      return this.find(tx, caller, endpointId);
    });
    return { endpoint: toView(endpoint), secret };
  }

  /** Irreversible: the endpoint, its scope and its deliveries go. */
  async delete(caller: Caller, endpointId: string): Promise<{ deleted: true; endpointId: string }> {
    const visible = visibleEndpoint(caller);
    // A DELETE answers [rows, affected count].
    const [, affected] = await queryNamed<[unknown[], number]>(
      this.dataSource.manager,
      `DELETE FROM webhook_endpoints e WHERE e.id = :endpointId AND ${visible.sql}`,
      { endpointId, ...visible.parameters },
    );
    if (!affected) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
    return { deleted: true, endpointId };
  }

  onEndpointDisabled(hook: EndpointDisabledHook): void {
    this.disabledHooks.push(hook);
  }

  /**
   * The secrets that sign a delivery now, from an endpoint row's sealed columns (the sender reads
   * them in the statement that claims the attempt): current first, then the previous one while it
   * is under 24 h old.
   */
  signingSecrets(row: SealedSecrets, now: Date): string[] {
    const secrets = [this.secrets.open(row.secret_sealed)];
    if (row.previous_secret_sealed && row.previous_secret_expires_at && row.previous_secret_expires_at > now) {
      secrets.push(this.secrets.open(row.previous_secret_sealed));
    }
    return secrets;
  }

  /**
   * Takes the endpoints whose failed attempts are about to be recorded, in id order (the order
   * every writer of several endpoints uses), before any of their delivery rows: the order
   * update_webhook (disable, then cancel waiting deliveries) and delete_webhook (cascade) take.
   * Answers the ids that still exist.
   */
  async lockForFailureCount(endpointIds: string[], manager: EntityManager): Promise<Set<string>> {
    const rows: Array<{ id: string }> = await manager.query(`SELECT id FROM webhook_endpoints WHERE id = ANY ($1::uuid[]) ORDER BY id FOR NO KEY UPDATE`, [
      endpointIds,
    ]);
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Counts failed attempts towards auto-disable (call lockForFailureCount first, in the same
   * transaction): each extends its endpoint's failing run, and an endpoint is disabled at 100
   * failures in a row or a run of 24 hours, which cancels its waiting deliveries. A 2xx clears
   * the run (the success statement in DeliveryAttemptsService). Returns the endpoints disabled.
   */
  async recordFailures(failures: Array<{ endpointId: string; count: number; firstAt: Date }>, now: Date, manager: EntityManager): Promise<Set<string>> {
    const disabled = new Set<string>();
    if (failures.length === 0) return disabled;
    // For UPDATE ... RETURNING, TypeORM's postgres driver answers [rows, affectedCount], not rows.
    const [rows]: [Array<{ id: string; consecutive_failures: number; failing_since: Date; status: EndpointStatus }>, number] = await manager.query(
      `UPDATE webhook_endpoints w
          SET consecutive_failures = w.consecutive_failures + x.count, failing_since = COALESCE(w.failing_since, x.first_at)
         FROM unnest($1::uuid[], $2::int[], $3::timestamptz[]) AS x(id, count, first_at)
        WHERE w.id = x.id
        RETURNING w.id, w.consecutive_failures, w.failing_since, w.status`,
      [failures.map((f) => f.endpointId), failures.map((f) => f.count), failures.map((f) => f.firstAt)],
    );
    for (const row of (rows ?? []).sort((a, b) => (a.id < b.id ? -1 : 1))) {
      if (row.status !== 'active') continue;
      const reason =
        row.consecutive_failures >= AUTO_DISABLE_CONSECUTIVE_FAILURES
          ? `auto-disabled after ${row.consecutive_failures} consecutive failed delivery attempts`
          : now.getTime() - new Date(row.failing_since).getTime() >= AUTO_DISABLE_FAILING_FOR_MS
            ? `auto-disabled after failing continuously since ${new Date(row.failing_since).toISOString()}`
            : null;
      if (!reason) continue;
      await manager.query(`UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2, updated_at = now() WHERE id = $1`, [row.id, reason]);
      await this.runDisabledHooks(row.id, manager);
      disabled.add(row.id);
    }
    return disabled;
  }

  private async runDisabledHooks(endpointId: string, manager: EntityManager): Promise<void> {
    for (const hook of this.disabledHooks) await hook(endpointId, manager);
  }

  /**
   * An endpoint the caller may see (visibleEndpoint), with its scope; not found otherwise, exactly
   * as for an id that never existed. `lock` takes the row for update first.
   */
  async find(manager: EntityManager, caller: Caller, endpointId: string, lock = false): Promise<WebhookEndpoint> {
    const visible = visibleEndpoint(caller);
    if (lock)
      await queryNamed(manager, `SELECT e.id FROM webhook_endpoints e WHERE e.id = :endpointId AND ${visible.sql} FOR UPDATE`, {
        endpointId,
        ...visible.parameters,
      });
    const endpoint = await manager
      .getRepository(WebhookEndpoint)
      .createQueryBuilder('e')
      .leftJoinAndSelect('e.channels', 'channel')
      .where('e.id = :endpointId', { endpointId })
      .andWhere(visible.sql, visible.parameters)
      .getOne();
    if (!endpoint) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
    return endpoint;
  }

  /**
   * Checks a channel scope against the lines the caller may use; null means all channels.
   * A key limited to some lines may not ask for all channels.
   */
  private resolveScope(caller: Caller, scope: RegisterInput['channelScope']): Array<{ channelType: ChannelType; channelId: string }> | null {
    const allChannels = scope?.allChannels ?? true;
    const channels = scope?.channels ?? [];
    if (allChannels) {
      if (channels.length > 0) {
        throw new ValidationError('channelScope.channels must be empty when allChannels is true', 'channelScope.channels');
      }
      if (caller.channelAccess === 'LINES') {
        throw new ValidationError(
          'channelScope: this API key is limited to specific lines, so allChannels must be false with channels chosen from those lines',
          'channelScope.allChannels',
        );
      }
      return null;
    }
    if (channels.length === 0) {
      throw new ValidationError('channelScope.channels must hold at least 1 entry when allChannels is false', 'channelScope.channels');
    }
    channels.forEach((channel, i) => {
      const line = caller.lines.find((l) => l.id === channel.channelId);
      if (!line) {
        throw new ValidationError(
          `channelScope.channels[${i}].channelId: ${channel.channelId} is not a line this key may use (see list_email_accounts, list_phone_numbers)`,
          `channelScope.channels[${i}].channelId`,
        );
      }
      if (line.type !== channel.channelType) {
        throw new ValidationError(
          `channelScope.channels[${i}].channelType: line ${channel.channelId} is a ${line.type}, not a ${channel.channelType}`,
          `channelScope.channels[${i}].channelType`,
        );
      }
    });
    return channels;
  }
}

const VIEW_SELECT = `
  SELECT e.id, e.url, e.events, e.mode, e.message_history_count, e.status, e.all_channels, e.disabled_reason, e.created_at, e.updated_at,
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
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
  channels: ChannelScope['channels'];
}

function rowToView(row: EndpointViewRow): EndpointView {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    mode: row.mode,
    messageHistoryCount: row.message_history_count,
    status: row.status,
    channelScope: { allChannels: row.all_channels, channels: row.channels },
    disabledReason: row.disabled_reason,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toView(endpoint: WebhookEndpoint): EndpointView {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events,
    mode: endpoint.mode,
    messageHistoryCount: endpoint.messageHistoryCount,
    status: endpoint.status,
    channelScope: {
      allChannels: endpoint.allChannels,
      channels: (endpoint.channels ?? [])
        .map((c) => ({ channelType: c.channelType, channelId: c.lineId }))
        .sort((a, b) => a.channelId.localeCompare(b.channelId)),
    },
    disabledReason: endpoint.disabledReason,
    createdAt: endpoint.createdAt.toISOString(),
    updatedAt: endpoint.updatedAt.toISOString(),
  };
}
