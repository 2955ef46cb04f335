import { defineSlice, integer } from '../config/settings';

/** The event bus: how often the relay polls the outbox for committed events, and when /ready calls it stalled. */
export const eventsConfig = defineSlice({
  outbox: {
    pollIntervalMs: integer('OUTBOX_POLL_INTERVAL_MS', { min: 10, max: 60_000, default: 1_000 }),
    /** /ready answers 503 on a relaying process whose relay has not advanced for longer than this while events wait longer than this (docs/operations.md, "Readiness"). */
    readyStallSeconds: integer('READY_OUTBOX_STALL_SECONDS', { min: 1, max: 86_400, default: 60 }),
  },
});
