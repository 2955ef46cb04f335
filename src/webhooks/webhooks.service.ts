import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { LineType } from '../identity/account.types';
import { AccountsService } from '../accounts/accounts.service';
import { actingThrough, Principal } from '../identity/principal';
import { ALL_LINES, ChannelScopeInput, LineById, LineSelection, linesOfChannelScope, scopeChannelsOf } from '../identity/line-selection';
import { CapReachedError, NotFoundError, ValidationError } from '../common/errors';
import { Clock } from '../common/clock';
import { Hooks } from '../common/hooks';
import { SecretBox } from '../common/secret-box';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { privateKeyFromPkcs8, SigningKey, symmetricKey, toPublicKeyString, toStandardSecret } from '../sdk';
import { UrlPolicy } from '../outbound-http';
import { EndpointView, FailingRunView, FailureCount, StoredKeyPair, WebhookEndpointsRepository } from './webhook-endpoints.repository';
import {
  DEFAULT_MESSAGE_HISTORY_COUNT,
  DEFAULT_MODE,
  DEFAULT_SIGNATURE_VERSION,
  EndpointStatus,
  EventKind,
  PayloadMode,
  PREVIOUS_SECRET_VALIDITY_MS,
  SignatureVersion,
} from './webhook.types';

export interface RegisterInput {
  url: string;
  events: EventKind[];
  mode?: PayloadMode;
  messageHistoryCount?: number;
  /** The lines it is told of (a channelScope, parsed with webhookInput); left out: all channels. */
  channelScope?: LineSelection<Required<LineById>>;
  /** The webhook-signature version: v1 (default) or v1a (ed25519). */
  signatureVersion?: SignatureVersion;
  /** false turns the legacy X-Service-Signature header off (default true). */
  legacySignature?: boolean;
}

/** What register_webhook and rotate_webhook_secret hand out once: the secret in both forms. */
export interface IssuedSecret {
  endpoint: EndpointView;
  /** 32 random bytes as 64 lowercase hex (spec): the legacy HMAC key is this string's UTF-8 bytes. */
  secret: string;
  /** The same key for Standard Webhooks libraries: `whsec_` + base64(UTF-8 bytes of `secret`). */
  signingSecret: string;
}

export interface UpdateInput extends Partial<RegisterInput> {
  status?: EndpointStatus;
}

/**
 * The arguments of register_webhook or update_webhook (the tools', or the endpoint form's), as
 * the service takes them: a `channelScope` given is parsed into a line selection (left out, it
 * stays left out: all channels on register, unchanged on update).
 */
export function webhookInput<T extends { channelScope?: ChannelScopeInput }>(
  args: T,
): Omit<T, 'channelScope'> & { channelScope?: LineSelection<Required<LineById>> } {
  const { channelScope, ...rest } = args;
  return channelScope === undefined ? rest : { ...rest, channelScope: linesOfChannelScope(channelScope) };
}

/** The reason recorded when an endpoint is disabled by hand (update_webhook, or Disable on the web page). */
export const MANUAL_DISABLE_REASON = 'disabled with update_webhook';

/** Auto-disable thresholds (spec: Limits). */
export const AUTO_DISABLE_CONSECUTIVE_FAILURES = 100;
export const AUTO_DISABLE_FAILING_FOR_MS = 24 * 60 * 60 * 1000;

/** The signing columns of an endpoint row (the delivery worker reads them with its claim). */
export interface SealedSecrets {
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  signature_version: SignatureVersion;
  legacy_signature: boolean;
  signing_key_sealed: string | null;
  previous_signing_key_sealed: string | null;
}

/** What signs a delivery now, current first (then the previous ones while their 24 h run). */
export interface DeliverySigning {
  /** The keys of the legacy X-Service-Signature (64-hex secrets); empty when the header is off. */
  legacySecrets: string[];
  /** The keys of webhook-signature. */
  standardKeys: SigningKey[];
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

  list(caller: Principal): Promise<EndpointView[]> {
    return this.endpoints.listVisible(caller);
  }

  /** The endpoint if the caller may see it; not found otherwise, exactly as for an id that never existed. */
  async get(caller: Principal, endpointId: string, manager?: EntityManager): Promise<EndpointView> {
    const endpoint = await this.endpoints.getVisible(caller, endpointId, manager);
    if (!endpoint) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
    return endpoint;
  }

  /** The endpoint's current failing run, if it is in one (the web app's endpoint page). */
  failingRun(caller: Principal, endpointId: string): Promise<FailingRunView | null> {
    return this.endpoints.failingRunVisible(caller, endpointId);
  }

