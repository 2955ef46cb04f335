import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { isGrantId, Principal } from '../identity/principal';
import { RateLimitedError, UrlRefusedError } from '../common/errors';
import { RateLimits } from '../limits/rate-limits.service';
import { SecretBox } from '../common/secret-box';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { holdFanOutExclusive } from '../delivery/fan-out-lock.sql';
import { FanOutSubscriber } from '../delivery/fan-out.subscriber';
import { PublishedEvent } from '../events/domain-event';
import { signatureHeaders } from '../delivery/signature-headers';
import { SendResult, WebhookSender } from '../delivery/webhook-sender';
import { USER_AGENT } from '../delivery/delivery-attempts.service';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';
import { symmetricKey } from '../sdk';
import { UrlPolicy } from '../outbound-http';
import { draftErrorOf, FeedRefusal } from './event-feed.errors';
import { EventFeedRepository } from './event-feed.repository';
import { admitted, EventFeedService, optionalInteger, Subscription } from './event-feed.service';
import { SUBSCRIPTION_ID_HEADER } from './event-subscription-delivery';
import { EndedSubscription, EventSubscriptionsRepository, SubscriptionState } from './event-subscriptions.repository';

/** A `whsec_` secret's key: 24 to 64 bytes (192 to 512 bits), as the draft asks of a client's secret. */
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;
/** How long the callback's verification answer may take (the draft's callback verification). */
export const VERIFY_TIMEOUT_MS = 5_000;
const SWEEP_BATCH = 500;
/** `terminated` notices the sweep sends at once. */
const TERMINATED_AT_ONCE = 10;
/**
 * The most events a subscribe with a cursor replays by webhook. Past it nothing is replayed and the
 * answer is truncated: so many are a backlog for events/poll (100 a call, from the client's cursor),
 * and the replay is built in the transaction that holds the fan-out lock.
 */
export const REPLAY_MAX = 1_000;

/** What the transaction of a subscribe answers: the refreshed subscription (null: made now), its cursor's position, and the replay's rows to enqueue. */
interface Answered {
  existing: SubscriptionState | null;
  position: bigint;
  truncated: boolean;
  enqueue: () => Promise<void>;
}

/** events/subscribe's request (the draft's), as it came: checked by subscribe. */
export interface SubscribeRequest {
  name?: unknown;
  arguments?: unknown;
  delivery?: unknown;
  cursor?: unknown;
  maxAgeMs?: unknown;
  ttlMs?: unknown;
}

export interface SubscribeResult {
  id: string;
  refreshBefore: string;
  cursor: string;
  truncated: boolean;
  /** On a refresh: how deliveries to the URL have gone (the draft's deliveryStatus). */
  deliveryStatus?: { active: boolean; consecutiveFailures: number; lastError: string | null; lastAttemptAt: string | null; disabledReason: string | null };
}

/**
 * MCP Events webhook mode (docs/mcp.md, "Webhook mode"): events/subscribe and events/unsubscribe.
 * A subscription is a durable row joined to an endpoint row the delivery engine sends through
 * (docs/decisions.md, "Event subscriptions ride on endpoint rows"); fan-out and each attempt check
 * its TTL and its credential (event-subscriptions.sql.ts). Scope, permission, event names and
 * arguments are the feed's (EventFeedService.subscriptionOf, admitted).
 */
@Injectable()
export class EventSubscriptionsService implements OnModuleInit {
  private readonly logger = new Logger(EventSubscriptionsService.name);

  constructor(
    private readonly repository: EventSubscriptionsRepository,
    private readonly feed: EventFeedService,
    private readonly feedEvents: EventFeedRepository,
    private readonly fanOut: FanOutSubscriber,
    private readonly urlPolicy: UrlPolicy,
    private readonly sender: WebhookSender,
    private readonly secrets: SecretBox,
    private readonly work: BackgroundWork,
    private readonly rateLimits: RateLimits,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.work.every({
      name: 'event subscription sweep',
      roles: WORKER_ROLES,
      everyMs: this.config.eventSubscriptions.sweepMs,
      setting: 'EVENT_SUBSCRIPTION_SWEEP_MS',
      logger: this.logger,
      run: () => this.sweep(),
    });
  }

