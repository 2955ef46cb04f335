import { defineSlice, integer } from '../config/settings';

const DAY_MS = 86_400_000;

/** MCP Events webhook mode (docs/mcp.md, "Webhook mode"; docs/configuration.md): how long a subscription lives, how many a credential holds. */
export const eventSubscriptionsConfig = defineSlice({
  eventSubscriptions: {
    /** Subscriptions one credential (API key or OAuth grant) may hold; one more is refused (-32013, data.limit "subscriptions"). */
    perKey: integer('EVENT_SUBSCRIPTIONS_PER_KEY', { min: 1, max: 1000, default: 10 }),
    /** The shortest TTL granted: a shorter ttlMs is raised to it. */
    minTtlMs: integer('EVENT_SUBSCRIPTION_MIN_TTL_MS', { min: 1000, max: DAY_MS, default: 60_000 }),
    /** The longest TTL granted, and what ttlMs null or absent gets: a longer ttlMs is lowered to it. */
    maxTtlMs: integer('EVENT_SUBSCRIPTION_MAX_TTL_MS', { min: 60_000, max: 30 * DAY_MS, default: 7 * DAY_MS }),
    /** How often expired subscriptions are deleted (deliveries stop at expiry already: the claim checks it). */
    sweepMs: integer('EVENT_SUBSCRIPTION_SWEEP_MS', { min: 100, max: 3_600_000, default: 60_000 }),
  },
});
