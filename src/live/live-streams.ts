import { Inject, Injectable, Logger, OnModuleDestroy, ServiceUnavailableException } from '@nestjs/common';
import { WebSessionsService } from '../auth/web-sessions/web-sessions.service';
import { RateLimitedError } from '../common/errors';
import { EventStreamSink } from '../common/event-stream';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ChannelSubscriber } from '../queue/channel-subscriber';
import { RedisConnections } from '../queue/redis-connections';
import { LiveEvent, liveEventData } from './live-event';
import { SESSION_ENDED_EVENT } from './live-event-kinds';
import { liveChannel } from './live-publisher';
import { LiveRepository } from './live.repository';

/** Where a stream's frames go (the HTTP response, for the controller). */
export type LiveSink = EventStreamSink;

/** Who a stream is for: the signed-in person's user, org and session. */
export interface LiveViewer {
  userId: string;
  orgId: string;
  sessionId: string;
}

interface Stream {
  viewer: LiveViewer;
  threadId: string | null;
  sink: LiveSink;
  /** Headers sent: frames may be written. */
  started: boolean;
  closed: boolean;
}

/** What EventSource waits before it reconnects after a stream ends (the `retry:` field). */
export const RETRY_MS = 5000;
/** A client this far behind (bytes its connection has not taken) is cut off: it reconnects and fetches the page afresh. */
export const MAX_BUFFERED_BYTES = 64 * 1024;
/** Events waiting for their access check at most; beyond, new ones are dropped (the pages catch up on reconnect). */
const MAX_PENDING_EVENTS = 20_000;
const SESSION_ENDED_FRAME = `event: ${SESSION_ENDED_EVENT}\ndata: {}\n\n`;

/**
 * The live streams one API process holds open (docs/web.md, "Live updates"), and what it tells
 * them. Committed events come from every worker's relay over Redis pub/sub (LivePublisher); each
 * batch is checked against the viewers of this process in one statement (LiveRepository, the
 * webhook owners' rule), so a person is told of an event only while they may see its line. Every
 * LIVE_HEARTBEAT_MS a comment keeps each stream open through proxies, and the sessions are checked
 * again: a stream whose session ended (sign-out, revoked, idle or past its end) is told so and ended.
 *
 * Memory is bounded: a stream is a few small objects; a frame is built once per event and shared;
 * a client whose connection does not take its frames (more than MAX_BUFFERED_BYTES behind) is cut
 * off; the events waiting for their check are capped; streams per person and per process are capped.
 */
@Injectable()
export class LiveStreams implements OnModuleDestroy {
  private readonly logger = new Logger(LiveStreams.name);
  private readonly byOrg = new Map<string, Set<Stream>>();
  private readonly perUser = new Map<string, number>();
  private count = 0;
  /** One subscriber connection per process, made when the first stream opens. */
  private readonly subscriber: ChannelSubscriber;
  private heartbeat?: NodeJS.Timeout;
  private checkingSessions = false;
  private pending: LiveEvent[] = [];
  private dispatching = false;
  private dropped = 0;

  constructor(
    private readonly repository: LiveRepository,
    private readonly sessions: WebSessionsService,
    connections: RedisConnections,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.subscriber = new ChannelSubscriber(connections, liveChannel(config), (message) => this.received(message));
  }

  /** Streams open in this process now. */
  get size(): number {
    return this.count;
  }

  /**
   * Opens a stream for the viewer (narrowed to one thread when `threadId` is given), or throws:
   * RateLimitedError (429) past LIVE_STREAMS_PER_PERSON or LIVE_STREAMS_PER_PROCESS, 503 when
   * Redis cannot be subscribed to. Once it resolves, the sink has started; it ends on close.
   */
  async open(viewer: LiveViewer, threadId: string | null, sink: LiveSink): Promise<void> {
    const { streamsPerPerson, streamsPerProcess } = this.config.live;
    if ((this.perUser.get(viewer.userId) ?? 0) >= streamsPerPerson) {
      throw new RateLimitedError(
        `at most ${streamsPerPerson} live streams per person are open at once: close another tab of this app, or reload it later`,
        RETRY_MS / 1000,
      );
    }
    if (this.count >= streamsPerProcess) throw new RateLimitedError('this server holds as many live streams as it can: reload the page later', RETRY_MS / 1000);
    const stream: Stream = { viewer, threadId, sink, started: false, closed: false };
    this.add(stream);
    sink.onClose(() => this.remove(stream));
    try {
      await this.subscriber.subscribe();
    } catch (error) {
      this.remove(stream);
      throw new ServiceUnavailableException(`live updates are unavailable: ${(error as Error).message}`);
    }
    if (stream.closed) return;
    sink.start(`retry: ${RETRY_MS}\n: live\n\n`);
    stream.started = true;
  }

  async onModuleDestroy(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    for (const streams of [...this.byOrg.values()]) for (const stream of [...streams]) this.end(stream);
    this.subscriber.disconnect();
  }

