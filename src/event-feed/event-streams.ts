import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { Principal } from '../identity/principal';
import { concerns, CredentialChanges } from '../auth/credential-changes';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { EventStreamEndReason, ServiceMetrics } from '../ops/metrics/service-metrics';
import { FeedRefusal } from './event-feed.errors';
import { EventFeedRepository, FeedRow } from './event-feed.repository';
import { admitted, EventFeedService, EventOccurrence, FEED_PERMISSION, optionalInteger, PollRequest, Subscription, waitFirst } from './event-feed.service';
import { readSpan } from './feed-span';
import { FeedWakes } from './feed-wakes';

/** events/stream's request (the draft's), as it came: checked by EventStreams.check. */
export type StreamRequest = Pick<PollRequest, 'name' | 'arguments' | 'cursor' | 'maxAgeMs'>;

/** A stream request that passed every check: what to read, from where. */
export interface CheckedStream {
  subscription: Subscription;
  /** The position to deliver after; null: from now (the head when the stream opens). */
  after: bigint | null;
  /** The cursor `after` came from, as the client gave it: a resumed stream's `active` gives it back. */
  cursor: string | null;
  maxAgeMs: number | undefined;
}

/**
 * Where a stream's notifications go, in the words of the draft (the surface frames them: the MCP
 * endpoint as JSON-RPC notifications on a server-sent event stream, tagged with the request's id).
 */
export interface StreamOutput {
  /** notifications/events/active: first, and again mid-stream after a gap. */
  active(cursor: string, truncated: boolean): void;
  /** notifications/events/event: one occurrence, with the cursor just past it. */
  event(occurrence: EventOccurrence & { cursor: string }): void;
  /** notifications/events/heartbeat: the position checked up to. */
  heartbeat(cursor: string): void;
  /** notifications/events/terminated: access ended; finish follows. */
  terminated(refusal: FeedRefusal): void;
  /** The final frame (the request's result), then the end of the response. */
  finish(): void;
  /** The end of the response with no more frames: the client reads too slowly. */
  cut(): void;
  /** Bytes written that the client has not taken yet. */
  buffered(): number;
  /** Resolves true once the client has taken what was written, false after `ms`. */
  drained(ms: number): Promise<boolean>;
  /** Called once when the response ends, whoever ended it. */
  onClose(listener: () => void): void;
}

/** Resolves the stream's credential again, as a new request would: null when it no longer works. */
export type Recheck = () => Promise<Principal | null>;

interface OpenStream {
  caller: Principal;
  slotKey: string;
  checked: CheckedStream;
  output: StreamOutput;
  recheck: Recheck;
  /** The position delivered up to (events after it are the stream's to send). */
  position: bigint;
  /** When the next heartbeat is due (and the credential is checked again). */
  beatAt: number;
  credentialChanged: boolean;
  closed: boolean;
  stop: AbortController;
  wake: () => void;
}

/** Events one read of a stream takes: a backlog goes out in pages of this many, each waiting for the client to take the last. */
const PAGE = 100;
/** A client that leaves this much unread longer than a heartbeat interval is cut off, as a live page's stream is. */
const MAX_BUFFERED_BYTES = 64 * 1024;

/**
 * The event feed's push mode (docs/mcp.md, "events/stream"): one long-lived request per
 * subscription, holding no state but its position. Each stream reads the committed log from its
 * cursor when FeedWakes says its org's events committed (and every EVENT_FEED_RECHECK_MS in any
 * case), sends what the caller may see, and a heartbeat with its cursor when quiet. Before
 * anything read is sent, and at every heartbeat, and at once when word comes that the credential
 * changed, the caller is resolved again: a credential that no longer works, lost the `webhooks`
 * permission, or sees fewer lines than when the stream opened ends it with `terminated`. (The read
 * itself checks live memberships in its statement, so a line lost between two checks shows
 * nothing either.) Streams are bounded per credential and per process, hold no running-call slot,
 * and end gracefully when the process shuts down.
 */
@Injectable()
export class EventStreams implements BeforeApplicationShutdown {
  private readonly logger = new Logger(EventStreams.name);
  private readonly streams = new Set<OpenStream>();
  private readonly perKey = new Map<string, number>();
  private unlisten?: Promise<(() => void) | undefined>;
  private readonly recheckMs: number;

  constructor(
    private readonly feed: EventFeedService,
    private readonly repository: EventFeedRepository,
    private readonly wakes: FeedWakes,
    private readonly credentials: CredentialChanges,
    private readonly metrics: ServiceMetrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.recheckMs = config.eventFeed.recheckMs;
  }

  /** Streams open in this process now. */
  get size(): number {
    return this.streams.size;
  }

