import { Global, Inject, Injectable, Logger, Module } from '@nestjs/common';
import Redis, { Cluster, ClusterOptions, RedisOptions } from 'ioredis';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { RedisTarget } from '../config/redis-url';

/** A connection to the service's Redis: one node, or a whole Redis Cluster (ioredis follows MOVED and failovers). */
export type RedisConnection = Redis | Cluster;

/**
 * What a connection is for, as the redis_* metrics label it:
 * - `client`: commands of the service (rate limits, publishing, health);
 * - `queue`, `queue_blocking`, `queue_subscriber`: Bull's three connections of a queue (its
 *   commands, its blocking wait for the next job, its pub/sub);
 * - `subscriber`: a pub/sub subscription of the service (live pages, event feed, credential changes).
 */
export type RedisRole = 'client' | 'queue' | 'queue_blocking' | 'queue_subscriber' | 'subscriber';

/** Something a connection went through, for the metrics: an error, a reconnection attempt, a cluster node gone from its map (a failover, a node lost). */
export type RedisHappening = 'error' | 'reconnecting' | 'node_removed';

/** Bull's names for its connections, and the role each one is. */
const BULL_ROLES: Record<string, RedisRole> = { client: 'queue', bclient: 'queue_blocking', subscriber: 'queue_subscriber' };

/** How a connection of a role behaves, whatever the target. */
function roleOptions(role: RedisRole): RedisOptions {
  switch (role) {
    case 'client':
      // Fail fast while Redis is away: rate limits let calls through, publishing is best effort.
      return { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false };
    case 'subscriber':
      return { lazyConnect: true, maxRetriesPerRequest: 1 };
    case 'queue':
      // As Bull makes it by default.
      return {};
    case 'queue_blocking':
    case 'queue_subscriber':
      // Bull refuses these connections with a ready check or a retry limit (they block or subscribe).
      return { maxRetriesPerRequest: null, enableReadyCheck: false };
  }
}

/**
 * The one place Redis connections are made from the configuration (REDIS_URL, src/config/redis-url.ts):
 * an ioredis client for one node, or an ioredis Cluster seeded with the cluster's nodes. Every
 * connection reports its errors and reconnections to the observers (the redis_* metrics).
 */
@Injectable()
export class RedisConnections {
  private readonly logger = new Logger(RedisConnections.name);
  private readonly observers: Array<(role: RedisRole, happening: RedisHappening) => void> = [];

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get target(): RedisTarget {
    return this.config.redis;
  }

  get isCluster(): boolean {
    return this.config.redis.kind === 'cluster';
  }

  /** Calls `observer` with every error and reconnection of every connection made here (before or after). */
  observe(observer: (role: RedisRole, happening: RedisHappening) => void): void {
    this.observers.push(observer);
  }

  /** A new connection for `role`; connected at once unless the role connects lazily (`connect()` then). */
  create(role: RedisRole): RedisConnection {
    const options = roleOptions(role);
    const target = this.config.redis;
    const connection = target.kind === 'node' ? new Redis(target.url, options) : new Cluster(target.seeds, clusterOptions(target, options));
    if (connection instanceof Redis) handleResubscribes(connection);
    connection.on('error', (error: Error) => {
      lastErrors.set(connection, error);
      this.tell(role, 'error');
    });
    // Without a ready check (the blocking and subscriber roles) 'ready' comes before AUTH is answered, so it proves nothing.
    if (options.enableReadyCheck !== false) connection.on('ready', () => lastErrors.delete(connection));
    connection.on('reconnecting', () => this.tell(role, 'reconnecting'));
    // A node of a cluster that fails (a master lost in a failover) says so here; the cluster goes on.
    if (connection instanceof Cluster) {
      connection.on('node error', () => this.tell(role, 'error'));
      connection.on('-node', () => this.tell(role, 'node_removed'));
    }
    return connection;
  }

  /**
   * Bull's `createClient` (its Redis Cluster notes): a connection of its own for every queue and
   * every kind ('client', 'subscriber', 'bclient'), so no two queues block or subscribe on one.
   * Bull does not close what it did not make: QueuesShutdown closes them with their queue.
   */
  forBull(type: string): RedisConnection {
    return this.create(BULL_ROLES[type] ?? 'queue');
  }

  private tell(role: RedisRole, happening: RedisHappening): void {
    for (const observer of this.observers) {
      try {
        observer(role, happening);
      } catch (error) {
        this.logger.debug(`a Redis observer failed: ${(error as Error).message}`);
      }
    }
  }
}

/** The last error of each connection made here: until it is ready again, where its ready check says so. */
const lastErrors = new WeakMap<RedisConnection, Error>();

/** The last error `connection` (one made by RedisConnections) met since it was last ready: why it is reconnecting, say. */
export function lastErrorOf(connection: RedisConnection): Error | undefined {
  return lastErrors.get(connection);
}

/** The commands ioredis sends again by itself when a connection comes back, and leaves unhandled. */
const RESENT_UNHANDLED = ['select', 'subscribe', 'psubscribe', 'ssubscribe'] as const;

/**
 * When a connection that had subscribed comes back, ioredis subscribes its channels again (and
 * selects its database) without handling those commands' promises. If the connection then
 * fails its AUTH (Redis restarted with another password), they are rejected with the refused AUTH
 * command, and the unhandled rejection ended the process, writing that command, the old password
 * in it, to stderr. Here each of those commands' promises is handled as it is made: the
 * connection's 'error' event, its reconnection and /ready report the failure, and a caller that
 * awaits a subscribe still sees it fail.
 */
function handleResubscribes(connection: Redis): void {
  const commands = connection as unknown as Record<(typeof RESENT_UNHANDLED)[number], (...args: unknown[]) => Promise<unknown>>;
  for (const name of RESENT_UNHANDLED) {
    const send = commands[name].bind(connection);
    commands[name] = (...args: unknown[]) => {
      const sent = send(...args);
      sent.catch(() => undefined);
      return sent;
    };
  }
}

/**
 * A Redis Cluster client: a ready check before commands go out, the slot map refreshed within 2 s
 * (and every 5 s), a command that meets MOVED or a failover in progress tried again shortly after
 * on the node the cluster names, TLS, user and password for every node (`redisOptions`).
 */
function clusterOptions(target: Extract<RedisTarget, { kind: 'cluster' }>, options: RedisOptions): ClusterOptions {
  const { lazyConnect, enableOfflineQueue, ...perNode } = options;
  return {
    lazyConnect,
    enableOfflineQueue,
    enableReadyCheck: true,
    slotsRefreshTimeout: 2000,
    slotsRefreshInterval: 5000,
    retryDelayOnMoved: 0,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
    maxRedirections: 16,
    clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
    redisOptions: {
      ...perNode,
      username: target.username,
      password: target.password,
      ...(target.tls ? { tls: {} } : {}),
    },
  };
}

/** RedisConnections for every module (the queues, rate limits, pub/sub, health). */
@Global()
@Module({ providers: [RedisConnections], exports: [RedisConnections] })
export class RedisConnectionsModule {}