  private add(stream: Stream): void {
    const { orgId, userId } = stream.viewer;
    let streams = this.byOrg.get(orgId);
    if (!streams) this.byOrg.set(orgId, (streams = new Set()));
    streams.add(stream);
    this.perUser.set(userId, (this.perUser.get(userId) ?? 0) + 1);
    this.count += 1;
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => this.beat(), this.config.live.heartbeatMs);
      this.heartbeat.unref();
    }
  }

  /** Forgets the stream (once): its org's set, its user's count, and the heartbeat when none is left. */
  private remove(stream: Stream): void {
    if (stream.closed) return;
    stream.closed = true;
    const { orgId, userId } = stream.viewer;
    const streams = this.byOrg.get(orgId);
    streams?.delete(stream);
    if (streams?.size === 0) this.byOrg.delete(orgId);
    const count = (this.perUser.get(userId) ?? 1) - 1;
    if (count > 0) this.perUser.set(userId, count);
    else this.perUser.delete(userId);
    this.count -= 1;
    if (this.count === 0 && this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    }
  }

  private end(stream: Stream): void {
    this.remove(stream);
    stream.sink.end();
  }

  private send(stream: Stream, frame: string): void {
    if (!stream.started || stream.closed) return;
    stream.sink.write(frame);
    if (stream.sink.buffered() > MAX_BUFFERED_BYTES) {
      // Cut, not ended: a client that does not read would keep a gracefully ended response, its socket and its unread frames.
      this.remove(stream);
      stream.sink.cut();
    }
  }

  /** A batch of committed events from a relay: the ones of orgs with streams here wait for their access check. */
  private received(message: string): void {
    if (this.count === 0) return;
    let events: LiveEvent[];
    try {
      events = JSON.parse(message) as LiveEvent[];
    } catch {
      return;
    }
    for (const event of events) {
      if (!this.byOrg.has(event.orgId)) continue;
      if (this.pending.length >= MAX_PENDING_EVENTS) this.dropped += 1;
      else this.pending.push(event);
    }
    if (this.dropped > 0 && this.pending.length < MAX_PENDING_EVENTS / 2) {
      this.logger.warn(`${this.dropped} live events dropped: their access checks fell behind`);
      this.dropped = 0;
    }
    void this.dispatch();
  }

  /** Checks what waits, all of it in one statement, and tells each stream what its person may see; one round at a time, in order. */
  private async dispatch(): Promise<void> {
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      while (this.pending.length > 0) {
        const batch = this.pending;
        this.pending = [];
        await this.tell(batch).catch((error: unknown) => this.logger.warn(`live events not sent: ${(error as Error).message}`));
      }
    } finally {
      this.dispatching = false;
    }
  }

  private async tell(events: LiveEvent[]): Promise<void> {
    const orgIds = new Set(events.map((e) => e.orgId));
    const streams: Stream[] = [];
    for (const orgId of orgIds) for (const stream of this.byOrg.get(orgId) ?? []) streams.push(stream);
    const userIds = new Set(streams.map((stream) => stream.viewer.userId));
    const pairs = await this.repository.visiblePairs([...userIds], [...new Set(events.map((e) => e.lineId))]);
    const visible = new Set(pairs.map((p) => `${p.user_id} ${p.line_id}`));
    const frames = events.map((event) => `id: ${event.id}\nevent: ${event.type}\ndata: ${liveEventData(event)}\n\n`);
    // Each stream gets one write for the whole batch (a write is a system call and, without Nagle,
    // a packet). Streams of one person narrowed alike (a person's tabs) get the same text: it is
    // made once for them, not once per stream.
    const texts = new Map<string, string>();
    for (const stream of streams) {
      if (stream.closed) continue;
      const { userId, orgId } = stream.viewer;
      const key = `${userId} ${stream.threadId ?? '*'}`;
      let text = texts.get(key);
      if (text === undefined) {
        text = '';
        events.forEach((event, i) => {
          if (event.orgId !== orgId || (stream.threadId !== null && stream.threadId !== event.threadId)) return;
          if (visible.has(`${userId} ${event.lineId}`)) text += frames[i];
        });
        texts.set(key, text);
      }
      if (text !== '') this.send(stream, text);
    }
  }

  /** The heartbeat: a comment on every stream, then the sessions checked again (one statement); ended ones are told and closed. */
  private beat(): void {
    const all = [...this.byOrg.values()].flatMap((streams) => [...streams]);
    for (const stream of all) this.send(stream, ': heartbeat\n\n');
    if (this.checkingSessions || all.length === 0) return;
    this.checkingSessions = true;
    void this.sessions
      .liveSessionIds([...new Set(all.map((s) => s.viewer.sessionId))])
      .then((live) => {
        for (const stream of all) {
          if (live.has(stream.viewer.sessionId) || stream.closed) continue;
          this.send(stream, SESSION_ENDED_FRAME);
          this.end(stream);
        }
      })
      .catch((error: unknown) => this.logger.warn(`live streams' sessions not checked: ${(error as Error).message}`))
      .finally(() => (this.checkingSessions = false));
  }
}
