import { BullModule } from '@nestjs/bull';
import { Global, Inject, Injectable, Module, OnModuleDestroy } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';

/** A plain Redis connection for health checks and small coordination tasks (not for Bull). */
@Injectable()
export class RedisClient implements OnModuleDestroy {
  readonly redis: Redis;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
    this.redis.on('error', () => undefined); // reconnects on its own; /ready reports the outage
    void this.redis.connect().catch(() => undefined);
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

  async onModuleDestroy(): Promise<void> {
    this.redis.disconnect();
  }
}

/**
 * Bull on Redis. The key prefix comes from configuration and is hash-tagged by default (`{mss}`)
 * so every queue key lands in one Redis Cluster slot.
 */
@Global()
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({ redis: config.redisUrl, prefix: config.queuePrefix }),
    }),
  ],
  providers: [RedisClient],
  exports: [RedisClient],
})
export class QueueModule {}
