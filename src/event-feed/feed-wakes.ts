import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { OutboxRelay } from '../events/outbox-relay';
import { ChannelSubscriber } from '../queue/channel-subscriber';
import { RedisConnections } from '../queue/redis-connections';
import { RedisClient } from '../queue/queue.module';

/** The Redis pub/sub channel that says "events of these orgs committed": one per QUEUE_PREFIX. */
export function feedChannel(config: AppConfig): string {
  return `${config.queuePrefix}:event-feed`;
}

/**
 * Wakes the long polls waiting for an org's events (docs/mcp.md, "Events"). Where the relay runs,
 * once a batch's transaction has committed (its positions are visible), one message naming the
 * batch's orgs goes over Redis pub/sub; every API process wakes its waiters of those orgs, which
 * read the database again. A wake carries no event and decides nothing: a lost one (Redis down, a
 * process not yet subscribed) costs a waiter latency, up to its next recheck, never an event.
 */
@Injectable()
export class FeedWakes implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(FeedWakes.name);
  private readonly channel: string;
  private readonly waiters = new Map<string, Set<() => void>>();
  /** One subscriber connection per process, made when the first poll waits. */
  private readonly subscriber: ChannelSubscriber;

  constructor(
    private readonly relay: OutboxRelay,
    private readonly redis: RedisClient,
    connections: RedisConnections,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.channel = feedChannel(config);
    this.subscriber = new ChannelSubscriber(connections, this.channel, (message) => this.received(message));
  }

  onModuleInit(): void {
    this.relay.relayed.add('event feed wakes', async (events) => {
      if (events.length === 0) return;
      const message = JSON.stringify([...new Set(events.map((e) => e.orgId))]);
      return async () => {
        this.redis.redis.publish(this.channel, message).catch((error: unknown) => this.logger.debug(`feed wake not published: ${(error as Error).message}`));
      };
    });
  }

  onModuleDestroy(): void {
    this.subscriber.disconnect();
  }

  /**
   * Calls `wake` when events of `orgId` commit, until the answered function is called. Register
   * before reading the database, so an event committed between the read and the wait still wakes.
   * Subscribing to Redis is tried, never awaited: without it the waiter relies on its rechecks.
   */
  waitFor(orgId: string, wake: () => void): () => void {
    void this.subscriber.subscribe().catch(() => undefined);
    let set = this.waiters.get(orgId);
    if (!set) this.waiters.set(orgId, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.waiters.get(orgId) === set) this.waiters.delete(orgId);
    };
  }

  /** Polls of `orgId` waiting in this process now (metrics, tests). */
  waitingFor(orgId: string): number {
    return this.waiters.get(orgId)?.size ?? 0;
  }

  private received(message: string): void {
    let orgIds: unknown;
    try {
      orgIds = JSON.parse(message);
    } catch {
      return;
    }
    if (!Array.isArray(orgIds)) return;
    for (const orgId of orgIds) for (const wake of this.waiters.get(String(orgId)) ?? []) wake();
  }
}
