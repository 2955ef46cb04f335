import { defineSlice, integer } from '../../config/settings';

/** Web sessions of people (docs/web.md). */
export const webSessionsConfig = defineSlice({
  web: {
    /** A session unused this long ends (its last_seen_at is updated at most once a minute). */
    sessionIdleTimeoutMinutes: integer('SESSION_IDLE_TIMEOUT_MINUTES', { min: 1, max: 525_600, default: 720 }),
    /** A session ends this long after sign-in, however active. */
    sessionAbsoluteTimeoutHours: integer('SESSION_ABSOLUTE_TIMEOUT_HOURS', { min: 1, max: 8_760, default: 168 }),
  },
});
