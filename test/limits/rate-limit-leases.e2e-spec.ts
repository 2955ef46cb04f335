import { randomBytes } from 'node:crypto';
import { AppConfig } from '../../src/config/app-config';
import { RateLimitedError } from '../../src/common/errors';
import { leaseSize, RateLimits } from '../../src/limits/rate-limits.service';
import { RedisClient } from '../../src/queue/queue.module';
import { RedisConnections } from '../../src/queue/redis-connections';
import { parseRedisUrl, withoutHashTag } from '../../src/config/redis-url';
import { REDIS_URL } from '../support/test-env';

/**
 * The per-key budget is taken from Redis in leases (1 % of the limit, 1 to 50 calls) and spent
 * from memory, so a busy key costs one Redis round trip per lease instead of one per call. Against
 * the real Redis: the limit stays exact for one process, two processes together never get more
 * than the limit, and the round trips are counted.
 */
const PREFIX = `{mss_test_leases_${randomBytes(3).toString('hex')}}`;

function limits(limit: number): { rateLimits: RateLimits; client: RedisClient } {
  const config = {
    redisUrl: REDIS_URL,
    redis: parseRedisUrl(REDIS_URL),
    queuePrefix: PREFIX,
    // This file counts calls: a check that waited out the default 250 ms (a pause of this busy
    // process) would be let through uncounted and the totals would be off.
    rateLimitRedisTimeoutMs: 5000,
    rateLimits: {
      mcp: { limit, windowSeconds: 60, variable: 'MCP_RATE_LIMIT' },
      pixel: { limit: 0, windowSeconds: 60, variable: 'PIXEL_RATE_LIMIT' },
      attachment: { limit: 0, windowSeconds: 60, variable: 'ATTACHMENT_RATE_LIMIT' },
    },
  } as unknown as AppConfig;
  const client = new RedisClient(new RedisConnections(config));
  return { rateLimits: new RateLimits(client, config), client };
}

/** Calls admitted of `tries`, one at a time. */
async function admitted(rateLimits: RateLimits, key: string, tries: number, calls = 1): Promise<number> {
  let ok = 0;
  for (let i = 0; i < tries; i++) {
    try {
      await rateLimits.consume('mcp', key, calls, 'this API key');
      ok += 1;
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
    }
  }
  return ok;
}

/**
 * Counts the scripts (the rate limiter's round trips) this client sends from now on. Redis's own
 * INFO commandstats would count every client of the shared server, other test runs included.
 */
function countScripts(client: RedisClient): () => number {
  let scripts = 0;
  const send = client.redis.sendCommand.bind(client.redis);
  client.redis.sendCommand = ((command: { name: string }, stream?: unknown) => {
    if (command.name === 'evalsha' || command.name === 'eval') scripts += 1;
    return send(command as never, stream as never);
  }) as typeof client.redis.sendCommand;
  return () => scripts;
}

describe('rate limits: leases of the shared budget', () => {
  const opened: RedisClient[] = [];
  const make = (limit: number) => {
    const made = limits(limit);
    opened.push(made.client);
    return made;
  };
  afterAll(async () => {
    const [first] = opened;
    if (first) for (const key of await first.redis.keys(`${withoutHashTag(PREFIX)}*`)) await first.redis.del(key);
    for (const c of opened) c.redis.disconnect();
  });

  it('sizes a lease at 1 % of the limit, from 1 to 50 calls', () => {
    expect([leaseSize(5), leaseSize(99), leaseSize(600), leaseSize(5_000), leaseSize(100_000_000)]).toEqual([1, 1, 6, 50, 50]);
  });

  it('admits exactly the limit in one process, asking Redis once per lease, and refuses the rest from memory', async () => {
    const { rateLimits, client } = make(600);
    await client.ping();
    const key = `key-${randomBytes(4).toString('hex')}`;
    const roundTrips = countScripts(client);
    expect(await admitted(rateLimits, key, 650)).toBe(600);
    const trips = roundTrips();
    // 100 leases of 6, one refused lease given back and asked again exactly, then refused from memory.
    expect(trips).toBeGreaterThanOrEqual(100);
    expect(trips).toBeLessThanOrEqual(104);
    await expect(rateLimits.consume('mcp', key, 1, 'this API key')).rejects.toThrow(
      /rate limit reached: this API key may make 600 calls per 60 s \(MCP_RATE_LIMIT\); retry after \d+ s/,
    );
  });

  it('gives two processes together no more than the limit, and at most a lease less per process', async () => {
    const a = make(600);
    const b = make(600);
    await Promise.all([a.client.ping(), b.client.ping()]);
    const key = `key-${randomBytes(4).toString('hex')}`;
    let total = 0;
    for (let round = 0; round < 400; round++) total += (await admitted(a.rateLimits, key, 1)) + (await admitted(b.rateLimits, key, 1));
    expect(total).toBeLessThanOrEqual(600);
    expect(total).toBeGreaterThanOrEqual(600 - 2 * (leaseSize(600) - 1));
  });

  it('admits a batch that fits what is left even when a whole lease does not, and refuses one that does not fit', async () => {
    const { rateLimits, client } = make(600);
    await client.ping();
    const key = `key-${randomBytes(4).toString('hex')}`;
    expect(await admitted(rateLimits, key, 1, 597)).toBe(1);
    expect(await admitted(rateLimits, key, 1, 3)).toBe(1); // 3 left: fits, though a lease of 6 would not
    expect(await admitted(rateLimits, key, 1, 1)).toBe(0);
  });
});