  /** Every check of the request, before a stream opens: a refusal is the request's error and no stream is opened. */
  check(caller: Principal, request: StreamRequest): CheckedStream {
    admitted(caller, request);
    const subscription = this.feed.subscriptionOf(request, false);
    const maxAgeMs = optionalInteger(request.maxAgeMs, 'maxAgeMs', 0, Number.MAX_SAFE_INTEGER);
    const cursor = request.cursor;
    if (cursor !== undefined && cursor !== null && typeof cursor !== 'string') {
      throw FeedRefusal.invalid('cursor', 'cursor must be a string this server gave out, or null to start from now');
    }
    const after = typeof cursor === 'string' ? this.feed.cursors.decode(cursor, subscription.scope) : null;
    return { subscription, after, cursor: typeof cursor === 'string' ? cursor : null, maxAgeMs };
  }

  /**
   * Opens a checked stream: a ResourceExhausted refusal past a bound (nothing written), else the
   * stream runs until the client leaves, access ends, or the process shuts down.
   */
  open(caller: Principal, checked: CheckedStream, output: StreamOutput, recheck: Recheck): void {
    const { streamsPerKey, streamsPerProcess } = this.config.eventStreams;
    const slotKey = caller.keyId ?? `user:${caller.userId}`;
    const held = this.perKey.get(slotKey) ?? 0;
    if (held >= streamsPerKey) {
      const message = `this credential already holds ${held} event streams here (EVENT_FEED_STREAMS_PER_KEY): close one first`;
      throw new FeedRefusal('exhausted', message, { limit: 'streamsPerKey', max: streamsPerKey });
    }
    if (this.streams.size >= streamsPerProcess) {
      throw new FeedRefusal('exhausted', 'this server holds as many event streams as it can (EVENT_FEED_STREAMS_PER_PROCESS): retry later', {
        limit: 'streamsPerProcess',
        max: streamsPerProcess,
      });
    }
    const stream: OpenStream = {
      caller,
      slotKey,
      checked,
      output,
      recheck,
      position: 0n,
      beatAt: Date.now() + this.config.eventStreams.heartbeatMs,
      credentialChanged: false,
      closed: false,
      stop: new AbortController(),
      wake: () => undefined,
    };
    this.streams.add(stream);
    this.perKey.set(slotKey, held + 1);
    this.metrics.eventStreamOpened();
    output.onClose(() => this.remove(stream, 'client_closed'));
    // Word of credential changes from every process; without Redis, the heartbeat's check still comes.
    this.unlisten ??= this.credentials.listen((id) => this.changed(id)).catch(() => (this.unlisten = undefined));
    void this.run(stream);
  }

  /** Ends every stream as the draft asks of a server that closes one: the final frame, then the end. */
  beforeApplicationShutdown(): void {
    for (const stream of [...this.streams]) this.end(stream, 'shutdown', () => stream.output.finish());
    void this.unlisten?.then((stop) => stop?.()).catch(() => undefined);
    this.unlisten = undefined;
  }

  /** Forgets the stream, once, whoever ends it first: the reason is the first one's. */
  private remove(stream: OpenStream, reason: EventStreamEndReason): void {
    if (stream.closed) return;
    stream.closed = true;
    this.metrics.eventStreamEnded(reason);
    stream.stop.abort();
    this.streams.delete(stream);
    const left = (this.perKey.get(stream.slotKey) ?? 1) - 1;
    if (left > 0) this.perKey.set(stream.slotKey, left);
    else this.perKey.delete(stream.slotKey);
  }

  private end(stream: OpenStream, reason: EventStreamEndReason, last: () => void): void {
    if (stream.closed) return;
    this.remove(stream, reason);
    last();
  }

  private changed(changedId: string): void {
    for (const stream of this.streams) {
      if (!concerns(stream.caller, changedId)) continue;
      stream.credentialChanged = true;
      stream.wake();
    }
  }

  private async run(stream: OpenStream): Promise<void> {
    try {
      if (stream.checked.after === null) {
        const page = await this.repository.read(stream.caller, {
          after: 0n,
          kind: stream.checked.subscription.kind,
          filters: stream.checked.subscription.filters,
          limit: 0,
        });
        stream.position = BigInt(page.head ?? '0');
        if (stream.closed) return;
        stream.output.active(this.cursorOf(stream, stream.position), false);
      } else {
        stream.position = stream.checked.after;
      }
      let first = stream.checked.after !== null;
      while (!stream.closed) {
        let wakeNow = () => {};
        const wake = new Promise<void>((resolve) => (wakeNow = resolve));
        stream.wake = () => wakeNow();
        const stopWaiting = this.wakes.waitFor(stream.caller.orgId, stream.wake);
        try {
          await this.round(stream, first);
          first = false;
          if (stream.closed) return;
          const untilBeat = stream.beatAt - Date.now();
          if (untilBeat > 0 && !stream.credentialChanged) await waitFirst(wake, Math.min(untilBeat, this.recheckMs), stream.stop.signal);
        } catch (error) {
          // The database went away for a moment: the stream stays open and reads again at the next recheck.
          this.logger.warn(`an event stream's read failed: ${(error as Error).message}`);
          await waitFirst(wake, this.recheckMs, stream.stop.signal);
        } finally {
          stopWaiting();
        }
      }
    } catch (error) {
      this.logger.warn(`an event stream did not start: ${(error as Error).message}`);
      this.end(stream, 'error', () => stream.output.cut());
    }
  }

