import { check, defineSlice, derive, integer, text } from '../config/settings';
import { hasHashTag, parseRedisUrl } from '../config/redis-url';

const redisUrl = text('REDIS_URL', { required: true }).to((url) => {
  parseRedisUrl(url);
  return url;
});
const queuePrefix = text('QUEUE_PREFIX', {
  pattern: /^[A-Za-z0-9:_{}-]{1,64}$/,
  message: 'must be 1-64 characters of A-Z, a-z, 0-9, : _ { } -',
  default: '{mss}',
});

/**
 * The Redis of the Bull queues, the rate-limit counters and pub/sub: one node or a Redis Cluster
 * (src/config/redis-url.ts), and the queues' key prefix. On a cluster every key of a Bull queue
 * must hash to one slot (its scripts touch many keys at once), so the prefix must carry a hash tag.
 */
export const queueConfig = defineSlice(
  {
    redisUrl,
    redis: derive([redisUrl], ([url]) => parseRedisUrl(url)),
    queuePrefix,
    /** How long shutdown waits for the jobs under way before closing the queues without them. */
    shutdownJobsWaitMs: integer('SHUTDOWN_JOBS_WAIT_SECONDS', { min: 1, max: 3600, default: 25 }).to((seconds) => seconds * 1000),
  },
  [
    check(queuePrefix, [redisUrl], (prefix, url) =>
      parseRedisUrl(url).kind === 'cluster' && !hasHashTag(prefix)
        ? 'must carry a hash tag such as {mss} when REDIS_URL names a Redis Cluster: every key of a Bull queue must sit in one slot'
        : undefined,
    ),
  ],
);
