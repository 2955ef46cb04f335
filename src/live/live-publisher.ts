import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { OutboxRelay } from '../events/outbox-relay';
import { RedisClient } from '../queue/queue.module';
import { LiveEvent, liveEventOf } from './live-event';

/** The Redis pub/sub channel of live updates: one per QUEUE_PREFIX, so environments sharing a Redis stay apart. */
export function liveChannel(config: AppConfig): string {
  return `${config.queuePrefix}:live-events`;
}

/**
 * Hands each batch of committed events the relay claims (in a worker, or an `all` process) to
 * every API process, over Redis pub/sub (docs/decisions.md, "Live updates"): once the batch's
 * transaction has committed, one message with the events pages are told of, ids only. Nothing is
 * kept: a process that is not subscribed at that moment misses it, and its pages catch up by
 * fetching the page again when their stream reconnects. Who may be told is decided by the
 * receiving process (LiveStreams), at the time it tells.
 */
@Injectable()
export class LivePublisher implements OnModuleInit {
  private readonly logger = new Logger(LivePublisher.name);
  private readonly channel: string;

  constructor(
    private readonly relay: OutboxRelay,
    private readonly redis: RedisClient,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.channel = liveChannel(config);
  }

  onModuleInit(): void {
    this.relay.relayed.add('live updates', async (events) => {
      const live = events.map(liveEventOf).filter((e): e is LiveEvent => e !== null);
      if (live.length === 0) return;
      const message = JSON.stringify(live);
      // Not awaited: the relay's other after-commit steps (the webhook queue) need not wait for it.
      return async () => {
        this.redis.redis.publish(this.channel, message).catch((error: unknown) => this.logger.debug(`live updates not published: ${(error as Error).message}`));
      };
    });
  }
}
