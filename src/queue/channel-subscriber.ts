import { RedisConnection, RedisConnections } from './redis-connections';

/**
 * One Redis pub/sub subscription of a process: its connection is made on the first `subscribe()`
 * (which callers may await, or not), and ioredis subscribes again after a reconnect. A failed
 * attempt is forgotten, so the next `subscribe()` tries again. On a Redis Cluster the subscription
 * is held on one node and a PUBLISH on any node reaches it (the cluster bus carries it); ioredis
 * subscribes on another node when that one fails.
 */
export class ChannelSubscriber {
  private subscriber?: RedisConnection;
  private subscribing?: Promise<void>;

  constructor(
    private readonly connections: RedisConnections,
    private readonly channel: string,
    private readonly onMessage: (message: string) => void,
  ) {}

  subscribe(): Promise<void> {
    if (!this.subscribing) {
      const subscriber = (this.subscriber ??= this.connection());
      this.subscribing = (async () => {
        if (subscriber.status === 'wait') await subscriber.connect();
        await subscriber.subscribe(this.channel);
      })();
      this.subscribing.catch(() => (this.subscribing = undefined));
    }
    return this.subscribing;
  }

  disconnect(): void {
    this.subscriber?.disconnect();
  }

  private connection(): RedisConnection {
    const subscriber = this.connections.create('subscriber');
    subscriber.on('error', () => undefined); // reconnects on its own
    subscriber.on('message', (_channel: string, message: string) => this.onMessage(message));
    return subscriber;
  }
}
