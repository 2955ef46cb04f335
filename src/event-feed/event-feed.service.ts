import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ValidateFunction } from 'ajv';
import { ApiKeysService } from '../auth/api-keys.service';
import { Principal } from '../identity/principal';
import { concerns, CredentialChanges } from '../auth/credential-changes';
import { KeyPermission } from '../identity/key-permissions';
import { AttachmentUrls } from '../common/attachment-urls';
import { findIllFormed } from '../common/well-formed';
import { argumentValidator, describeArgumentError } from '../tools/tool-arguments';
import { buildEventData } from '../delivery/payloads';
import { EventCatalog } from '../event-catalog/event-catalog.service';
import { EVENT_KINDS, EventKind } from '../events/event-kinds';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ConcurrencyGate } from '../limits/concurrency-gate';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { PayloadMode } from '../webhooks/webhook.types';
import { EventDescriptor, eventDescriptors, FeedFilter, FILTERS_BY_KIND, inputSchemaOf } from './event-descriptors';
import { FeedRefusal } from './event-feed.errors';
import { EventFeedRepository, FeedRow } from './event-feed.repository';
import { FeedCursors } from './feed-cursor';
import { readSpan } from './feed-span';
import { FeedWakes } from './feed-wakes';

/** The validator of the HTTP feed's arguments when no kind is named. */
const ALL_KINDS = '*';
const ALL_FILTERS: FeedFilter[] = ['line', 'thread', 'direction', 'label'];

/** The permission every way of receiving events needs (docs/mcp.md, "Events": why `webhooks`). */
export const FEED_PERMISSION: KeyPermission = 'webhooks';
/** Events one poll answers at most, and when maxEvents is not given. */
export const MAX_EVENTS = 100;
export const DEFAULT_MAX_EVENTS = 50;
/**
 * How long an events/poll with nothing new waits when it gives no timeoutMs (at most
 * EVENT_FEED_MAX_WAIT_MS, 30 s by default: below the 60 s after which the official SDKs time a
 * request out and common proxies close an idle connection, and short enough that a waiting poll
 * holds its key's running-call slot for a bounded time).
 */
export const LONG_POLL_DEFAULT_MS = 20_000;
/** What a poll answers as nextPollMs when it has no more to give: the client's usual floor; the next poll waits server-side anyway. */
export const NEXT_POLL_MS = 1_000;

/** events/poll's request (the draft's), as it came: checked by poll. */
export interface PollRequest {
  name?: unknown;
  arguments?: unknown;
  cursor?: unknown;
  maxAgeMs?: unknown;
  maxEvents?: unknown;
  timeoutMs?: unknown;
}

/** One event as the draft's EventOccurrence: `data` is the webhook envelope of the event, in the subscription's mode. */
export interface EventOccurrence {
  eventId: string;
  name: EventKind;
  timestamp: string;
  data: { id: string; type: EventKind; createdAt: string; mode: PayloadMode; data: object };
}

export interface PollResult {
  events: EventOccurrence[];
  cursor: string;
  truncated: boolean;
  hasMore: boolean;
  nextPollMs: number;
}

/** A checked subscription: what to read and how to shape it. events/stream (event-streams.ts) and events/subscribe (event-subscriptions.service.ts) take it too. */
export interface Subscription {
  /** One kind (events/poll), or null for every kind (the HTTP feed without `type`). */
  kind: EventKind | null;
  filters: Partial<Record<FeedFilter, string>>;
  mode: PayloadMode;
  messageHistoryCount: number;
  /** What cursors of this subscription are bound to (feed-cursor.ts). */
  scope: string;
}

/**
 * The event feed (docs/mcp.md, "Events"; docs/events-feed.md): the committed events a caller may
 * see, read from a cursor, one implementation behind events/poll and GET /api/events, and
 * read by the stream and webhook modes too. Holds no state per client: the cursor says where to go on.
 */
