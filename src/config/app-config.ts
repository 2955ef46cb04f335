import { attachmentsConfig } from '../attachments/attachments.config';
import { auditConfig } from '../audit/audit.config';
import { authConfig } from '../auth/auth.config';
import { webSessionsConfig } from '../auth/web-sessions/web-sessions.config';
import { emailConfig } from '../channels/email/email.config';
import { mailboxesConfig } from '../channels/email/mailboxes/mailboxes.config';
import { smsConfig } from '../channels/sms/sms.config';
import { commonConfig } from '../common/common.config';
import { databaseConfig } from '../database/database.config';
import { deliveryConfig } from '../delivery/delivery.config';
import { eventFeedConfig } from '../event-feed/event-feed.config';
import { eventSubscriptionsConfig } from '../event-feed/event-subscriptions.config';
import { eventStreamsConfig } from '../event-feed/event-streams.config';
import { eventsConfig } from '../events/events.config';
import { limitsConfig } from '../limits/limits.config';
import { liveConfig } from '../live/live.config';
import { mcpConfig } from '../mcp/mcp.config';
import { oauthConfig } from '../oauth/oauth.config';
import { opsConfig } from '../ops/ops.config';
import { outboundHttpConfig } from '../outbound-http/outbound-http.config';
import { queueConfig } from '../queue/queue.config';
import { webhooksConfig } from '../webhooks/webhooks.config';
import { APP_ENV, serviceConfig } from './service.config';
import { assemble, check, ConfigOf } from './settings';

export type { RateLimit } from '../limits/limits.config';
export type { TrustProxy } from './parsers';
export type { AppEnv, ProcessRole } from './service.config';
export { ConfigError } from './settings';

/**
 * Each feature declares its settings in its own `<feature>.config.ts` (docs/configuration.md,
 * "Where a setting is declared"); this list is the whole configuration, in the order problems are reported.
 */
export const SLICES = [
  serviceConfig,
  databaseConfig,
  queueConfig,
  commonConfig,
  authConfig,
  webSessionsConfig,
  oauthConfig,
  limitsConfig,
  mcpConfig,
  opsConfig,
  smsConfig,
  emailConfig,
  mailboxesConfig,
  webhooksConfig,
  outboundHttpConfig,
  deliveryConfig,
  eventsConfig,
  eventFeedConfig,
  eventSubscriptionsConfig,
  eventStreamsConfig,
  attachmentsConfig,
  liveConfig,
  auditConfig,
] as const;

/** Rules between the settings of two features. */
const RULES = [
  check(commonConfig.tree.http.bodyBudgetBytes, [mcpConfig.tree.mcp.maxBodyBytes], (budget, mcpBody) =>
    budget < mcpBody ? `must be at least MCP_MAX_BODY_BYTES (${mcpBody}), or no MCP body of that size could be read` : undefined,
  ),
  check(limitsConfig.tree.rateLimits.mcp.limit, [mcpConfig.tree.mcp.maxBatch], (limit, maxBatch) =>
    limit > 0 && limit < maxBatch
      ? `${limit} is below MCP_MAX_BATCH (${maxBatch}), so a full batch could never run; raise it or lower MCP_MAX_BATCH (0 turns the limit off)`
      : undefined,
  ),
  check(eventSubscriptionsConfig.tree.eventSubscriptions.maxTtlMs, [eventSubscriptionsConfig.tree.eventSubscriptions.minTtlMs], (max, min) =>
    max < min ? `must be at least EVENT_SUBSCRIPTION_MIN_TTL_MS (${min})` : undefined,
  ),
];

type Intersection<U> = (U extends unknown ? (whole: U) => void : never) extends (whole: infer I) => void ? I : never;

/** The service's configuration: the slices' trees, each setting replaced by its value. */
export type AppConfig = ConfigOf<Intersection<(typeof SLICES)[number]['tree']>>;

/** The limits counted in Redis (shared by every replica), by name. */
export type RateLimitName = keyof AppConfig['rateLimits'];

/** Reads and validates the environment; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  return assemble<AppConfig>(SLICES, RULES, APP_ENV, env);
}