  /**
   * One round: the credential checked again when due, then every event after the position sent,
   * page by page (the first round's truncation and cursor in `active` before them), then the
   * heartbeat when due.
   */
  private async round(stream: OpenStream, first: boolean): Promise<void> {
    const { subscription, maxAgeMs } = stream.checked;
    const beatDue = Date.now() >= stream.beatAt;
    let checked = false;
    if (beatDue || stream.credentialChanged) {
      stream.credentialChanged = false;
      if (!(await this.stillAllowed(stream))) return;
      checked = true;
    }
    for (;;) {
      const after = stream.position;
      const { rows: kept, position, truncated, hasMore } = await readSpan(this.repository, stream.caller, subscription, after, PAGE, maxAgeMs);
      if (kept.length > 0 && !checked) {
        // What the caller may see is decided now, before a single event of this read goes out.
        if (!(await this.stillAllowed(stream))) return;
        checked = true;
      }
      if (stream.closed) return;
      if (first || truncated) {
        // A gap is no error: a fresh cursor (just before the first event sent, or where the read ended)
        // and the stream goes on. Resumed with no gap: the client's own cursor back, so it can tell.
        const fresh = truncated ? (kept.length > 0 ? BigInt(kept[0].position) - 1n : position) : after;
        const resumed = !truncated && stream.checked.cursor !== null && fresh === stream.checked.after;
        stream.output.active(resumed ? stream.checked.cursor! : this.cursorOf(stream, fresh), truncated);
        first = false;
      }
      for (const row of kept) {
        stream.output.event(this.occurrence(stream, row));
        // Checked after each event, not each page: a page of verbose events can be megabytes.
        if (stream.output.buffered() > MAX_BUFFERED_BYTES && !(await stream.output.drained(this.config.eventStreams.heartbeatMs))) {
          this.end(stream, 'slow_reader', () => stream.output.cut());
          return;
        }
        if (stream.closed) return;
      }
      stream.position = position;
      if (!hasMore) break;
    }
    if (beatDue) {
      stream.output.heartbeat(this.cursorOf(stream, stream.position));
      stream.beatAt = Date.now() + this.config.eventStreams.heartbeatMs;
    }
  }

  /**
   * Resolves the caller again; ends the stream with `terminated` when its access ended or narrowed
   * (fewer lines, channel access no longer all). Wider access is taken as it is. A failed look-up
   * leaves the stream as it was, to be checked at the next heartbeat.
   */
  private async stillAllowed(stream: OpenStream): Promise<boolean> {
    let now: Principal | null;
    try {
      now = await stream.recheck();
    } catch (error) {
      this.logger.warn(`an event stream's credential was not checked: ${(error as Error).message}`);
      return true;
    }
    if (stream.closed) return false;
    const refusal = endedAccess(stream.caller, now);
    if (refusal) {
      this.end(stream, 'access_ended', () => {
        stream.output.terminated(refusal);
        stream.output.finish();
      });
      return false;
    }
    stream.caller = now!;
    return true;
  }

  private cursorOf(stream: OpenStream, position: bigint): string {
    return this.feed.cursors.encode({ position, scope: stream.checked.subscription.scope });
  }

  private occurrence(stream: OpenStream, row: FeedRow): EventOccurrence & { cursor: string } {
    return { ...this.feed.occurrence(stream.caller, stream.checked.subscription, row), cursor: this.cursorOf(stream, BigInt(row.position)) };
  }
}

/** Why a stream's access ended, comparing the caller as it opened (or was last checked) with the caller now; null while it may go on. */
export function endedAccess(before: Principal, now: Principal | null): FeedRefusal | null {
  if (!now || now.userId !== before.userId || now.orgId !== before.orgId) {
    return new FeedRefusal('forbidden', 'the credential of this stream no longer works (revoked, expired or replaced)', { reason: 'access_revoked' });
  }
  if (!now.permissions.includes(FEED_PERMISSION)) {
    return new FeedRefusal('forbidden', `the credential of this stream no longer has the ${FEED_PERMISSION} permission`, {
      reason: 'missing_permission',
      permission: FEED_PERMISSION,
    });
  }
  const lines = new Set(now.lines.map((line) => line.id));
  if ((before.channelAccess === 'ALL' && now.channelAccess !== 'ALL') || before.lines.some((line) => !lines.has(line.id))) {
    return new FeedRefusal(
      'forbidden',
      'the lines this credential may see were narrowed: open the stream again from its cursor to go on with what it sees now',
      {
        reason: 'access_narrowed',
      },
    );
  }
  return null;
}