  /**
   * Creates the subscription, or refreshes the one the same credential made with the same url,
   * name and arguments (its id is derived from them): a new expiry, the secret given now, a
   * disabled delivery made active again. A new URL is verified first (the draft's challenge). One
   * that lapsed (expired, not swept yet) is made anew, as if deleted; a subscription made with a
   * cursor is delivered the events after it first (replay).
   */
  async subscribe(caller: Principal, request: SubscribeRequest): Promise<SubscribeResult> {
    admitted(caller, request);
    const keyId = principalOf(caller);
    const subscription = this.feed.subscriptionOf(request, false);
    const { url: rawUrl, secret } = checkedDelivery(request.delivery);
    const url = await this.checkedUrl(rawUrl);
    const ttlMs = this.grantedTtl(request.ttlMs);
    // A cursor is checked (and refused, naming `cursor`) as a poll's, and so is maxAgeMs.
    if (request.cursor !== undefined && request.cursor !== null && typeof request.cursor !== 'string') {
      throw FeedRefusal.invalid('cursor', 'cursor must be a string this server gave out, or null to start from now');
    }
    const from = typeof request.cursor === 'string' ? this.feed.cursors.decode(request.cursor, subscription.scope) : null;
    const maxAgeMs = optionalInteger(request.maxAgeMs, 'maxAgeMs', 0, Number.MAX_SAFE_INTEGER);
    const args = canonical(request.arguments ?? {});
    const id = subscriptionId(keyId, url, subscription.kind!, args);
    const expiresAt = new Date(Date.now() + ttlMs);
    const secretSealed = this.secrets.seal(secret);

    const known = await this.repository.transaction((tx) => this.repository.find(tx, keyId, id));
    if (!isLive(known)) {
      // The limit first: a credential at its limit makes the service send nothing (the challenge
      // is a request to a URL of the caller's choosing). Counted again under the lock below.
      await this.repository.transaction(async (tx) => this.refuseAtLimit((await this.repository.lockKeyAndCount(tx, keyId)) - (known ? 1 : 0)));
      await this.spendVerification(keyId);
      await this.verifyCallback(url, secret, id);
    }
    const answered = await this.repository.transaction(async (tx): Promise<Answered> => {
      let found = await this.repository.find(tx, keyId, id);
      if (!isLive(found)) {
        // A subscription is created: first the fan-out lock, exclusively (fan-out-lock.sql.ts), so the
        // feed read below is after every event fanned out without this subscription; then the
        // credential's lock, under which it is counted.
        await holdFanOutExclusive(tx);
        let count = await this.repository.lockKeyAndCount(tx, keyId);
        // The same subscribe, sent twice at once, may have created it while this one waited.
        found = await this.repository.find(tx, keyId, id);
        if (!isLive(found)) {
          if (found) {
            // Lapsed (expired, not swept yet): made anew, its old deliveries gone with it.
            await this.repository.deleteLapsed(tx, found);
            count -= 1;
          }
          this.refuseAtLimit(count);
          const endpointId = await this.repository.insert(tx, caller, {
            id,
            keyId,
            name: subscription.kind!,
            arguments: args,
            scope: subscription.scope,
            filters: {
              line: subscription.filters.line ?? null,
              thread: subscription.filters.thread ?? null,
              direction: subscription.filters.direction ?? null,
              label: subscription.filters.label ?? null,
            },
            url,
            secretSealed,
            mode: subscription.mode,
            messageHistoryCount: subscription.messageHistoryCount,
            expiresAt,
          });
          return { existing: null, ...(await this.replay(tx, caller, subscription, { id: endpointId, userId: caller.userId }, from, maxAgeMs)) };
        }
      }
      // A refresh of a live subscription: its deliveries exist, so a cursor given replays nothing
      // (the draft: at or behind its in-flight position, a no-op). Its cursor is the deliveries'
      // watermark: the head, or just before the earliest event whose delivery still waits.
      await this.repository.refresh(tx, found!, secretSealed, expiresAt);
      const position = await this.repository.watermark(tx, found!.endpointId, caller.orgId);
      return { existing: found, position, truncated: false, enqueue: async () => undefined };
    });
    // If Redis refuses, the replayed rows are owed all the same: the delivery sweep enqueues them.
    await answered.enqueue().catch((error: unknown) => this.logger.warn(`could not enqueue a replay: ${(error as Error).message}`));
    const cursor = this.feed.cursors.encode({ position: answered.position, scope: subscription.scope });
    const result: SubscribeResult = { id, refreshBefore: expiresAt.toISOString(), cursor, truncated: answered.truncated };
    if (answered.existing) result.deliveryStatus = deliveryStatusOf(answered.existing);
    return result;
  }

