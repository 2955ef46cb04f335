import { allowedCidrs } from '../config/parsers';
import { defineSlice, integer, text } from '../config/settings';

/** Webhook endpoints: the URL policy's exceptions and the check of failing endpoints. */
export const webhooksConfig = defineSlice({
  webhooks: {
    /** Receivers on these CIDRs may be private addresses; unset: loopback in development (local receivers work out of the box), nothing in production; `none`: nothing. */
    allowedCidrs: text('WEBHOOK_ALLOWED_CIDRS').to(allowedCidrs),
    /** How often a worker checks failing endpoints (auto-disable after 24 h, owners' emails). */
    healthIntervalMs: integer('ENDPOINT_HEALTH_INTERVAL_MS', { min: 100, max: 3_600_000, default: 60_000 }),
  },
});
