import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { AccountsService } from '../accounts/accounts.service';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ChannelSubscriber } from '../queue/channel-subscriber';
import { RedisConnections } from '../queue/redis-connections';
import { RedisClient } from '../queue/queue.module';
import { Principal } from '../identity/principal';

type Listener = (changedId: string) => void;

/**
 * Word, across every process, that what a credential (an API key, or an OAuth grant) may do or
 * reach has changed, or that it stopped working: its permissions or channel access edited, it was
 * revoked, its grant's access token rotated; or that a person lost a line (a membership removed, a
 * line deleted), which narrows every credential of theirs at once. Long requests that hold a
 * credential (MCP subscriptions/listen and events/stream streams) check it again at once instead
 * of at their next heartbeat.
 *
 * Over Redis pub/sub, one channel per QUEUE_PREFIX; a message is the credential's id, or the
 * person's (user) id, and nothing else (both are UUIDs: `concerns` tells whether a message is about
 * a caller). Nothing is kept: a process not subscribed at that moment misses it, which its streams'
 * heartbeat check makes up for. Published after the change is stored (the statement has returned).
 */
@Injectable()
export class CredentialChanges implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(CredentialChanges.name);
  private readonly channel: string;
  private readonly listeners = new Set<Listener>();
  private readonly subscriber: ChannelSubscriber;

  constructor(
    private readonly redis: RedisClient,
    private readonly accounts: AccountsService,
    connections: RedisConnections,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.channel = `${config.queuePrefix}:credential-changes`;
    this.subscriber = new ChannelSubscriber(connections, this.channel, (changedId) => {
      for (const listener of this.listeners) listener(changedId);
    });
  }

  onModuleInit(): void {
    this.accounts.linesLost.add('tell long requests of the people who lost lines', async (userIds) => {
      for (const userId of userIds) this.changed(userId);
    });
  }

  /** Tells every process that `changedId`'s access (a credential's, or a person's) changed or ended. Never throws: the heartbeat checks catch up. */
  changed(changedId: string): void {
    this.redis.redis
      .publish(this.channel, changedId)
      .catch((error: unknown) => this.logger.debug(`credential change not published: ${(error as Error).message}`));
  }

  /**
   * Calls `listener` with every changed id until the returned function is called. The process
   * subscribes (one connection) at the first listener; rejects when Redis cannot be had.
   */
  async listen(listener: Listener): Promise<() => void> {
    this.listeners.add(listener);
    try {
      await this.subscriber.subscribe();
    } catch (error) {
      this.listeners.delete(listener);
      throw error;
    }
    return () => this.listeners.delete(listener);
  }

  onModuleDestroy(): void {
    this.listeners.clear();
    this.subscriber.disconnect();
  }
}

/** Whether a change announced for `changedId` is about `caller`: its credential's, or its person's. */
export function concerns(caller: Pick<Principal, 'keyId' | 'userId'>, changedId: string): boolean {
  return changedId === caller.keyId || changedId === caller.userId;
}
