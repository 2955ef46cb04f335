import { defineSlice, integer } from '../config/settings';

/** events/stream, the push mode of the event feed (docs/mcp.md, "events/stream"): how many streams, how often a heartbeat. */
export const eventStreamsConfig = defineSlice({
  eventStreams: {
    /** Streams one credential may hold open at once in one API process; one more is refused (-32013, HTTP 429). */
    streamsPerKey: integer('EVENT_FEED_STREAMS_PER_KEY', { min: 1, max: 1000, default: 10 }),
    /** Streams one API process holds open at once, all credentials together. */
    streamsPerProcess: integer('EVENT_FEED_STREAMS_PER_PROCESS', { min: 1, max: 100_000, default: 5000 }),
    /**
     * How often a quiet stream sends notifications/events/heartbeat with its cursor, and checks its
     * credential again (the draft asks for at least every 30 s; 15 s by default: a client declares a
     * stream dead after twice the interval, and common proxies close a connection idle for 30 to 60 s).
     */
    heartbeatMs: integer('EVENT_FEED_HEARTBEAT_MS', { min: 100, max: 30_000, default: 15_000 }),
  },
});
