import { defineSlice, text } from '../config/settings';

/** The Redis of the Bull queues (and of the rate-limit counters), and the queues' key prefix. */
export const queueConfig = defineSlice({
  redisUrl: text('REDIS_URL', { pattern: /^rediss?:\/\//, message: 'must be a redis:// or rediss:// URL', required: true }),
  queuePrefix: text('QUEUE_PREFIX', { pattern: /^[A-Za-z0-9:_{}-]{1,64}$/, message: 'must be 1-64 characters of A-Z, a-z, 0-9, : _ { } -', default: '{mss}' }),
});
