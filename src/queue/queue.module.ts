import { BullModule } from '@nestjs/bull';
import { BeforeApplicationShutdown, Global, Inject, Injectable, Logger, Module, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import Queue from 'bull';
import { settlesWithin } from '../common/settles-within';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { BackgroundWork } from './background-work';
import { RedisConnection, RedisConnections, RedisConnectionsModule } from './redis-connections';

/**
 * A plain Redis connection (one node or a cluster, as REDIS_URL says) for health checks, rate
 * limits and publishing (not for Bull). At every connection it checks that a single-node
 * REDIS_URL does not name one node of a Redis Cluster: such a node answers MOVED for the keys of
 * every slot it does not serve, so work would be taken and never moved; that is logged as an error
 * and kept in `clusterMismatch` for readiness.
 *
 * The process starts serving once this connection is ready (or after 2 s, Redis away): the rate
 * limits let a call through while it is not, as in an outage, so the first calls of a process that
 * served at once went uncounted. On a Redis Cluster that took noticeably long (the slot map is read
 * and checked first): a pixel fetched right after boot was served over its limit.
 */
@Injectable()
export class RedisClient implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RedisClient.name);
  readonly redis: RedisConnection;
  /** Why this REDIS_URL cannot work, when its node turned out to be part of a cluster; undefined otherwise. */
  clusterMismatch?: string;

  constructor(connections: RedisConnections) {
    this.redis = connections.create('client');
    this.redis.on('error', () => undefined); // reconnects on its own; /ready reports the outage
    if (!connections.isCluster) this.redis.on('ready', () => void this.checkNotClusterNode());
    void this.redis.connect().catch(() => undefined);
  }

  private async checkNotClusterNode(): Promise<void> {
    const info = await this.redis.info('cluster').catch(() => '');
    if (!/cluster_enabled:1/.test(info)) {
      this.clusterMismatch = undefined;
      return;
    }
    this.clusterMismatch =
      'REDIS_URL names one node of a Redis Cluster with redis:// (or rediss://): that node refuses (MOVED) every key of the slots it does not serve, so queued work may never move. Name the cluster with redis+cluster://host:port,host:port (docs/configuration.md, "Redis")';
    this.logger.error(this.clusterMismatch);
  }

  /** Answers once Redis does; waits up to 2 s for a connection still being made (just after boot). */
  async ping(): Promise<void> {
    if (this.redis.status !== 'ready') {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.redis.off('ready', onReady);
          reject(new Error(`redis is ${this.redis.status}`));
        }, 2000);
        const onReady = () => {
          clearTimeout(timer);
          resolve();
        };
        this.redis.once('ready', onReady);
      });
    }
    await this.redis.ping();
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.ping().catch((error: Error) =>
      this.logger.warn(`Redis is not answering at start (${error.message}); going on, rate limits let calls through until it does`),
    );
  }

  async onModuleDestroy(): Promise<void> {
    this.redis.disconnect();
  }
}

/** Every Bull queue of the service (the ones Nest provides): for shutdown, metrics and the queue dashboard. */
@Injectable()
export class ServiceQueues {
  constructor(private readonly discovery: DiscoveryService) {}

  all(): Queue.Queue[] {
    return this.discovery
      .getProviders()
      .map((wrapper) => wrapper.instance as unknown)
      .filter((instance): instance is Queue.Queue => instance instanceof Queue);
  }
}

/**
 * Stops every queue's processing at once when the process shuts down, before the modules' own
 * shutdown hooks close the queues one after the other. Stopping is the slow part of closing: a
 * worker's connection blocked waiting for the next job cannot take QUIT, so Bull gives it 500 ms
 * before cutting it, queue by queue in sequence (Nest runs each module's hooks in turn); done
 * together here, a worker stops in about 0.5 s instead of 1.5 s. Only local processing stops
 * (and jobs under way finish first): requests still being answered can add jobs until the
 * queues close, after the HTTP server has stopped.
 */
@Injectable()
export class QueuesShutdown implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger(QueuesShutdown.name);

  constructor(
    private readonly queues: ServiceQueues,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Bull leaves open the connections it had from `createClient` (RedisConnections.forBull): each
   * queue's own are closed once it has closed (its 'close' event).
   */
  onModuleInit(): void {
    for (const queue of this.queues.all()) queue.once('close', () => disconnectBullConnections(queue));
  }

  /**
   * Waits SHUTDOWN_JOBS_WAIT_SECONDS at most for a queue's jobs under way: a job whose Redis
   * commands hang (its connection reconnecting) kept the process from ever ending. A queue still
   * waiting then is closed without them, and their jobs run again once their locks expire
   * (Bull's stalled-job check), which the delivery attempts' leases make safe.
   */
  async beforeApplicationShutdown(): Promise<void> {
    const waitMs = this.config.shutdownJobsWaitMs;
    await Promise.all(
      this.queues.all().map(async (queue) => {
        if (await settlesWithin(queue.pause(true), waitMs)) return;
        this.logger.warn(
          `queue ${queue.name}: its jobs under way did not end within ${waitMs / 1000} s of shutdown (SHUTDOWN_JOBS_WAIT_SECONDS); closing it without them, they run again once their locks expire`,
        );
        await queue.close(true).catch(() => undefined);
      }),
    );
  }
}

/** The connections a queue has made (its getters would make the others), disconnected. */
function disconnectBullConnections(queue: Queue.Queue): void {
  const made = queue as unknown as Record<string, boolean | RedisConnection>;
  const own: Array<[string, string]> = [
    ['client', 'client'],
    ['subscriber', 'eclient'],
    ['bclient', 'bclient'],
  ];
  for (const [type, getter] of own) if (made[`${type}Initialized`] === true) (made[getter] as RedisConnection).disconnect();
}

/**
 * Bull on Redis, its connections made by RedisConnections (one node or a cluster). The key prefix
 * comes from configuration and is hash-tagged by default (`{mss}`) so every queue key lands in one
 * Redis Cluster slot, as Bull's multi-key scripts need (the configuration refuses a prefix without
 * a hash tag on a cluster).
 */
@Global()
@Module({
  imports: [
    DiscoveryModule,
    RedisConnectionsModule,
    BullModule.forRootAsync({
      imports: [RedisConnectionsModule],
      inject: [RedisConnections, APP_CONFIG],
      useFactory: (connections: RedisConnections, config: AppConfig) => ({
        prefix: config.queuePrefix,
        createClient: (type: string) => connections.forBull(type),
      }),
    }),
  ],
  providers: [RedisClient, ServiceQueues, QueuesShutdown, BackgroundWork],
  exports: [RedisClient, ServiceQueues, BackgroundWork],
})
export class QueueModule {}