  /**
   * In the transaction that created the subscription's endpoint, under the fan-out lock (so what
   * the feed holds now is exactly what fan-out will not bring it): without a cursor, nothing, and
   * the answer is the head. With one, the events after it that the caller may see (the feed's own
   * read and scope, the subscription's kind and filters), oldest first, without those older than
   * maxAgeMs, become deliveries as fan-out makes them; the answer is the position deliveries start
   * after. More than REPLAY_MAX events: none is replayed, the answer is the head and truncated
   * (the client fetches them with events/poll from its cursor). A cursor behind retention
   * replays what is left, truncated.
   */
  private async replay(
    manager: EntityManager,
    caller: Principal,
    subscription: Subscription,
    endpoint: { id: string; userId: string },
    from: bigint | null,
    maxAgeMs: number | undefined,
  ): Promise<Omit<Answered, 'existing'>> {
    const nothing = async () => undefined;
    if (from === null) return { position: await this.headOf(caller, subscription, manager), truncated: false, enqueue: nothing };
    const page = await this.feedEvents.read(caller, { after: from, kind: subscription.kind, filters: subscription.filters, limit: REPLAY_MAX + 1 }, manager);
    const head = [from, BigInt(page.head ?? '0')].reduce((a, b) => (b > a ? b : a));
    if (page.rows.length > REPLAY_MAX) return { position: head, truncated: true, enqueue: nothing };
    const floor = maxAgeMs === undefined ? undefined : Date.now() - maxAgeMs;
    const kept = floor === undefined ? page.rows : page.rows.filter((r) => r.occurred_at.getTime() >= floor);
    const truncated = from < BigInt(page.horizon) || kept.length < page.rows.length;
    if (kept.length === 0) return { position: head, truncated, enqueue: nothing };
    const events: PublishedEvent[] = kept.map((r) => ({
      id: r.id,
      type: r.type,
      orgId: caller.orgId,
      lineId: r.line_id,
      data: r.data,
      occurredAt: r.occurred_at,
      traceParent: null,
    })) as PublishedEvent[];
    const enqueue = await this.fanOut.deliverTo(
      manager,
      { ...endpoint, mode: subscription.mode, messageHistoryCount: subscription.messageHistoryCount },
      events,
    );
    // Everything before the first event replayed is the client's already, or skipped (retention,
    // maxAgeMs): the deliveries' own cursors carry it on from here.
    return { position: BigInt(kept[0].position) - 1n, truncated, enqueue };
  }

  /** The org's newest feed position, read in `manager`'s transaction (events/subscribe's, under the fan-out lock when it creates one). */
  private async headOf(caller: Principal, subscription: Subscription, manager: EntityManager): Promise<bigint> {
    const page = await this.feedEvents.read(caller, { after: 0n, kind: subscription.kind, filters: subscription.filters, limit: 0 }, manager);
    return BigInt(page.head ?? '0');
  }

  /** Deletes the caller's subscription named by `id`, or by the url, name and arguments it was made with; NotFound if it has none such. */
  async unsubscribe(caller: Principal, request: SubscribeRequest & { id?: unknown }): Promise<object> {
    admitted(caller, request);
    const keyId = principalOf(caller);
    let id: string;
    if (request.id !== undefined) {
      if (typeof request.id !== 'string') throw FeedRefusal.invalid('id', 'id must be the id events/subscribe answered');
      id = request.id;
    } else {
      const subscription = this.feed.subscriptionOf(request, false);
      const delivery = request.delivery as { url?: unknown } | undefined;
      if (typeof delivery?.url !== 'string')
        throw FeedRefusal.invalid('delivery.url', 'give the id events/subscribe answered, or name, arguments and delivery.url');
      id = subscriptionId(keyId, normalisedUrl(delivery.url), subscription.kind!, canonical(request.arguments ?? {}));
    }
    if (!(await this.repository.delete(keyId, id))) {
      throw new FeedRefusal('not_found', 'this credential has no such subscription (it may have expired)', { kind: 'subscription', field: 'id' });
    }
    return {};
  }

  /** Deletes subscriptions that expired or whose credential is gone; how many. */
  async sweep(): Promise<number> {
    let total = 0;
    for (let n = SWEEP_BATCH; n === SWEEP_BATCH; total += n) {
      const ended = await this.repository.deleteEnded(SWEEP_BATCH);
      n = ended.length;
      const revoked = ended.filter((e) => e.revoked);
      for (let i = 0; i < revoked.length; i += TERMINATED_AT_ONCE)
        await Promise.all(revoked.slice(i, i + TERMINATED_AT_ONCE).map((e) => this.sendTerminated(e)));
    }
    return total;
  }

