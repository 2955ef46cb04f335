import { defineSlice, integer } from '../config/settings';

/** The event feed (docs/mcp.md, "Events"; docs/events-feed.md): how long and how many polls may wait. */
export const eventFeedConfig = defineSlice({
  eventFeed: {
    /** Polls of one credential that may wait at once in one API process; one more is refused (-32013 / 429). */
    longPollsPerKey: integer('EVENT_FEED_LONG_POLLS_PER_KEY', { min: 1, max: 1000, default: 4 }),
    /** The longest a poll may wait for an event (events/poll timeoutMs, the HTTP feed's wait). */
    maxWaitMs: integer('EVENT_FEED_MAX_WAIT_MS', { min: 1000, max: 55_000, default: 30_000 }),
    /** A waiting poll reads the database again this often without a wake: what a lost wake costs at most. */
    recheckMs: integer('EVENT_FEED_RECHECK_MS', { min: 100, max: 60_000, default: 5_000 }),
  },
});
