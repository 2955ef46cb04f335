import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { RateLimitedError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ConcurrencyGate } from './concurrency-gate';
import { RateLimits } from './rate-limits.service';

/** Seconds a caller refused for concurrency is told to wait: slots free up as fast as calls finish. */
const BUSY_RETRY_AFTER_SECONDS = 1;

/**
 * The running-calls slots one request of a key holds. Held by every party that may still be
 * working for the request (the connection until it closes, the handler until it returns), and
 * given back when the last lets go, so a client that hangs up cannot free slots that its
 * request's calls still use.
 */
export class KeyTicket {
  private holders = 1;
  private slots = 1;

  constructor(
    private readonly gate: ConcurrencyGate,
    private readonly key: string,
  ) {}

  /** One more holder. False when the ticket was already given back and no slot is free again. */
  hold(): boolean {
    if (this.holders === 0) {
      this.slots = this.gate.tryTake(this.key, 1);
      if (this.slots === 0) return false;
    }
    this.holders += 1;
    return true;
  }

  release(): void {
    if (this.holders === 0) return;
    this.holders -= 1;
    if (this.holders === 0) {
      this.gate.give(this.key, this.slots);
      this.slots = 0;
    }
  }

  /** Gives the slots back now, whoever still holds the ticket: for a request that stops running calls but stays open (a subscription stream). */
  releaseAll(): void {
    if (this.holders === 0) return;
    this.holders = 1;
    this.release();
  }

  /** Takes more of the key's free slots, up to `wanted` in all (a batch); answers how many it holds (at least 1). */
  widen(wanted: number): number {
    if (this.holders > 0 && wanted > this.slots) this.slots += this.gate.tryTake(this.key, wanted - this.slots);
    return this.slots;
  }
}

/**
 * The per-key limits of the tool endpoint, in one place:
 * - at most MCP_KEY_CONCURRENCY calls of a key running at once in this process. Checked before
 *   the key is even looked up (by a digest of the token, kept in memory only), so a flood of one
 *   key's requests costs the database nothing. A request holds one slot; a batch takes up to
 *   MCP_BATCH_CONCURRENCY, fewer when fewer are free.
 * - at most MCP_RATE_LIMIT calls per window across every replica (in Redis, by key id); a batch
 *   of N messages counts N.
 */
@Injectable()
export class ApiKeyLimits {
  private readonly running: ConcurrencyGate;
  /** One instance for every such refusal (an API key's, an app's): a flood of them should not build a stack trace each. */
  private readonly refusals: Record<'key' | 'app', RateLimitedError>;

  constructor(
    private readonly rateLimits: RateLimits,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.running = new ConcurrencyGate(config.mcp.keyConcurrency);
    const refusal = (who: string) =>
      new RateLimitedError(
        `too many calls at once: ${who} may have ${this.running.limit} calls running at the same time (MCP_KEY_CONCURRENCY); retry after ${BUSY_RETRY_AFTER_SECONDS} s`,
        BUSY_RETRY_AFTER_SECONDS,
      );
    this.refusals = { key: refusal('this API key'), app: refusal('this app') };
  }

  /** The slot of a request made with this bearer token, or RateLimitedError when the key has none free. */
  enter(token: string): KeyTicket {
    const key = createHash('sha256').update(`mcp-slots:${token}`).digest('base64url');
    if (this.running.tryTake(key, 1) === 0) throw this.busy(token.startsWith('csa_'));
    return new KeyTicket(this.running, key);
  }

  /** The refusal of a request whose key (or an OAuth app's token, `app`) has every slot in use. */
  busy(app = false): RateLimitedError {
    return this.refusals[app ? 'app' : 'key'];
  }

  /**
   * Counts `calls` against the key's budget of the window; RateLimitedError when they do not fit
   * (then nothing may run). `who` names the key in the refusal: "this API key" or "this app".
   */
  async spend(keyId: string, calls: number, who: string): Promise<void> {
    await this.rateLimits.consume('mcp', keyId, calls, who);
  }
}