  async register(caller: Principal, input: RegisterInput): Promise<IssuedSecret> {
    const channels = this.resolveScope(caller, input.channelScope);
    const { url } = await this.urlPolicy.check(input.url);
    const secret = generateSigningSecret();
    const signatureVersion = input.signatureVersion ?? DEFAULT_SIGNATURE_VERSION;
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
        signatureVersion,
        legacySignature: input.legacySignature ?? true,
        keyPair: signatureVersion === 'v1a' ? this.newKeyPair() : null,
      });
      return this.get(caller, id, tx);
    });
    return { endpoint, secret, signingSecret: toStandardSecret(secret) };
  }

  async update(caller: Principal, endpointId: string, input: UpdateInput): Promise<EndpointView> {
    const channels = input.channelScope === undefined ? undefined : this.resolveScope(caller, input.channelScope);
    const url = input.url === undefined ? undefined : (await this.urlPolicy.check(input.url)).url.href;
    return this.dataSource.transaction(async (tx) => {
      const endpoint = await this.endpoints.lockVisible(tx, caller, endpointId);
      if (!endpoint) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
      if (url !== undefined) endpoint.url = url;
      if (input.events !== undefined) endpoint.events = input.events;
      if (input.mode !== undefined) endpoint.mode = input.mode;
      if (input.messageHistoryCount !== undefined) endpoint.messageHistoryCount = input.messageHistoryCount;
      if (input.legacySignature !== undefined) endpoint.legacySignature = input.legacySignature;
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
      if (input.signatureVersion !== undefined && input.signatureVersion !== endpoint.signatureVersion) {
        // Switching to v1a makes a key pair (its public key is in the answer); back to v1 drops it.
        await this.endpoints.setSignatureVersion(tx, endpoint.id, input.signatureVersion, input.signatureVersion === 'v1a' ? this.newKeyPair() : null);
      }
      return this.get(caller, endpointId, tx);
    });
  }

  /**
   * A new secret, returned once, and for a v1a endpoint a new key pair (its public key in the
   * endpoint); the previous secret and key pair keep signing for 24 hours.
   */
  async rotateSecret(caller: Principal, endpointId: string, now = this.clock.now()): Promise<IssuedSecret> {
    const secret = generateSigningSecret();
    const endpoint = await this.dataSource.transaction(async (tx) => {
      const current = await this.endpoints.lockSigning(tx, caller, endpointId);
      if (current === null) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
      await this.endpoints.rotateSigning(tx, endpointId, {
        secretSealed: this.secrets.seal(secret),
        keyPair: current.keyPair ? this.newKeyPair() : null,
        previous: current,
        previousExpiresAt: new Date(now.getTime() + PREVIOUS_SECRET_VALIDITY_MS),
      });
      return this.get(caller, endpointId, tx);
    });
    return { endpoint, secret, signingSecret: toStandardSecret(secret) };
  }

  /**
   * The public keys (`whpk_`) of a v1a endpoint that sign now, current first; empty for an
   * unknown or v1 endpoint. Anyone may ask (the JWK Set route): public keys are not secrets.
   */
  publicKeys(endpointId: string, now = this.clock.now()): Promise<string[]> {
    return this.endpoints.publicKeys(endpointId, now);
  }

  /** Irreversible: the endpoint, its scope and its deliveries go. */
  async delete(caller: Principal, endpointId: string): Promise<{ deleted: true; endpointId: string }> {
    if (!(await this.endpoints.deleteVisible(caller, endpointId))) throw NotFoundError.of('webhook endpoint', endpointId, 'endpointId');
    return { deleted: true, endpointId };
  }

  /**
   * What signs a delivery now, from an endpoint row's signing columns (the sender reads them in
   * the statement that claims the attempt): current first, then the previous secret and key pair
   * while they are under 24 h old. The legacy header carries the secrets unless switched off;
   * webhook-signature carries v1 entries (the same secrets) for a v1 endpoint, and only v1a
   * entries for a v1a one (docs/decisions.md, "Standard Webhooks": no v1 beside v1a). A secret stored
   * in its `whsec_` form (an MCP Events subscription's, the client's own) signs with the bytes it names.
   */
  signingKeys(row: SealedSecrets, now: Date): DeliverySigning {
    const previousValid = row.previous_secret_expires_at !== null && row.previous_secret_expires_at > now;
    const secrets = [this.secrets.open(row.secret_sealed)];
    if (row.previous_secret_sealed && previousValid) secrets.push(this.secrets.open(row.previous_secret_sealed));
    const legacySecrets = row.legacy_signature ? secrets : [];
    if (row.signature_version !== 'v1a' || !row.signing_key_sealed) {
      return { legacySecrets, standardKeys: secrets.map((secret) => ({ version: 'v1', secret: symmetricKey(secret) })) };
    }
    const sealedKeys = [row.signing_key_sealed, ...(row.previous_signing_key_sealed && previousValid ? [row.previous_signing_key_sealed] : [])];
    return { legacySecrets, standardKeys: sealedKeys.map((sealed) => ({ version: 'v1a', privateKey: privateKeyFromPkcs8(this.secrets.open(sealed)) })) };
  }

  /** A fresh ed25519 key pair for a v1a endpoint: the private key sealed (PKCS#8 DER, base64), the public key as `whpk_`. */
  private newKeyPair(): StoredKeyPair {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    return {
      sealed: this.secrets.seal(privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64')),
      publicKey: toPublicKeyString(publicKey),
    };
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
  private resolveScope(caller: Principal, scope: LineSelection<Required<LineById>> = ALL_LINES): Array<{ channelType: LineType; channelId: string }> | null {
    if (scope.mode === 'ALL') {
      if (caller.channelAccess === 'LINES') {
        throw new ValidationError(
          `channelScope: ${actingThrough(caller)} is limited to specific lines, so allChannels must be false with channels chosen from those lines`,
          'channelScope.allChannels',
        );
      }
      return null;
    }
    scope.lines.forEach((chosen, i) => {
      const line = caller.lines.find((l) => l.id === chosen.id);
      if (!line) {
        throw new ValidationError(
          `channelScope.channels[${i}].channelId: ${chosen.id} is not a line ${actingThrough(caller)} may use (see list_email_accounts, list_phone_numbers)`,
          `channelScope.channels[${i}].channelId`,
        );
      }
      if (line.type !== chosen.type) {
        throw new ValidationError(
          `channelScope.channels[${i}].channelType: line ${chosen.id} is a ${line.type}, not a ${chosen.type}`,
          `channelScope.channels[${i}].channelType`,
        );
      }
    });
    return scopeChannelsOf(scope);
  }
}