@Injectable()
export class EventFeedService {
  private readonly validators = new Map<EventKind | typeof ALL_KINDS, ValidateFunction>();
  private readonly longPolls: ConcurrencyGate;
  /** The longest a poll may wait (EVENT_FEED_MAX_WAIT_MS). */
  readonly maxWaitMs: number;
  private readonly recheckMs: number;
  private readonly descriptors: readonly EventDescriptor[];
  /** The cursors every mode mints and opens (sealed: feed-cursor.ts). */
  readonly cursors: FeedCursors;

  constructor(
    private readonly repository: EventFeedRepository,
    private readonly wakes: FeedWakes,
    private readonly keys: ApiKeysService,
    private readonly credentials: CredentialChanges,
    private readonly attachmentUrls: AttachmentUrls,
    private readonly metrics: ServiceMetrics,
    catalog: EventCatalog,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.longPolls = new ConcurrencyGate(config.eventFeed.longPollsPerKey);
    this.maxWaitMs = config.eventFeed.maxWaitMs;
    this.recheckMs = config.eventFeed.recheckMs;
    this.cursors = new FeedCursors(config);
    const ajv = argumentValidator();
    for (const kind of EVENT_KINDS) this.validators.set(kind, ajv.compile(inputSchemaOf(kind)));
    this.validators.set(ALL_KINDS, ajv.compile(inputSchemaOf(null)));
    this.descriptors = eventDescriptors((kind) => catalog.feedPayloadSchema(kind));
  }

  /** events/list: the catalog; the same for every caller (it holds no data). */
  list(): { events: readonly EventDescriptor[] } {
    return { events: this.descriptors };
  }

  /**
   * One poll: the caller's events after the cursor (none and the head for a null cursor), waiting
   * up to timeoutMs when there are none, returning as soon as one commits. `signal` ends a wait
   * early (the client hung up).
   */
  async poll(caller: Principal, request: PollRequest, options: { signal?: AbortSignal; allKinds?: boolean } = {}): Promise<PollResult> {
    const { signal } = options;
    admitted(caller, request); // first: a credential that may not receive events learns nothing more
    const subscription = this.subscriptionOf(request, options.allKinds ?? false);
    const maxAgeMs = optionalInteger(request.maxAgeMs, 'maxAgeMs', 0, Number.MAX_SAFE_INTEGER);
    const maxEvents = optionalInteger(request.maxEvents, 'maxEvents', 1, MAX_EVENTS) ?? DEFAULT_MAX_EVENTS;
    const timeoutMs = optionalInteger(request.timeoutMs, 'timeoutMs', 0, this.maxWaitMs) ?? Math.min(LONG_POLL_DEFAULT_MS, this.maxWaitMs);
    if (request.cursor !== undefined && request.cursor !== null && typeof request.cursor !== 'string') {
      throw FeedRefusal.invalid('cursor', 'cursor must be a string this server gave out, or null to start from now');
    }
    if (request.cursor === undefined || request.cursor === null) {
      const page = await this.repository.read(caller, { after: 0n, kind: subscription.kind, filters: subscription.filters, limit: 0 });
      return this.result(caller, subscription, [], BigInt(page.head ?? '0'), false, false);
    }
    const after = this.cursors.decode(request.cursor, subscription.scope);
    const deadline = Date.now() + timeoutMs;
    let slotKey: string | undefined;
    let wakeNow = () => {};
    // The caller was resolved when the request came in: once its credential changes (revoked,
    // narrowed, a permission taken away) a waiting poll answers at once without reading, and the
    // client's next poll is resolved afresh.
    let credentialChanged = false;
    let stopListening: (() => void) | undefined;
    let checkedAt = Date.now();
    try {
      for (let round = 0; ; round += 1) {
        if (signal?.aborted) return this.result(caller, subscription, [], after, false, false); // the client is gone: nobody reads this
        // Ask the database whether the credential still works when word of a change came, when no
        // word can come (Redis not listened to), and at least every EVENT_FEED_RECHECK_MS (word
        // missed while Redis reconnected); not on every wake: 100 polls woken by one event make
        // 100 reads, not 200 statements.
        const askDatabase = credentialChanged || stopListening === undefined || Date.now() - checkedAt >= this.recheckMs;
        if (round > 0 && askDatabase && caller.keyId !== null) {
          if (!(await this.keys.isActive(caller.keyId))) {
            throw new FeedRefusal('forbidden', 'the credential of this poll was revoked while it waited', { reason: 'access_revoked' });
          }
          checkedAt = Date.now();
        }
        if (credentialChanged) return this.result(caller, subscription, [], after, false, false, 0);
        const wake = new Promise<void>((resolve) => (wakeNow = resolve));
        const stopWaiting = this.wakes.waitFor(caller.orgId, () => wakeNow());
        try {
          const answer = await this.readPage(caller, subscription, after, maxEvents, maxAgeMs);
          const left = deadline - Date.now();
          if (answer.events.length > 0 || answer.truncated || left <= 0) return answer;
          if (slotKey === undefined) {
            slotKey = this.takeLongPollSlot(caller);
            this.metrics.longPollWaiting(1);
            stopListening = await this.listenForChanges(caller, () => {
              credentialChanged = true;
              wakeNow();
            });
          }
          await waitFirst(wake, Math.min(left, this.recheckMs), signal);
        } finally {
          stopWaiting();
        }
      }
    } finally {
      stopListening?.();
      if (slotKey !== undefined) {
        this.longPolls.give(slotKey, 1);
        this.metrics.longPollWaiting(-1);
      }
    }
  }

