import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { RedisClient } from '../queue/queue.module';

type Listener = (credentialId: string) => void;

/**
 * Word, across every process, that what a credential (an API key, or an OAuth grant) may do or
 * reach has changed, or that it stopped working: its permissions or channel access edited, it was
 * revoked, its grant's access token rotated. Long requests that hold a credential (MCP
 * subscriptions/listen streams) check it again at once instead of at their next heartbeat.
 *
 * Over Redis pub/sub, one channel per QUEUE_PREFIX; a message is the credential's id and nothing
 * else. Nothing is kept: a process not subscribed at that moment misses it, which its streams'
 * heartbeat check makes up for. Published after the change is stored (the statement has returned).
 */
@Injectable()
export class CredentialChanges implements OnModuleDestroy {
  private readonly logger = new Logger(CredentialChanges.name);
  private readonly channel: string;
  private readonly listeners = new Set<Listener>();
  private subscriber?: Redis;
  private subscribing?: Promise<void>;

  constructor(
    private readonly redis: RedisClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.channel = `${config.queuePrefix}:credential-changes`;
  }

  /** Tells every process that `credentialId`'s access changed or ended. Never throws: the heartbeat checks catch up. */
  changed(credentialId: string): void {
    this.redis.redis
      .publish(this.channel, credentialId)
      .catch((error: unknown) => this.logger.debug(`credential change not published: ${(error as Error).message}`));
  }

  /**
   * Calls `listener` with every changed credential's id until the returned function is called. The
   * process subscribes (one connection) at the first listener; rejects when Redis cannot be had.
   */
  async listen(listener: Listener): Promise<() => void> {
    this.listeners.add(listener);
    try {
      await this.subscribe();
    } catch (error) {
      this.listeners.delete(listener);
      throw error;
    }
    return () => this.listeners.delete(listener);
  }

  onModuleDestroy(): void {
    this.listeners.clear();
    this.subscriber?.disconnect();
  }

  /** One subscriber connection per process; ioredis subscribes again after a reconnect. */
  private subscribe(): Promise<void> {
    if (!this.subscribing) {
      const subscriber = (this.subscriber ??= this.newSubscriber());
      this.subscribing = (async () => {
        if (subscriber.status === 'wait') await subscriber.connect();
        await subscriber.subscribe(this.channel);
      })();
      this.subscribing.catch(() => (this.subscribing = undefined));
    }
    return this.subscribing;
  }

  private newSubscriber(): Redis {
    const subscriber = new Redis(this.config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    subscriber.on('error', () => undefined); // reconnects on its own
    subscriber.on('message', (_channel: string, credentialId: string) => {
      for (const listener of this.listeners) listener(credentialId);
    });
    return subscriber;
  }
}
