import { parseDurations } from '../config/parsers';
import { defineSlice, integer, text } from '../config/settings';

/** Webhook delivery: the retry schedule, concurrency, timeouts, the sweep and the log's retention. */
export const deliveryConfig = defineSlice({
  delivery: {
    /** Delay before each retry, in ms; attempts = 1 + its length. */
    retryScheduleMs: text('DELIVERY_RETRY_SCHEDULE', { default: '1m,5m,30m,2h,12h' }).to(parseDurations),
    concurrency: integer('DELIVERY_CONCURRENCY', { min: 1, max: 2000, default: 100 }),
    /** Attempts one endpoint may have in flight in one worker at first; the limit then adapts (endpoint-concurrency.ts). */
    endpointConcurrency: integer('DELIVERY_ENDPOINT_CONCURRENCY', { min: 1, max: 2000, default: 10 }),
    /** The adaptive limit's floor: cut on timeouts, errors, 5xx and 429, never below this. */
    endpointConcurrencyMin: integer('DELIVERY_ENDPOINT_CONCURRENCY_MIN', { min: 1, max: 2000, default: 1 }),
    /** The adaptive limit's ceiling (at most DELIVERY_CONCURRENCY): grown while answers are 2xx and not slower, never above this. */
    endpointConcurrencyMax: integer('DELIVERY_ENDPOINT_CONCURRENCY_MAX', { min: 1, max: 2000, default: 50 }),
    timeoutMs: integer('DELIVERY_TIMEOUT_MS', { min: 100, max: 60_000, default: 10_000 }),
    sweepIntervalMs: integer('DELIVERY_SWEEP_INTERVAL_MS', { min: 100, max: 3_600_000, default: 15_000 }),
    sweepGraceMs: integer('DELIVERY_SWEEP_GRACE_MS', { min: 0, max: 3_600_000, default: 60_000 }),
    /** Finished deliveries older than this many days are deleted with their attempts; 0 keeps them forever. */
    logRetentionDays: integer('DELIVERY_LOG_RETENTION_DAYS', { min: 0, max: 3650, default: 30 }),
    /** Days ahead of today whose partitions of the delivery log are made in advance (delivery-log-partitions.ts). */
    logPartitionsAheadDays: integer('DELIVERY_LOG_PARTITIONS_AHEAD_DAYS', { min: 1, max: 90, default: 7 }),
  },
});