  /** Calls `changed` when the caller's credential changes; nothing when Redis cannot be had (the rechecks ask the database). */
  private async listenForChanges(caller: Principal, changed: () => void): Promise<(() => void) | undefined> {
    return this.credentials.listen((id) => concerns(caller, id) && changed()).catch(() => undefined);
  }

  /** One read of the caller's events after `after` (readSpan), as a poll answers it. */
  async readPage(caller: Principal, subscription: Subscription, after: bigint, maxEvents: number, maxAgeMs: number | undefined): Promise<PollResult> {
    const span = await readSpan(this.repository, caller, subscription, after, maxEvents, maxAgeMs);
    return this.result(caller, subscription, span.rows, span.position, span.truncated, span.hasMore);
  }

  private result(
    caller: Principal,
    subscription: Subscription,
    rows: FeedRow[],
    position: bigint,
    truncated: boolean,
    hasMore: boolean,
    nextPollMs = hasMore ? 0 : NEXT_POLL_MS,
  ): PollResult {
    const now = new Date();
    return {
      events: rows.map((row) => this.occurrence(caller, subscription, row, now)),
      cursor: this.cursors.encode({ position, scope: subscription.scope }),
      truncated,
      hasMore,
      nextPollMs,
    };
  }

  /**
   * One event as the caller receives it (a poll's, a stream's): verbose attachments get download
   * links signed for the caller at this read, as read_attachment signs them.
   */
  occurrence(caller: Principal, subscription: Subscription, row: FeedRow, now = new Date()): EventOccurrence {
    const holder = { userId: caller.userId, keyId: caller.keyId };
    return occurrenceOf(row, subscription, (data) => this.attachmentUrls.withSignedLinks(data, holder, now));
  }

  /** The key's slot among EVENT_FEED_LONG_POLLS_PER_KEY waiting polls, or the draft's ResourceExhausted. */
  private takeLongPollSlot(caller: Principal): string {
    const key = caller.keyId ?? `user:${caller.userId}`;
    if (this.longPolls.tryTake(key, 1) === 0) {
      const max = this.longPolls.limit;
      const message = `at most ${max} polls of one credential may wait at once (EVENT_FEED_LONG_POLLS_PER_KEY); poll with timeoutMs 0, or wait for one to return`;
      throw new FeedRefusal('exhausted', message, { limit: 'concurrentLongPolls', max });
    }
    return key;
  }

