import { Inject, Injectable, Logger } from '@nestjs/common';
import { RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts } from 'rate-limiter-flexible';
import { RateLimitedError } from '../common/errors';
import { AppConfig, RateLimit, RateLimitName } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { RedisClient } from '../queue/queue.module';
import { withoutHashTag } from '../config/redis-url';

/** How long a limit check may wait for Redis before the call is let through. */
/** At most one warning per this many ms while Redis cannot count (the limits are then off). */
const WARN_EVERY_MS = 30_000;
/**
 * The Redis key prefix of a limit's counters: the queue prefix without its hash tag, so on a Redis
 * Cluster each counter (a single key: one script per check touches it alone) hashes by its own
 * name and the counters spread over the masters instead of piling onto the queues' slot.
 */
export function rateLimitKeyPrefix(queuePrefix: string, name: RateLimitName): string {
  return `${withoutHashTag(queuePrefix)}:rl:${name}`;
}

/** The largest lease (see leaseSize). */
const MAX_LEASE = 50;
/** Past this many keys with a lease, expired leases are dropped when a new one is taken. */
const PRUNE_AT = 10_000;

/**
 * How many calls a process takes from a key's shared budget at a time: 1 % of the limit, between
 * 1 and 50 (6 for the default 600 calls per minute). A process spends a lease from memory, so
 * only one call in `leaseSize` costs a Redis round trip; calls of a lease it does not spend before
 * the window ends are lost to the key, so the shared limit may refuse at most (leaseSize - 1)
 * calls per replica per window early, and never lets more through than the limit.
 */
export function leaseSize(limit: number): number {
  return Math.min(MAX_LEASE, Math.max(1, Math.floor(limit / 100)));
}

/** What this process holds of a key's budget in the current window. */
interface Lease {
  /** Calls it may still make without asking Redis; 0 with `refused` when the budget is spent. */
  left: number;
  /** When the window ends (epoch ms). */
  until: number;
  /** The key is over its limit until `until`: refused from memory, no Redis round trip. */
  refused: boolean;
}

interface Limiter {
  limit: RateLimit;
  store: RLWrapperTimeouts;
  lease: number;
  leases: Map<string, Lease>;
}

/**
 * Fixed-window rate limits counted in Redis, so every replica shares the counts
 * (rate-limiter-flexible: one atomic INCRBY per check, weighted, so a batch of N calls takes N).
 * Each process takes the budget in small leases (leaseSize) and spends them from memory.
 *
 * When Redis cannot answer (down, reconnecting, or slower than RATE_LIMIT_REDIS_TIMEOUT_MS, 250 ms) the check lets the call
 * through and logs a warning: an outage of the counter must not take the API down with it.
 * Once a key is over its limit, this process refuses it from memory until the window ends, so a
 * flood of refused calls costs no Redis round trip.
 */
@Injectable()
export class RateLimits {
  private readonly logger = new Logger(RateLimits.name);
  private readonly limiters = new Map<RateLimitName, Limiter>();
  private lastWarning = 0;

  constructor(redis: RedisClient, @Inject(APP_CONFIG) config: AppConfig) {
    for (const [name, limit] of Object.entries(config.rateLimits) as Array<[RateLimitName, RateLimit]>) {
      if (limit.limit === 0) continue;
      const store = new RateLimiterRedis({
        storeClient: redis.redis,
        keyPrefix: rateLimitKeyPrefix(config.queuePrefix, name),
        points: limit.limit,
        duration: limit.windowSeconds,
        rejectIfRedisNotReady: true,
      });
      this.limiters.set(name, {
        limit,
        store: new RLWrapperTimeouts({ limiter: store, timeoutMs: config.rateLimitRedisTimeoutMs }),
        lease: leaseSize(limit.limit),
        leases: new Map(),
      });
    }
  }

  /**
   * Counts `calls` against `key`'s budget under the limit `name`; throws RateLimitedError when the
   * budget of the window is spent. Once refused, a key stays refused in this process until the
   * window ends. `who` names the caller in the message ("this API key").
   */
  async consume(name: RateLimitName, key: string, calls: number, who: string): Promise<void> {
    const limiter = this.limiters.get(name);
    if (!limiter) return;
    const now = Date.now();
    const held = limiter.leases.get(key);
    if (held && held.until > now) {
      if (held.refused) throw this.refusal(limiter, who, held.until - now);
      if (held.left >= calls) {
        held.left -= calls;
        return;
      }
    }
    const lease = await this.take(name, limiter, key, calls, now);
    if (!lease) return; // Redis did not answer: let the call through
    limiter.leases.set(key, lease);
    if (limiter.leases.size > PRUNE_AT) for (const [k, l] of limiter.leases) if (l.until <= now) limiter.leases.delete(k);
    if (lease.refused) throw this.refusal(limiter, who, lease.until - now);
  }

  /**
   * Takes `calls` plus the rest of a lease from Redis. When the lease does not fit in what is left
   * of the window's budget, it is given back and only `calls` are asked for, so a key is refused
   * only when its calls themselves do not fit. Undefined when Redis does not answer.
   */
  private async take(name: RateLimitName, limiter: Limiter, key: string, calls: number, now: number): Promise<Lease | undefined> {
    const wanted = Math.max(calls, limiter.lease);
    try {
      try {
        const granted = await limiter.store.consume(key, wanted);
        return { left: wanted - calls, until: now + granted.msBeforeNext, refused: false };
      } catch (outcome) {
        if (!(outcome instanceof RateLimiterRes) || wanted === calls) throw outcome;
        await limiter.store.reward(key, wanted);
        const granted = await limiter.store.consume(key, calls);
        return { left: 0, until: now + granted.msBeforeNext, refused: false };
      }
    } catch (outcome) {
      if (outcome instanceof RateLimiterRes) return { left: 0, until: now + outcome.msBeforeNext, refused: true };
      this.warnOpen(name, outcome);
      return undefined;
    }
  }

  private refusal(limiter: Limiter, who: string, msLeft: number): RateLimitedError {
    const retryAfter = Math.max(1, Math.ceil(msLeft / 1000));
    const { limit, windowSeconds, variable } = limiter.limit;
    return new RateLimitedError(
      `rate limit reached: ${who} may make ${limit} calls per ${windowSeconds} s (${variable}); retry after ${retryAfter} s`,
      retryAfter,
    );
  }

  private warnOpen(name: RateLimitName, error: unknown): void {
    const now = Date.now();
    if (now - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = now;
    this.logger.warn(
      `rate limits are not enforced: Redis did not answer the ${name} check (${error instanceof Error ? error.message : String(error)}); calls are let through`,
    );
  }
}
