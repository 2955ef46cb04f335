import { defineSlice, integer } from '../config/settings';

/** The event bus: how often the relay polls the outbox for committed events. */
export const eventsConfig = defineSlice({
  outbox: { pollIntervalMs: integer('OUTBOX_POLL_INTERVAL_MS', { min: 10, max: 60_000, default: 1_000 }) },
});