  /**
   * The event name and arguments, checked: an unknown name is NotFound, bad arguments name the one
   * at fault. `allKinds`: a missing name means every kind (the HTTP feed), with every filter.
   */
  subscriptionOf(request: Pick<PollRequest, 'name' | 'arguments'>, allKinds: boolean): Subscription {
    if (request.name === undefined && allKinds) return this.checkedArguments(null, request.arguments);
    if (typeof request.name !== 'string') throw FeedRefusal.invalid('name', 'name must be the name of an event kind (events/list)');
    if (!this.validators.has(request.name as EventKind)) {
      throw new FeedRefusal('not_found', `no event kind is named ${JSON.stringify(request.name.slice(0, 80))}; events/list names them`, {
        kind: 'event',
        field: 'name',
      });
    }
    return this.checkedArguments(request.name as EventKind, request.arguments);
  }

  private checkedArguments(kind: EventKind | null, given: unknown): Subscription {
    const validate = this.validators.get(kind ?? ALL_KINDS)!;
    const applicable = kind === null ? ALL_FILTERS : FILTERS_BY_KIND[kind];
    const raw = given === undefined || given === null ? {} : given;
    if (typeof raw !== 'object' || Array.isArray(raw)) throw FeedRefusal.invalid('arguments', 'arguments must be an object');
    const args = JSON.parse(JSON.stringify(raw)) as Record<string, unknown>;
    if (!validate(args)) {
      const error = validate.errors?.[0];
      const at = error?.instancePath ? error.instancePath.slice(1).replace(/\//g, '.') : (error?.params as { additionalProperty?: string })?.additionalProperty;
      const takes = Object.keys((inputSchemaOf(kind) as { properties: object }).properties).join(', ');
      throw FeedRefusal.invalid(at ? `arguments.${at}` : 'arguments', `arguments: ${describeArgumentError(error)} (${kind ?? 'the feed'} takes ${takes})`);
    }
    const filters: Partial<Record<FeedFilter, string>> = {};
    for (const filter of applicable) if (typeof args[filter] === 'string') filters[filter] = args[filter];
    const canonical = JSON.stringify([kind ?? '*', ...ALL_FILTERS.map((f) => filters[f] ?? null)]);
    return {
      kind,
      filters,
      mode: args.mode as PayloadMode,
      messageHistoryCount: args.messageHistoryCount as number,
      scope: createHash('sha256').update(canonical).digest('hex').slice(0, 16),
    };
  }
}

/**
 * The one check of every way in (poll, stream, subscribe, unsubscribe), before anything else: a
 * credential without the `webhooks` permission receives no events; then no string of the request
 * (names, arguments, URLs, ids, at any depth) may hold U+0000 or a lone surrogate, which the
 * database would refuse mid-read: refused naming where it is. (The HTTP feed's query is checked
 * by the global request check too.)
 */
export function admitted(caller: Principal, request: unknown): void {
  requirePermission(caller);
  const illFormed = findIllFormed(request);
  if (illFormed) throw FeedRefusal.invalid(illFormed.path || 'params', illFormed.message);
}

/** A credential without the `webhooks` permission receives no events. */
function requirePermission(caller: Principal): void {
  if (!caller.permissions.includes(FEED_PERMISSION)) {
    throw new FeedRefusal('forbidden', `receiving events needs the ${FEED_PERMISSION} permission, which this credential does not have`, {
      reason: 'missing_permission',
      permission: FEED_PERMISSION,
    });
  }
}

function occurrenceOf(row: FeedRow, subscription: Subscription, signLinks: (data: object) => object): EventOccurrence {
  const eventId = `evt_${row.id}`;
  const timestamp = row.occurred_at.toISOString();
  return {
    eventId,
    name: row.type,
    timestamp,
    data: {
      id: eventId,
      type: row.type,
      createdAt: timestamp,
      mode: subscription.mode,
      data: signLinks(buildEventData(row.type, row.data, subscription.mode, subscription.messageHistoryCount)),
    },
  };
}

/** An optional integer parameter from `min` to `max`, or the refusal naming it. */
export function optionalInteger(value: unknown, field: string, min: number, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw FeedRefusal.invalid(field, `${field} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** Resolves on the wake, after `ms`, or when `signal` aborts, whichever is first. */
export function waitFirst(wake: Promise<void>, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    const onAbort = () => done();
    signal?.addEventListener('abort', onAbort, { once: true });
    void wake.then(done);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }
  });
}
