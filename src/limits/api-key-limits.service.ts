import { Inject, Injectable } from '@nestjs/common';
import { RateLimitedError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ConcurrencyGate } from './concurrency-gate';
import { RateLimits } from './rate-limits.service';

/** What a request of an API key was granted: how many of its calls may run at once, and the slots to give back. */
export interface Admission {
  concurrency: number;
  release: () => void;
}

/** Seconds a caller refused for concurrency is told to wait: slots free up as fast as calls finish. */
const BUSY_RETRY_AFTER_SECONDS = 1;

/**
 * The per-key limits of the tool endpoint, in one place: at most MCP_KEY_CONCURRENCY calls of a
 * key running at once in this process (a batch takes up to MCP_BATCH_CONCURRENCY of them, fewer
 * when fewer are free), and at most MCP_RATE_LIMIT calls per window across every replica (a
 * batch of N messages counts N).
 */
@Injectable()
export class ApiKeyLimits {
  private readonly running: ConcurrencyGate;

  constructor(
    private readonly rateLimits: RateLimits,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.running = new ConcurrencyGate(config.mcp.keyConcurrency);
  }

  /**
   * Admits a request of `calls` calls that would like to run `parallel` at once, or throws
   * RateLimitedError (nothing of the request may run then). The caller must `release()` when done.
   */
  async admit(keyId: string, calls: number, parallel: number): Promise<Admission> {
    const slots = this.running.tryTake(keyId, Math.max(1, Math.min(parallel, calls)));
    if (slots === 0) {
      throw new RateLimitedError(
        `too many calls at once: this API key may have ${this.running.limit} calls running at the same time (MCP_KEY_CONCURRENCY); retry after ${BUSY_RETRY_AFTER_SECONDS} s`,
        BUSY_RETRY_AFTER_SECONDS,
      );
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.running.give(keyId, slots);
    };
    try {
      await this.rateLimits.consume('mcp', keyId, calls, 'this API key');
    } catch (error) {
      release();
      throw error;
    }
    return { concurrency: slots, release };
  }
}
