import { Inject, Injectable, Logger } from '@nestjs/common';
import { RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts } from 'rate-limiter-flexible';
import { RateLimitedError } from '../common/errors';
import { AppConfig, RateLimit, RateLimitName } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { RedisClient } from '../queue/queue.module';

/** How long a limit check may wait for Redis before the call is let through. */
const REDIS_TIMEOUT_MS = 250;
/** At most one warning per this many ms while Redis cannot count (the limits are then off). */
const WARN_EVERY_MS = 30_000;

/**
 * Fixed-window rate limits counted in Redis, so every replica shares the counts
 * (rate-limiter-flexible: one atomic INCRBY per check, weighted, so a batch of N calls takes N).
 *
 * When Redis cannot answer (down, reconnecting, or slower than 250 ms) the check lets the call
 * through and logs a warning: an outage of the counter must not take the API down with it.
 * Once a key is over its limit, this process refuses it from memory until the window ends, so a
 * flood of refused calls costs no Redis round trip.
 */
@Injectable()
export class RateLimits {
  private readonly logger = new Logger(RateLimits.name);
  private readonly limiters = new Map<RateLimitName, { limit: RateLimit; limiter: RLWrapperTimeouts }>();
  private lastWarning = 0;

  constructor(redis: RedisClient, @Inject(APP_CONFIG) config: AppConfig) {
    for (const [name, limit] of Object.entries(config.rateLimits) as Array<[RateLimitName, RateLimit]>) {
      if (limit.limit === 0) continue;
      const store = new RateLimiterRedis({
        storeClient: redis.redis,
        keyPrefix: `${config.queuePrefix}rl:${name}`,
        points: limit.limit,
        duration: limit.windowSeconds,
        rejectIfRedisNotReady: true,
        inMemoryBlockOnConsumed: limit.limit + 1,
      });
      this.limiters.set(name, { limit, limiter: new RLWrapperTimeouts({ limiter: store, timeoutMs: REDIS_TIMEOUT_MS }) });
    }
  }

  /**
   * Counts `calls` against `key`'s budget under the limit `name`; throws RateLimitedError when the
   * budget of the window is spent. Refused calls count too: a client that keeps calling stays
   * refused until the window ends. `who` names the caller in the message ("this API key").
   */
  async consume(name: RateLimitName, key: string, calls: number, who: string): Promise<void> {
    const entry = this.limiters.get(name);
    if (!entry) return;
    try {
      await entry.limiter.consume(key, calls);
    } catch (outcome) {
      if (outcome instanceof RateLimiterRes) {
        const retryAfter = Math.max(1, Math.ceil(outcome.msBeforeNext / 1000));
        const { limit, windowSeconds, variable } = entry.limit;
        throw new RateLimitedError(`rate limit reached: ${who} may make ${limit} calls per ${windowSeconds} s (${variable}); retry after ${retryAfter} s`, retryAfter);
      }
      this.warnOpen(name, outcome);
    }
  }

  private warnOpen(name: RateLimitName, error: unknown): void {
    const now = Date.now();
    if (now - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = now;
    this.logger.warn(`rate limits are not enforced: Redis did not answer the ${name} check (${error instanceof Error ? error.message : String(error)}); calls are let through`);
  }
}