  /**
   * The draft's `terminated` envelope to a subscription deleted because its credential is gone (a
   * revoked key, a disconnected app): signed and headed like a delivery, sent once (no retry: the
   * subscription no longer exists), so the client learns it must not wait for more. Expiry sends
   * none: the client stopped refreshing. Whatever happens is only logged.
   */
  private async sendTerminated(ended: EndedSubscription): Promise<void> {
    const refusal = new FeedRefusal('forbidden', 'the credential of this subscription was revoked; it no longer exists', { reason: 'access_revoked' });
    const body = JSON.stringify({ type: 'terminated', error: draftErrorOf(refusal) });
    try {
      await this.postControlEnvelope(ended.url, this.secrets.open(ended.secretSealed), ended.id, 'terminated', body);
    } catch (error) {
      this.logger.warn(`the terminated notice of an event subscription was not sent: ${(error as Error).message}`);
    }
  }

  /** One of the credential's verifications of a new callback URL (EVENT_SUBSCRIPTION_VERIFICATIONS_LIMIT), or the draft's ResourceExhausted. */
  private async spendVerification(keyId: string): Promise<void> {
    try {
      await this.rateLimits.consume('callbackVerifications', keyId, 1, isGrantId(keyId) ? 'this app' : 'this API key');
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      const { limit, windowSeconds } = this.config.rateLimits.callbackVerifications;
      throw new FeedRefusal('exhausted', `${error.message}; a refresh of an existing subscription needs no verification`, {
        limit: 'callbackVerifications',
        max: limit,
        windowSeconds,
        retryAfterSeconds: error.retryAfterSeconds,
      });
    }
  }

  /** The draft's ResourceExhausted when a credential holding `count` subscriptions may hold no more. */
  private refuseAtLimit(count: number): void {
    const max = this.config.eventSubscriptions.perKey;
    if (count >= max) {
      throw new FeedRefusal(
        'exhausted',
        `this credential holds ${count} subscriptions, the most it may (EVENT_SUBSCRIPTIONS_PER_KEY); events/unsubscribe one, or let one expire`,
        { limit: 'subscriptions', max },
      );
    }
  }

  private async checkedUrl(raw: string): Promise<string> {
    try {
      return (await this.urlPolicy.check(raw)).url.href;
    } catch (error) {
      if (error instanceof UrlRefusedError) throw FeedRefusal.invalid('delivery.url', `delivery.${error.message}`);
      throw error;
    }
  }

  private grantedTtl(value: unknown): number {
    const { minTtlMs, maxTtlMs } = this.config.eventSubscriptions;
    if (value === undefined || value === null) return maxTtlMs;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
      throw FeedRefusal.invalid('ttlMs', `ttlMs must be a positive integer (granted between ${minTtlMs} and ${maxTtlMs}), or null for the longest`);
    }
    return Math.min(maxTtlMs, Math.max(minTtlMs, value));
  }

  /**
   * One of the draft's control envelopes POSTed to a subscription's URL (through the URL policy's
   * pinned address, as every delivery), signed and headed like a delivery: Standard Webhooks with
   * the client's secret, `webhook-id` `msg_<kind>_<random>`, X-MCP-Subscription-Id.
   */
  private async postControlEnvelope(url: string, secret: string, id: string, kind: string, body: string): Promise<SendResult> {
    const checked = await this.urlPolicy.check(url);
    const webhookId = `msg_${kind}_${randomBytes(12).toString('hex')}`;
    const keys = { legacySecrets: [], standardKeys: [{ version: 'v1' as const, secret: symmetricKey(secret) }] };
    return this.sender.send({
      url: checked.url,
      address: checked.addresses[0],
      body,
      timeoutMs: VERIFY_TIMEOUT_MS,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...signatureHeaders(body, webhookId, Math.floor(Date.now() / 1000), keys),
        [SUBSCRIPTION_ID_HEADER]: id,
      },
    });
  }

  /**
   * The draft's callback verification: a signed `{"type":"verification","challenge":…}` POSTed to
   * the URL (through the URL policy's pinned address, as every delivery), answered 2xx with the
   * same challenge; otherwise CallbackEndpointError with the draft's reason.
   */
  private async verifyCallback(url: string, secret: string, id: string): Promise<void> {
    const challenge = randomBytes(24).toString('base64url');
    const result = await this.postControlEnvelope(url, secret, id, 'verify', JSON.stringify({ type: 'verification', challenge }));
    const refuse = (reason: string, detail: string) => new FeedRefusal('callback', `the callback URL did not pass verification: ${detail}`, { reason });
    if (result.statusCode === null) {
      // The draft's category only, never the network error's own words (addresses, ports, TLS
      // details): the answer must not turn the challenge into a probe of other hosts.
      const reason = { timeout: 'timeout', connection_refused: 'connection_refused', tls: 'tls_error' }[result.errorKind as string] ?? 'connection_refused';
      const said = { timeout: `no answer within ${VERIFY_TIMEOUT_MS} ms`, connection_refused: 'the connection failed', tls_error: 'the TLS handshake failed' }[
        reason
      ]!;
      throw refuse(reason, said);
    }
    if (result.statusCode >= 500) throw refuse('http_5xx', `it answered HTTP ${result.statusCode}`);
    if (result.statusCode >= 300) throw refuse('http_4xx', `it answered HTTP ${result.statusCode}`);
    let echoed: unknown;
    try {
      echoed = (JSON.parse('responseBody' in result ? result.responseBody : '') as { challenge?: unknown }).challenge;
    } catch {
      echoed = undefined;
    }
    if (typeof echoed !== 'string' || echoed.length !== challenge.length || !timingSafeEqual(Buffer.from(echoed), Buffer.from(challenge))) {
      throw refuse('challenge_failed', 'it did not answer {"challenge": …} with the challenge it was sent');
    }
  }
}

