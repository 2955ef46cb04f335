import { randomBytes } from 'node:crypto';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { LineType } from '../accounts/account.types';
import { AccountsService } from '../accounts/accounts.service';
import { actingThrough, Caller } from '../auth/caller';
import { CapReachedError, NotFoundError, ValidationError } from '../common/errors';
import { Clock } from '../common/clock';
import { Hooks } from '../common/hooks';
import { SecretBox } from '../common/secret-box';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { UrlPolicy } from './url-policy/url-policy';
import { EndpointView, FailingRunView, FailureCount, WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { DEFAULT_MESSAGE_HISTORY_COUNT, DEFAULT_MODE, EndpointStatus, EventKind, PayloadMode, PREVIOUS_SECRET_VALIDITY_MS } from './webhook.types';

export interface RegisterInput {
  url: string;
  events: EventKind[];
  mode?: PayloadMode;
  messageHistoryCount?: number;
  channelScope?: { allChannels: boolean; channels?: Array<{ channelType: LineType; channelId: string }> };
}

export interface UpdateInput extends Partial<RegisterInput> {
  status?: EndpointStatus;
}

/** The reason recorded when an endpoint is disabled by hand (update_webhook, or Disable on the web page). */
export const MANUAL_DISABLE_REASON = 'disabled with update_webhook';

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
export class WebhooksService implements OnModuleInit {
  /** Run in the transaction that disables an endpoint (the delivery module cancels its waiting deliveries). */
  readonly endpointDisabled = new Hooks<[endpointId: string, manager: EntityManager]>('webhook endpoint disabled');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly accounts: AccountsService,
    private readonly urlPolicy: UrlPolicy,
    private readonly secrets: SecretBox,
    private readonly clock: Clock,
    private readonly metrics: ServiceMetrics,
  ) {}

  onModuleInit(): void {
    this.metrics.addCollector('webhook endpoints by status', async () => this.metrics.endpointsCounted(await this.endpoints.countByStatus()));
  }

  list(caller: Caller): Promise<EndpointView[]> {
    return this.endpoints.listVisible(caller);
  }

  /** The endpoint if the caller may see it; not found otherwise, exactly as for an id that never existed. */
  async get(caller: Caller, endpointId: string, manager?: EntityManager): Promise<EndpointView> {
    const endpoint = await this.endpoints.getVisible(caller, endpointId, manager);
    if (!endpoint) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
    return endpoint;
  }

  /** The endpoint's current failing run, if it is in one (the web app's endpoint page). */
  failingRun(caller: Caller, endpointId: string): Promise<FailingRunView | null> {
    return this.endpoints.failingRunVisible(caller, endpointId);
  }

  async register(caller: Caller, input: RegisterInput): Promise<{ endpoint: EndpointView; secret: string }> {
    const channels = this.resolveScope(caller, input.channelScope);
    const { url } = await this.urlPolicy.check(input.url);
    const secret = generateSigningSecret();
    const endpoint = await this.dataSource.transaction(async (tx) => {
      // Registrations of one user are serialised, so two at once cannot both pass the cap.
      const [count, cap] = await Promise.all([this.endpoints.lockOwnerAndCount(tx, caller), this.accounts.effectiveEndpointCap(caller.orgId)]);
      if (count >= cap.max) {
        const how = cap.source === 'grant' ? 'set by an administrator grant for your org' : `the ${caller.orgTier} tier's limit`;
        throw new CapReachedError(
          `endpoint cap reached: you may have at most ${cap.max} webhook endpoint(s) (${how}); ` +
            'delete an endpoint, upgrade the tier, or ask an administrator for an endpoint-cap grant',
        );
      }
      const id = await this.endpoints.insert(tx, caller, {
        url: url.href,
        events: input.events,
        mode: input.mode ?? DEFAULT_MODE,
        messageHistoryCount: input.messageHistoryCount ?? DEFAULT_MESSAGE_HISTORY_COUNT,
        channels,
        secretSealed: this.secrets.seal(secret),
      });
      return this.get(caller, id, tx);
    });
    return { endpoint, secret };
  }

  async update(caller: Caller, endpointId: string, input: UpdateInput): Promise<EndpointView> {
    const channels = input.channelScope === undefined ? undefined : this.resolveScope(caller, input.channelScope);
    const url = input.url === undefined ? undefined : (await this.urlPolicy.check(input.url)).url.href;
    return this.dataSource.transaction(async (tx) => {
      const endpoint = await this.endpoints.lockVisible(tx, caller, endpointId);
      if (!endpoint) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
      if (url !== undefined) endpoint.url = url;
      if (input.events !== undefined) endpoint.events = input.events;
      if (input.mode !== undefined) endpoint.mode = input.mode;
      if (input.messageHistoryCount !== undefined) endpoint.messageHistoryCount = input.messageHistoryCount;
      if (input.status === 'disabled' && endpoint.status !== 'disabled') {
        endpoint.status = 'disabled';
        endpoint.disabledReason = MANUAL_DISABLE_REASON;
        endpoint.disabledNoticeDue = false; // the owner did it
        await this.endpointDisabled.run(endpoint.id, tx);
      } else if (input.status === 'active' && endpoint.status !== 'active') {
        // Re-enabling starts a fresh count towards auto-disable.
        Object.assign(endpoint, {
          status: 'active',
          disabledReason: null,
          consecutiveFailures: 0,
          failingSince: null,
          disabledNoticeDue: false,
          failingNoticeSentAt: null,
        });
      }
      // A supplied scope replaces the previous one wholesale.
      await this.endpoints.save(tx, endpoint, channels);
      return this.get(caller, endpointId, tx);
    });
  }

  /** A new secret, returned once; the previous one keeps signing for 24 hours. */
  async rotateSecret(caller: Caller, endpointId: string, now = this.clock.now()): Promise<{ endpoint: EndpointView; secret: string }> {
    const secret = generateSigningSecret();
    const endpoint = await this.dataSource.transaction(async (tx) => {
      const current = await this.endpoints.lockSecret(tx, caller, endpointId);
      if (current === null) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
      await this.endpoints.replaceSecret(tx, endpointId, {
        sealed: this.secrets.seal(secret),
        previousSealed: current,
        previousExpiresAt: new Date(now.getTime() + PREVIOUS_SECRET_VALIDITY_MS),
      });
      return this.get(caller, endpointId, tx);
    });
    return { endpoint, secret };
  }

  /** Irreversible: the endpoint, its scope and its deliveries go. */
  async delete(caller: Caller, endpointId: string): Promise<{ deleted: true; endpointId: string }> {
    if (!(await this.endpoints.deleteVisible(caller, endpointId))) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
    return { deleted: true, endpointId };
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
   * Takes the endpoints whose failed attempts are about to be recorded, in id order, before any of
   * their delivery rows (the order update_webhook and delete_webhook take); answers the ids that
   * still exist.
   */
  lockForFailureCount(endpointIds: string[], manager: EntityManager): Promise<Set<string>> {
    return this.endpoints.lockForFailureCount(manager, endpointIds);
  }

  /**
   * Counts failed attempts towards auto-disable (call lockForFailureCount first, in the same
   * transaction): each extends its endpoint's failing run, and an endpoint is disabled at 100
   * failures in a row or a run of 24 hours, which cancels its waiting deliveries. A 2xx clears
   * the run (failing-runs.sql.ts, embedded in the delivery worker's success statement). Returns the
   * endpoints disabled.
   */
  async recordFailures(failures: FailureCount[], now: Date, manager: EntityManager): Promise<Set<string>> {
    const disabled = new Set<string>();
    if (failures.length === 0) return disabled;
    for (const run of await this.endpoints.addFailures(manager, failures)) {
      if (run.status !== 'active') continue;
      if (await this.disableIfDue(manager, run, now)) disabled.add(run.id);
    }
    return disabled;
  }

  /**
   * The same rule on a timer (EndpointHealthMonitor): an endpoint whose failing run has lasted 24
   * hours is disabled even when no attempt fails any more (its retries all gave up, say).
   * Answers the endpoints disabled.
   */
  async disableLongFailing(now: Date): Promise<string[]> {
    return this.dataSource.transaction(async (manager) => {
      const disabled: string[] = [];
      for (const run of await this.endpoints.lockFailingSince(manager, new Date(now.getTime() - AUTO_DISABLE_FAILING_FOR_MS))) {
        if (await this.disableIfDue(manager, run, now)) disabled.push(run.id);
      }
      return disabled;
    });
  }

  /** The auto-disable rule: 100 failures in a row, or a failing run of 24 hours; disables (cancelling its waiting deliveries) and answers true when it holds. */
  private async disableIfDue(manager: EntityManager, run: { id: string; consecutiveFailures: number; failingSince: Date }, now: Date): Promise<boolean> {
    const reason =
      run.consecutiveFailures >= AUTO_DISABLE_CONSECUTIVE_FAILURES
        ? `auto-disabled after ${run.consecutiveFailures} consecutive failed delivery attempts`
        : now.getTime() - run.failingSince.getTime() >= AUTO_DISABLE_FAILING_FOR_MS
          ? `auto-disabled after failing continuously since ${run.failingSince.toISOString()}`
          : null;
    if (!reason) return false;
    await this.endpoints.disable(manager, run.id, reason);
    await this.endpointDisabled.run(run.id, manager);
    return true;
  }

  /**
   * A 2xx ends its endpoint's failing run if the run began (its first failed attempt started) no
   * later than the 2xx was answered; a run that began after it stands (failing-runs.sql.ts).
   * `latest`: each endpoint's latest answered success, recorded already. Answers the runs ended.
   */
  endRunsAnsweredBefore(latest: Map<string, Date>): Promise<number> {
    return this.endpoints.endRunsAnsweredBefore(latest);
  }

  /**
   * Checks a channel scope against the lines the caller may use; null means all channels.
   * A key limited to some lines may not ask for all channels.
   */
  private resolveScope(caller: Caller, scope: RegisterInput['channelScope']): Array<{ channelType: LineType; channelId: string }> | null {
    const allChannels = scope?.allChannels ?? true;
    const channels = scope?.channels ?? [];
    if (allChannels) {
      if (channels.length > 0) {
        throw new ValidationError('channelScope.channels must be empty when allChannels is true', 'channelScope.channels');
      }
      if (caller.channelAccess === 'LINES') {
        throw new ValidationError(
          `channelScope: ${actingThrough(caller)} is limited to specific lines, so allChannels must be false with channels chosen from those lines`,
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
          `channelScope.channels[${i}].channelId: ${channel.channelId} is not a line ${actingThrough(caller)} may use (see list_email_accounts, list_phone_numbers)`,
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
