import { constant, defineSlice, integer, Setting } from '../config/settings';

/** `limit` calls per `windowSeconds` (a fixed window); a limit of 0 turns it off. */
export interface RateLimit {
  limit: number;
  windowSeconds: number;
  /** The variable that sets `limit`, named in the answer when it is reached. */
  variable: string;
}

/** A rate limit's calls per window, 0 for none; the variable is named when a caller reaches it. */
function rateLimit(variable: string, byDefault: number, window: Setting<number>) {
  const limit = integer(variable, { min: 0, max: 100_000_000, default: byDefault });
  return { limit, windowSeconds: window, variable: constant(variable) };
}

function windowSeconds(variable: string, byDefault: number): Setting<number> {
  return integer(variable, { min: 1, max: 86_400, default: byDefault });
}

const PUBLIC_RATE_WINDOW_SECONDS = windowSeconds('PUBLIC_RATE_WINDOW_SECONDS', 60);
const SIGN_IN_RATE_WINDOW_SECONDS = windowSeconds('SIGN_IN_RATE_WINDOW_SECONDS', 900);

/**
 * The limits counted in Redis (shared by every replica): per API key on /api/mcp, per client IP on
 * public routes, per address and IP on sign-in, per person on web actions (docs/configuration.md).
 */
export const limitsConfig = defineSlice({
  /**
   * How long a rate-limit check waits for Redis before it lets the call through (the counter's
   * outage must not take the API down): RATE_LIMIT_REDIS_TIMEOUT_MS, 250 ms by default.
   */
  rateLimitRedisTimeoutMs: integer('RATE_LIMIT_REDIS_TIMEOUT_MS', { min: 10, max: 10_000, default: 250 }),
  rateLimits: {
    mcp: rateLimit('MCP_RATE_LIMIT', 600, windowSeconds('MCP_RATE_WINDOW_SECONDS', 60)),
    pixel: rateLimit('PIXEL_RATE_LIMIT', 600, PUBLIC_RATE_WINDOW_SECONDS),
    attachment: rateLimit('ATTACHMENT_RATE_LIMIT', 120, PUBLIC_RATE_WINDOW_SECONDS),
    /** Requests for webhook endpoints' public signing keys (their JWK Sets) one client IP may make. */
    webhookKeys: rateLimit('WEBHOOK_KEYS_RATE_LIMIT', 120, PUBLIC_RATE_WINDOW_SECONDS),
    oauthAuthorize: rateLimit('OAUTH_AUTHORIZE_RATE_LIMIT', 60, PUBLIC_RATE_WINDOW_SECONDS),
    /** Requests to the OAuth token and revocation endpoints one client IP may make. */
    oauthToken: rateLimit('OAUTH_TOKEN_RATE_LIMIT', 600, PUBLIC_RATE_WINDOW_SECONDS),
    /** Dynamic Client Registrations (RFC 7591) one client IP may make. */
    oauthRegister: rateLimit('OAUTH_REGISTER_RATE_LIMIT', 60, PUBLIC_RATE_WINDOW_SECONDS),
    /** Sign-in links one email address may ask for (web app). */
    signInAddress: rateLimit('SIGN_IN_RATE_LIMIT_PER_ADDRESS', 5, SIGN_IN_RATE_WINDOW_SECONDS),
    /** Sign-in requests one client IP may make. */
    signInIp: rateLimit('SIGN_IN_RATE_LIMIT_PER_IP', 20, SIGN_IN_RATE_WINDOW_SECONDS),
    /**
     * New callback URLs one credential may have verified by events/subscribe: each is a POST to a
     * URL of the caller's choosing whose failure category (timeout, refused, TLS, 4xx, 5xx) it
     * learns, so the budget keeps subscribe from serving as a probe of other hosts.
     */
    callbackVerifications: rateLimit('EVENT_SUBSCRIPTION_VERIFICATIONS_LIMIT', 20, windowSeconds('EVENT_SUBSCRIPTION_VERIFICATIONS_WINDOW_SECONDS', 3600)),
    /** State-changing web requests (replies, approvals, labels, settings) one signed-in person may make. */
    webActions: rateLimit('WEB_ACTION_RATE_LIMIT', 120, windowSeconds('WEB_ACTION_RATE_WINDOW_SECONDS', 60)),
  },
});