/** Whether a subscription found is live: a lapsed one (expired, not swept yet) is made anew, as one deleted. */
function isLive(state: SubscriptionState | null): state is SubscriptionState {
  return state !== null && state.expiresAt.getTime() > Date.now();
}

/** The credential a subscription belongs to (its principal): MCP callers always have one. */
function principalOf(caller: Principal): string {
  if (caller.keyId === null) throw new FeedRefusal('forbidden', 'subscriptions belong to an API key or a connected app', { reason: 'no_credential' });
  return caller.keyId;
}

/** `delivery`, checked: webhook mode with an https URL (as the webhooks' URL policy allows) and a `whsec_` secret of 24 to 64 bytes. */
function checkedDelivery(value: unknown): { url: string; secret: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw FeedRefusal.invalid('delivery', 'delivery must be {mode: "webhook", url, secret}');
  }
  const { mode, url, secret } = value as Record<string, unknown>;
  if (mode !== 'webhook') {
    throw new FeedRefusal(
      'unsupported',
      `delivery.mode ${JSON.stringify(mode)?.slice(0, 40)} is not served by events/subscribe; it takes "webhook" (poll with events/poll)`,
      {
        feature: 'delivery.mode',
        value: mode ?? null,
        field: 'delivery.mode',
      },
    );
  }
  if (typeof url !== 'string') throw FeedRefusal.invalid('delivery.url', 'delivery.url must be the https URL to deliver to');
  // The very rule deliveries are signed by (and the standardwebhooks libraries read a secret by):
  // a secret that passed here but could not sign would stop every delivery of the subscription.
  let key: Buffer | undefined;
  try {
    key = typeof secret === 'string' && secret.startsWith('whsec_') ? symmetricKey(secret) : undefined;
  } catch {
    key = undefined;
  }
  if (key === undefined) {
    throw FeedRefusal.invalid(
      'delivery.secret',
      'delivery.secret must be whsec_ followed by the standard base64 (with its = padding) of 24 to 64 random bytes',
    );
  }
  const bytes = key.length;
  if (bytes < MIN_SECRET_BYTES || bytes > MAX_SECRET_BYTES) {
    throw FeedRefusal.invalid('delivery.secret', `delivery.secret names ${bytes} bytes; it must name 24 to 64 (whsec_ + base64)`);
  }
  return { url, secret: secret as string };
}

function normalisedUrl(raw: string): string {
  try {
    const url = new URL(raw);
    url.hash = '';
    return url.href;
  } catch {
    throw FeedRefusal.invalid('delivery.url', 'delivery.url is not a URL');
  }
}

/** The arguments as canonical JSON (keys sorted), so the same arguments in another order name the same subscription. */
function canonical(value: unknown): object {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
          )
        : v;
  return sort(value) as object;
}

/** `sub_` + 32 hex of SHA-256 over (credential, url, name, arguments): stable across restarts and refreshes. */
export function subscriptionId(keyId: string, url: string, name: string, args: object): string {
  return `sub_${createHash('sha256')
    .update(JSON.stringify([keyId, url, name, args]))
    .digest('hex')
    .slice(0, 32)}`;
}

function deliveryStatusOf(state: SubscriptionState): NonNullable<SubscribeResult['deliveryStatus']> {
  return {
    active: state.status === 'active',
    consecutiveFailures: state.consecutiveFailures,
    lastError: state.lastError,
    lastAttemptAt: state.lastAttemptAt?.toISOString() ?? null,
    disabledReason: state.disabledReason,
  };
}
