import { defineSlice, integer } from '../config/settings';

/** Live updates of the web app's pages (docs/web.md, "Live updates"). */
export const liveConfig = defineSlice({
  live: {
    /** Streams one person may hold open at once in one API process; one more gets 429. */
    streamsPerPerson: integer('LIVE_STREAMS_PER_PERSON', { min: 1, max: 1000, default: 10 }),
    /** Streams one API process holds open at once, everyone's together; one more gets 503. */
    streamsPerProcess: integer('LIVE_STREAMS_PER_PROCESS', { min: 1, max: 100_000, default: 5000 }),
    /** A comment line is sent on every open stream this often, so proxies keep it open; the sessions are checked again then too. */
    heartbeatMs: integer('LIVE_HEARTBEAT_MS', { min: 1000, max: 300_000, default: 25_000 }),
  },
});
