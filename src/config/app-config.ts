import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { plainToInstance } from 'class-transformer';
import * as ipaddr from 'ipaddr.js';
import { getMetadataStorage, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, validateSync } from 'class-validator';

export type AppEnv = 'development' | 'production';
export type ProcessRole = 'api' | 'worker' | 'all';

/**
 * The process environment as the service reads it. Every variable is validated at start;
 * a bad value stops the boot with a message naming the variable.
 */
class EnvironmentVariables {
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsOptional()
  @IsIn(['development', 'production'])
  APP_ENV: AppEnv = 'production';

  @IsString()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL: string;

  @IsString()
  @Matches(/^rediss?:\/\//, { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL: string;

  @IsOptional()
  @IsString()
  @Matches(/^\S{16,}$/, { message: 'ADMIN_TOKEN must be at least 16 characters with no spaces' })
  ADMIN_TOKEN?: string;

  @IsOptional()
  @IsString()
  @Matches(/^\S{16,}$/, { message: 'INGEST_TOKEN must be at least 16 characters with no spaces' })
  INGEST_TOKEN?: string;

  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'SMS_CARRIER_URL must be an http(s) URL' })
  SMS_CARRIER_URL?: string;

  @IsOptional()
  @Matches(/^smtps?:\/\/\S+$/, { message: 'SMTP_URL must be an smtp:// or smtps:// URL' })
  SMTP_URL?: string;

  @IsOptional()
  @IsString()
  @Matches(/^\S{16,}$/, { message: 'METRICS_TOKEN must be at least 16 characters with no spaces' })
  METRICS_TOKEN?: string;

  /** A port of its own for GET /metrics (a worker has no other HTTP server); 0 = none. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(65535)
  METRICS_PORT = 0;

  /** OpenTelemetry: where spans go (OTLP over HTTP); unset, tracing is off (docs/operations.md, "Tracing"). */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, such as http://otel-collector:4318' })
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;

  /** The traces signal's own endpoint (the full URL, /v1/traces included); OpenTelemetry's standard variable. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL, such as http://otel-collector:4318/v1/traces' })
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;

  /** OpenTelemetry's standard switch: true turns tracing off even with an endpoint set. */
  @IsOptional()
  @IsIn(['true', 'false', 'TRUE', 'FALSE', ''])
  OTEL_SDK_DISABLED?: string;

  /** Twilio's REST API, or a Twilio-compatible provider's (docs/twilio.md); https except in development. */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, { message: 'TWILIO_API_BASE_URL must be an http(s) URL without a query, such as https://api.twilio.com' })
  TWILIO_API_BASE_URL = 'https://api.twilio.com';

  @IsOptional()
  @Matches(/^[0-9a-fA-F]{64}$/, { message: 'SECRETS_KEY must be 64 hexadecimal characters (32 bytes)' })
  SECRETS_KEY?: string;

  @IsOptional()
  @IsString()
  SECRETS_KEY_FALLBACKS = '';

  @IsOptional()
  @Matches(/^https?:\/\/[^\s]+$/, { message: 'PUBLIC_BASE_URL must be an http(s) URL' })
  PUBLIC_BASE_URL = 'http://localhost:3000';

  @IsOptional()
  @IsIn(['api', 'worker', 'all'])
  PROCESS_ROLE: ProcessRole = 'all';

  @IsOptional()
  @Matches(/^[A-Za-z0-9:_{}-]{1,64}$/, { message: 'QUEUE_PREFIX must be 1-64 characters of A-Z, a-z, 0-9, : _ { } -' })
  QUEUE_PREFIX = '{mss}';

  @IsOptional()
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** `json` lines for machines, `pretty` one-line text for people; default: pretty in development. */
  @IsOptional()
  @IsIn(['json', 'pretty'])
  LOG_FORMAT?: 'json' | 'pretty';

  /** Check every tool result against its output schema (default: on in development, off in production). */
  @IsOptional()
  @IsIn(['true', 'false'])
  MCP_CHECK_RESULTS?: 'true' | 'false';

  @IsOptional()
  @IsString()
  DEV_SECRETS_FILE = '.dev/secrets.json';

  @IsOptional()
  @IsString()
  MCP_ALLOWED_ORIGINS = '';

  @IsOptional()
  @IsInt()
  @Min(1024)
  @Max(64 * 1024 * 1024)
  MCP_MAX_BODY_BYTES = 1024 * 1024;

  @IsOptional()
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  HTTP_REQUEST_TIMEOUT_MS = 60_000;

  @IsOptional()
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  HTTP_HEADERS_TIMEOUT_MS = 10_000;

  @IsOptional()
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS = 5_000;

  @IsOptional()
  @IsInt()
  @Min(32 * 1024 * 1024)
  @Max(8 * 1024 * 1024 * 1024)
  HTTP_BODY_BUDGET_BYTES = 128 * 1024 * 1024;

  /**
   * Bytes of bodies read before authentication (Twilio's callbacks, the sign-in forms) one client
   * address may hold at once, of the 4 MiB those bodies share per process: at least one of
   * Twilio's 64 KiB forms, at most the whole 4 MiB.
   */
  @IsOptional()
  @IsInt()
  @Min(64 * 1024)
  @Max(4 * 1024 * 1024)
  HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP = 512 * 1024;
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1000)
  MCP_MAX_BATCH = 50;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(64)
  MCP_BATCH_CONCURRENCY = 4;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000)
  MCP_KEY_CONCURRENCY = 8;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100_000_000)
  MCP_RATE_LIMIT = 600;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(86_400)
  MCP_RATE_WINDOW_SECONDS = 60;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100_000_000)
  PIXEL_RATE_LIMIT = 600;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100_000_000)
  ATTACHMENT_RATE_LIMIT = 120;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100_000_000)
  OAUTH_AUTHORIZE_RATE_LIMIT = 60;

  /** Requests to the OAuth token and revocation endpoints one client IP may make per PUBLIC_RATE_WINDOW_SECONDS. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100_000_000)
  OAUTH_TOKEN_RATE_LIMIT = 600;

  /** Dynamic Client Registrations (RFC 7591) one client IP may make per PUBLIC_RATE_WINDOW_SECONDS. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100_000_000)
  OAUTH_REGISTER_RATE_LIMIT = 60;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(86_400)
  PUBLIC_RATE_WINDOW_SECONDS = 60;

  @IsOptional()
  @IsString()
  TRUST_PROXY = 'false';

  /** Sign-in links one email address may ask for per SIGN_IN_RATE_WINDOW_SECONDS (web app). */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100_000_000)
  SIGN_IN_RATE_LIMIT_PER_ADDRESS = 5;

  /** Sign-in requests one client IP may make per SIGN_IN_RATE_WINDOW_SECONDS. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100_000_000)
  SIGN_IN_RATE_LIMIT_PER_IP = 20;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(86_400)
  SIGN_IN_RATE_WINDOW_SECONDS = 900;

  /** A web session unused this long ends. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(525_600)
  SESSION_IDLE_TIMEOUT_MINUTES = 720;

  /** A web session ends this long after sign-in, however active. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(8_760)
  SESSION_ABSOLUTE_TIMEOUT_HOURS = 168;

  /** An OAuth client registration (RFC 7591) that got no grant this long after registering is deleted. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(2_592_000)
  OAUTH_UNUSED_CLIENT_TTL_SECONDS = 86_400;

  /** Unset: loopback in development (local receivers work out of the box), nothing in production; `none`: nothing. */
  @IsOptional()
  @IsString()
  WEBHOOK_ALLOWED_CIDRS?: string;

  /** CIDRs of mail servers exempt from the public-address rule; unset: loopback in development, nothing in production; `none`: nothing. */
  @IsOptional()
  @IsString()
  MAIL_ALLOWED_CIDRS?: string;

  /** How long connecting and logging in to a mailbox's IMAP or SMTP server may take. */
  @IsOptional()
  @IsInt()
  @Min(1000)
  @Max(120_000)
  MAIL_CONNECT_TIMEOUT_MS = 15_000;

  /** How often a mailbox whose server has no IMAP IDLE is checked for new mail. */
  @IsOptional()
  @IsInt()
  @Min(5)
  @Max(3600)
  MAIL_SYNC_POLL_SECONDS = 60;

  /** On a mailbox's first sync, mail received this many days back is imported (older mail is not). */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(3650)
  MAIL_SYNC_INITIAL_DAYS = 7;

  /** Logins refused in a row before a mailbox is reported unhealthy (AUTH) and stops retrying. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  MAIL_AUTH_FAILURES_BEFORE_UNHEALTHY = 3;

  /** How long a mailbox's server may be unreachable before the mailbox is reported unhealthy (NETWORK). */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(86_400)
  MAIL_NETWORK_GRACE_SECONDS = 300;

  /** The longest wait between a mailbox's reconnection attempts (they back off 1 s, 5 s, 15 s, 30 s, 60 s). */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(3600)
  MAIL_SYNC_RETRY_MAX_SECONDS = 60;

  /** Mailboxes one worker process syncs at most at once. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(10_000)
  MAIL_SYNCS_PER_WORKER = 100;

  @IsOptional()
  @IsString()
  DELIVERY_RETRY_SCHEDULE = '1m,5m,30m,2h,12h';

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(2000)
  DELIVERY_CONCURRENCY = 100;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(2000)
  DELIVERY_ENDPOINT_CONCURRENCY = 10;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(60_000)
  DELIVERY_TIMEOUT_MS = 10_000;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  DELIVERY_SWEEP_INTERVAL_MS = 15_000;

  /** How often a worker checks endpoints' failing runs: the 24-hour auto-disable and the owners' emails. */
  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  ENDPOINT_HEALTH_INTERVAL_MS = 60_000;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  DELIVERY_SWEEP_GRACE_MS = 60_000;

  @IsOptional()
  @IsInt()
  @Min(10)
  @Max(60_000)
  OUTBOX_POLL_INTERVAL_MS = 1_000;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(3650)
  DELIVERY_LOG_RETENTION_DAYS = 30;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(2 ** 50)
  ATTACHMENT_QUOTA_BYTES_PER_ORG = 5 * 1024 ** 3;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(3600)
  EMAIL_OPEN_SCANNER_WINDOW_SECONDS = 5;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(86_400)
  EMAIL_OPEN_DEDUP_SECONDS = 60;

  @IsOptional()
  @IsString()
  EMAIL_OPEN_IGNORED_USER_AGENTS?: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(32)
  EXTRACTION_THREADS = 2;

  // Default EXTRACTION_THREADS − 1 (at least 1); at most EXTRACTION_THREADS (checked in loadConfig).
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(32)
  EXTRACTION_ORG_MAX_THREADS?: number;

  // At most 2 minutes: a claim older than 5 minutes is taken for a dead process (attachment-extraction.service.ts).
  @IsOptional()
  @IsInt()
  @Min(1000)
  @Max(120_000)
  EXTRACTION_TIMEOUT_MS = 60_000;

  @IsOptional()
  @IsInt()
  @Min(64)
  @Max(8192)
  EXTRACTION_THREAD_MEMORY_MB = 512;

  @IsOptional()
  @IsInt()
  @Min(1024 * 1024)
  @Max(1024 * 1024 * 1024)
  EXTRACTION_MAX_UNZIPPED_BYTES = 64 * 1024 * 1024;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  EXTRACTION_MAX_ZIP_ENTRIES = 10_000;

  @IsOptional()
  @IsInt()
  @Min(1_000_000)
  @Max(1_000_000_000)
  EXTRACTION_MAX_IMAGE_PIXELS = 40_000_000;
}

/** The limits counted in Redis (shared by every replica): per API key on /api/mcp, per client IP on public routes, per address and IP on sign-in. */
export type RateLimitName = 'mcp' | 'pixel' | 'attachment' | 'oauthAuthorize' | 'oauthToken' | 'oauthRegister' | 'signInAddress' | 'signInIp';

/** `limit` calls per `windowSeconds` (a fixed window); a limit of 0 turns it off. */
export interface RateLimit {
  limit: number;
  windowSeconds: number;
  /** The variable that sets `limit`, named in the answer when it is reached. */
  variable: string;
}

/** Express's `trust proxy`: false, a number of proxy hops, or the addresses of trusted proxies. */
export type TrustProxy = false | number | string[];

export interface AppConfig {
  port: number;
  appEnv: AppEnv;
  isDevelopment: boolean;
  databaseUrl: string;
  redisUrl: string;
  adminToken: string;
  /** Providers (carriers, mail servers, mailbox sync) authenticate with this on /ingest routes. */
  ingestToken: string;
  /** Where outbound SMS are handed over (an HTTP carrier API); null when none is configured. */
  smsCarrierUrl: string | null;
  smtpUrl: string | null;
  /** Prometheus metrics (docs/operations.md, "Metrics"). */
  metrics: {
    /** Bearer token GET /metrics requires; null: open, as Prometheus targets usually are. */
    token: string | null;
    /** A listener of its own for GET /metrics, on every role; null when METRICS_PORT is 0. */
    port: number | null;
  };
  /** OpenTelemetry traces: on when an OTLP endpoint is set and OTEL_SDK_DISABLED is not true (the SDK reads its other OTEL_* variables itself). */
  tracing: { enabled: boolean };
  /** Phone lines connected to Twilio (or a compatible provider): its API, without a trailing slash. */
  twilio: { apiBaseUrl: string };
  secretsKey: Buffer;
  /** Earlier (or next) keys that open sealed secrets but never seal: key rotation (docs/operations.md). */
  secretsKeyFallbacks: Buffer[];
  publicBaseUrl: string;
  processRole: ProcessRole;
  queuePrefix: string;
  logLevel: string;
  logFormat: 'json' | 'pretty';
  mcp: {
    allowedOrigins: string[];
    maxBodyBytes: number;
    /** Most messages one JSON-RPC batch may hold; a larger batch is refused whole. */
    maxBatch: number;
    /** Messages of one batch that run at the same time. */
    batchConcurrency: number;
    /** Calls (batch messages) of one API key that may run at the same time in one process. */
    keyConcurrency: number;
    /** Whether each tool result is checked against the tool's output schema before it is sent. */
    checkResults: boolean;
  };
  rateLimits: Record<RateLimitName, RateLimit>;
  /** Which proxies' X-Forwarded-For is believed for the client IP (per-IP limits). */
  trustProxy: TrustProxy;
  /** Limits of the HTTP server (docs/security.md). */
  http: {
    /** Time a client has to send a whole request, headers and body. */
    requestTimeoutMs: number;
    /** Time a client has to send the request headers. */
    headersTimeoutMs: number;
    /** How long an idle keep-alive connection stays open. */
    keepAliveTimeoutMs: number;
    /** Bytes of request bodies one process holds in memory at once. */
    bodyBudgetBytes: number;
    /** Bytes of bodies read before authentication one client address (clientKey) may hold at once. */
    unauthenticatedBodyBytesPerIp: number;
  };
  webhooks: {
    allowedCidrs: string[];
    /** How often a worker checks failing endpoints (auto-disable after 24 h, owners' emails). */
    healthIntervalMs: number;
  };
  /** Mailboxes connected over IMAP and SMTP (docs/mailboxes.md). */
  mail: {
    /** Mail servers on these CIDRs may be private addresses (MAIL_ALLOWED_CIDRS). */
    allowedCidrs: string[];
    /** Plain-text connections (`tls: none`) are refused outside development. */
    allowPlaintext: boolean;
    connectTimeoutMs: number;
    pollSeconds: number;
    initialDays: number;
    authFailuresBeforeUnhealthy: number;
    networkGraceSeconds: number;
    retryMaxSeconds: number;
    syncsPerWorker: number;
  };
  /** Web sessions of people (docs/web.md). */
  web: {
    /** A session unused this long ends (its last_seen_at is updated at most once a minute). */
    sessionIdleTimeoutMinutes: number;
    /** A session ends this long after sign-in, however active. */
    sessionAbsoluteTimeoutHours: number;
  };
  /** The OAuth authorization server of the MCP endpoint (docs/mcp.md). */
  oauth: {
    /** A client registration that got no grant this long after registering is deleted (OAUTH_UNUSED_CLIENT_TTL_SECONDS). */
    unusedClientTtlSeconds: number;
  };
  delivery: {
    /** Delay before each retry, in ms; attempts = 1 + its length. */
    retryScheduleMs: number[];
    concurrency: number;
    /** Attempts one endpoint may have in flight in one worker. */
    endpointConcurrency: number;
    timeoutMs: number;
    sweepIntervalMs: number;
    sweepGraceMs: number;
    /** Finished deliveries older than this many days are deleted with their attempts; 0 keeps them forever. */
    logRetentionDays: number;
  };
  outbox: { pollIntervalMs: number };
  attachments: {
    /** Attachment bytes one org may store, unless an operator set its own quota. */
    quotaBytesPerOrg: number;
  };
  emailOpens: {
    /** Fetches this soon after sending are scanner prefetches, not opens. */
    scannerWindowSeconds: number;
    /** A refetch this soon after the last counted open is the same view. */
    dedupSeconds: number;
    /**
     * Lower-case substrings of User-Agent values that are never opens (security gateways, bots);
     * null: the maintained default list, which lives with the open rule (channels/email/open-policy.ts).
     */
    ignoredUserAgents: string[] | null;
  };
  /** Attachment text extraction (docs/attachments.md, "Limits"). */
  extraction: {
    /** Extraction threads per worker process, and files it extracts at once. */
    threads: number;
    /** Of those, how many one org's files may hold at once in a process (fairness between orgs, docs/attachments.md). */
    orgMaxThreads: number;
    /** Time one file may take once its thread (or the OCR worker) starts on it. */
    timeoutMs: number;
    /** Old-generation heap of one extraction thread. */
    threadMemoryMb: number;
    /** Bytes a docx/xlsx/pptx may inflate to (the sum its central directory declares, and what is actually inflated), and a PDF's compressed streams decode to. */
    maxUnzippedBytes: number;
    /** Entries a docx/xlsx/pptx may list. */
    maxZipEntries: number;
    /** Pixels (width × height as its header declares) of an image to OCR, or of an image a PDF's text extraction decodes. */
    maxImagePixels: number;
  };
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The variables read, and which of them are numbers, both taken from EnvironmentVariables' own
 * decorators: a variable declared there is read, and an @IsInt one is parsed as a number.
 */
const DECLARED = getMetadataStorage().getTargetValidationMetadatas(EnvironmentVariables, '', true, false);
const VARIABLES = [...new Set(DECLARED.map((rule) => rule.propertyName))];
const NUMERIC = new Set(DECLARED.filter((rule) => rule.name === 'isInt').map((rule) => rule.propertyName));

/** Reads and validates the environment; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const raw: Record<string, unknown> = {};
  for (const key of VARIABLES) {
    const value = env[key];
    if (value === undefined || value === '') continue;
    raw[key] = NUMERIC.has(key) && /^\d+$/.test(value) ? Number(value) : value;
  }
  const parsed = plainToInstance(EnvironmentVariables, raw);
  const errors = validateSync(parsed, { whitelist: true });
  const problems = errors.map((e) => `${e.property}: ${Object.values(e.constraints ?? {}).join('; ')}`);
  if (!parsed.DATABASE_URL) problems.push('DATABASE_URL: is required');
  if (!parsed.REDIS_URL) problems.push('REDIS_URL: is required');
  const isDevelopment = parsed.APP_ENV === 'development';
  if (!isDevelopment && !parsed.ADMIN_TOKEN) problems.push('ADMIN_TOKEN: is required when APP_ENV=production');
  if (!isDevelopment && !parsed.SECRETS_KEY) problems.push('SECRETS_KEY: is required when APP_ENV=production');
  if (!isDevelopment && !parsed.INGEST_TOKEN) problems.push('INGEST_TOKEN: is required when APP_ENV=production');
  const allowedCidrs = allowedCidrsOf(parsed.WEBHOOK_ALLOWED_CIDRS, isDevelopment);
  const mailAllowedCidrs = allowedCidrsOf(parsed.MAIL_ALLOWED_CIDRS, isDevelopment);
  for (const [variable, cidrs] of [
    ['WEBHOOK_ALLOWED_CIDRS', allowedCidrs],
    ['MAIL_ALLOWED_CIDRS', mailAllowedCidrs],
  ] as const) {
    for (const cidr of cidrs) if (!isCidr(cidr)) problems.push(`${variable}: ${cidr} is not a CIDR such as 127.0.0.0/8`);
  }
  if (!isDevelopment && /^http:/i.test(parsed.TWILIO_API_BASE_URL)) {
    problems.push('TWILIO_API_BASE_URL: must be https when APP_ENV=production (the auth token is sent with every request)');
  }
  const secretsKeyFallbacks = list(parsed.SECRETS_KEY_FALLBACKS);
  for (const [i, key] of secretsKeyFallbacks.entries()) {
    if (!/^[0-9a-fA-F]{64}$/.test(key)) problems.push(`SECRETS_KEY_FALLBACKS: entry ${i + 1} is not 64 hexadecimal characters (32 bytes)`);
  }
  const allowedOrigins = list(parsed.MCP_ALLOWED_ORIGINS);
  for (const origin of allowedOrigins) {
    if (!/^https?:\/\/[^/\s]+$/.test(origin)) problems.push(`MCP_ALLOWED_ORIGINS: ${origin} is not an origin such as https://app.example.com`);
  }
  const valid = (...names: string[]) => !errors.some((e) => names.includes(e.property));
  if (valid('HTTP_HEADERS_TIMEOUT_MS', 'HTTP_REQUEST_TIMEOUT_MS') && parsed.HTTP_HEADERS_TIMEOUT_MS > parsed.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push(`HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS (${parsed.HTTP_REQUEST_TIMEOUT_MS})`);
  }
  if (valid('HTTP_BODY_BUDGET_BYTES', 'MCP_MAX_BODY_BYTES') && parsed.HTTP_BODY_BUDGET_BYTES < parsed.MCP_MAX_BODY_BYTES) {
    problems.push(`HTTP_BODY_BUDGET_BYTES: must be at least MCP_MAX_BODY_BYTES (${parsed.MCP_MAX_BODY_BYTES}), or no MCP body of that size could be read`);
  }
  if (
    valid('EXTRACTION_ORG_MAX_THREADS', 'EXTRACTION_THREADS') &&
    parsed.EXTRACTION_ORG_MAX_THREADS !== undefined &&
    parsed.EXTRACTION_ORG_MAX_THREADS > parsed.EXTRACTION_THREADS
  ) {
    problems.push(`EXTRACTION_ORG_MAX_THREADS: must not exceed EXTRACTION_THREADS (${parsed.EXTRACTION_THREADS})`);
  }
  if (valid('MCP_MAX_BATCH', 'MCP_RATE_LIMIT') && parsed.MCP_RATE_LIMIT > 0 && parsed.MCP_RATE_LIMIT < parsed.MCP_MAX_BATCH) {
    problems.push(
      `MCP_RATE_LIMIT: ${parsed.MCP_RATE_LIMIT} is below MCP_MAX_BATCH (${parsed.MCP_MAX_BATCH}), so a full batch could never run; raise it or lower MCP_MAX_BATCH (0 turns the limit off)`,
    );
  }
  let trustProxy: TrustProxy = false;
  try {
    trustProxy = parseTrustProxy(parsed.TRUST_PROXY);
  } catch (error) {
    problems.push(`TRUST_PROXY: ${(error as Error).message}`);
  }
  let retryScheduleMs: number[] = [];
  try {
    retryScheduleMs = parseDurations(parsed.DELIVERY_RETRY_SCHEDULE);
  } catch (error) {
    problems.push(`DELIVERY_RETRY_SCHEDULE: ${(error as Error).message}`);
  }
  if (problems.length) {
    throw new ConfigError(`Invalid configuration:\n  - ${[...new Set(problems)].join('\n  - ')}`);
  }

  const devSecrets =
    isDevelopment && (!parsed.SECRETS_KEY || !parsed.ADMIN_TOKEN || !parsed.INGEST_TOKEN) ? loadDevSecrets(parsed.DEV_SECRETS_FILE) : undefined;

  return {
    port: parsed.PORT,
    appEnv: parsed.APP_ENV,
    isDevelopment,
    databaseUrl: parsed.DATABASE_URL,
    redisUrl: parsed.REDIS_URL,
    adminToken: parsed.ADMIN_TOKEN ?? devSecrets!.adminToken,
    ingestToken: parsed.INGEST_TOKEN ?? devSecrets!.ingestToken,
    smsCarrierUrl: parsed.SMS_CARRIER_URL ?? null,
    smtpUrl: parsed.SMTP_URL ?? null,
    metrics: { token: parsed.METRICS_TOKEN ?? null, port: parsed.METRICS_PORT || null },
    tracing: {
      enabled: Boolean(parsed.OTEL_EXPORTER_OTLP_ENDPOINT || parsed.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) && parsed.OTEL_SDK_DISABLED?.toLowerCase() !== 'true',
    },
    twilio: { apiBaseUrl: parsed.TWILIO_API_BASE_URL.replace(/\/+$/, '') },
    secretsKey: Buffer.from(parsed.SECRETS_KEY ?? devSecrets!.secretsKey, 'hex'),
    secretsKeyFallbacks: secretsKeyFallbacks.map((key) => Buffer.from(key, 'hex')),
    publicBaseUrl: parsed.PUBLIC_BASE_URL.replace(/\/+$/, ''),
    processRole: parsed.PROCESS_ROLE,
    queuePrefix: parsed.QUEUE_PREFIX,
    logLevel: parsed.LOG_LEVEL,
    logFormat: parsed.LOG_FORMAT ?? (isDevelopment ? 'pretty' : 'json'),
    mcp: {
      allowedOrigins,
      maxBodyBytes: parsed.MCP_MAX_BODY_BYTES,
      maxBatch: parsed.MCP_MAX_BATCH,
      batchConcurrency: parsed.MCP_BATCH_CONCURRENCY,
      keyConcurrency: parsed.MCP_KEY_CONCURRENCY,
      checkResults: parsed.MCP_CHECK_RESULTS === undefined ? isDevelopment : parsed.MCP_CHECK_RESULTS === 'true',
    },
    rateLimits: {
      mcp: { limit: parsed.MCP_RATE_LIMIT, windowSeconds: parsed.MCP_RATE_WINDOW_SECONDS, variable: 'MCP_RATE_LIMIT' },
      pixel: { limit: parsed.PIXEL_RATE_LIMIT, windowSeconds: parsed.PUBLIC_RATE_WINDOW_SECONDS, variable: 'PIXEL_RATE_LIMIT' },
      attachment: { limit: parsed.ATTACHMENT_RATE_LIMIT, windowSeconds: parsed.PUBLIC_RATE_WINDOW_SECONDS, variable: 'ATTACHMENT_RATE_LIMIT' },
      oauthAuthorize: {
        limit: parsed.OAUTH_AUTHORIZE_RATE_LIMIT,
        windowSeconds: parsed.PUBLIC_RATE_WINDOW_SECONDS,
        variable: 'OAUTH_AUTHORIZE_RATE_LIMIT',
      },
      oauthToken: { limit: parsed.OAUTH_TOKEN_RATE_LIMIT, windowSeconds: parsed.PUBLIC_RATE_WINDOW_SECONDS, variable: 'OAUTH_TOKEN_RATE_LIMIT' },
      oauthRegister: { limit: parsed.OAUTH_REGISTER_RATE_LIMIT, windowSeconds: parsed.PUBLIC_RATE_WINDOW_SECONDS, variable: 'OAUTH_REGISTER_RATE_LIMIT' },
      signInAddress: {
        limit: parsed.SIGN_IN_RATE_LIMIT_PER_ADDRESS,
        windowSeconds: parsed.SIGN_IN_RATE_WINDOW_SECONDS,
        variable: 'SIGN_IN_RATE_LIMIT_PER_ADDRESS',
      },
      signInIp: { limit: parsed.SIGN_IN_RATE_LIMIT_PER_IP, windowSeconds: parsed.SIGN_IN_RATE_WINDOW_SECONDS, variable: 'SIGN_IN_RATE_LIMIT_PER_IP' },
    },
    trustProxy,
    http: {
      requestTimeoutMs: parsed.HTTP_REQUEST_TIMEOUT_MS,
      headersTimeoutMs: parsed.HTTP_HEADERS_TIMEOUT_MS,
      keepAliveTimeoutMs: parsed.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      bodyBudgetBytes: parsed.HTTP_BODY_BUDGET_BYTES,
      unauthenticatedBodyBytesPerIp: parsed.HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP,
    },
    webhooks: { allowedCidrs, healthIntervalMs: parsed.ENDPOINT_HEALTH_INTERVAL_MS },
    mail: {
      allowedCidrs: mailAllowedCidrs,
      allowPlaintext: isDevelopment,
      connectTimeoutMs: parsed.MAIL_CONNECT_TIMEOUT_MS,
      pollSeconds: parsed.MAIL_SYNC_POLL_SECONDS,
      initialDays: parsed.MAIL_SYNC_INITIAL_DAYS,
      authFailuresBeforeUnhealthy: parsed.MAIL_AUTH_FAILURES_BEFORE_UNHEALTHY,
      networkGraceSeconds: parsed.MAIL_NETWORK_GRACE_SECONDS,
      retryMaxSeconds: parsed.MAIL_SYNC_RETRY_MAX_SECONDS,
      syncsPerWorker: parsed.MAIL_SYNCS_PER_WORKER,
    },
    web: { sessionIdleTimeoutMinutes: parsed.SESSION_IDLE_TIMEOUT_MINUTES, sessionAbsoluteTimeoutHours: parsed.SESSION_ABSOLUTE_TIMEOUT_HOURS },
    oauth: { unusedClientTtlSeconds: parsed.OAUTH_UNUSED_CLIENT_TTL_SECONDS },
    delivery: {
      retryScheduleMs,
      concurrency: parsed.DELIVERY_CONCURRENCY,
      endpointConcurrency: parsed.DELIVERY_ENDPOINT_CONCURRENCY,
      timeoutMs: parsed.DELIVERY_TIMEOUT_MS,
      sweepIntervalMs: parsed.DELIVERY_SWEEP_INTERVAL_MS,
      sweepGraceMs: parsed.DELIVERY_SWEEP_GRACE_MS,
      logRetentionDays: parsed.DELIVERY_LOG_RETENTION_DAYS,
    },
    outbox: { pollIntervalMs: parsed.OUTBOX_POLL_INTERVAL_MS },
    attachments: { quotaBytesPerOrg: parsed.ATTACHMENT_QUOTA_BYTES_PER_ORG },
    emailOpens: {
      scannerWindowSeconds: parsed.EMAIL_OPEN_SCANNER_WINDOW_SECONDS,
      dedupSeconds: parsed.EMAIL_OPEN_DEDUP_SECONDS,
      ignoredUserAgents: ignoredUserAgents(parsed.EMAIL_OPEN_IGNORED_USER_AGENTS),
    },
    extraction: {
      threads: parsed.EXTRACTION_THREADS,
      orgMaxThreads: parsed.EXTRACTION_ORG_MAX_THREADS ?? Math.max(1, parsed.EXTRACTION_THREADS - 1),
      timeoutMs: parsed.EXTRACTION_TIMEOUT_MS,
      threadMemoryMb: parsed.EXTRACTION_THREAD_MEMORY_MB,
      maxUnzippedBytes: parsed.EXTRACTION_MAX_UNZIPPED_BYTES,
      maxZipEntries: parsed.EXTRACTION_MAX_ZIP_ENTRIES,
      maxImagePixels: parsed.EXTRACTION_MAX_IMAGE_PIXELS,
    },
  };
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `1m,5m,30m,2h,12h` → milliseconds; `none` means no retries. */
export function parseDurations(value: string): number[] {
  if (value.trim() === 'none') return [];
  return list(value).map((item) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(item);
    if (!match) throw new Error(`${item} is not a duration such as 30s, 5m or 2h`);
    return Math.round(Number(match[1]) * UNIT_MS[match[2]]);
  });
}

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * `false` (the default): the client IP is the connection's peer. A number: that many proxy hops
 * are trusted (X-Forwarded-For read from the right). Otherwise a list of proxy addresses, CIDRs or
 * Express's names loopback, linklocal, uniquelocal. `true` is refused: trusting every hop lets any
 * client choose its own IP, and so its own per-IP rate-limit bucket.
 */
export function parseTrustProxy(value: string): TrustProxy {
  const trimmed = value.trim().toLowerCase();
  if (trimmed === '' || trimmed === 'false') return false;
  if (trimmed === 'true') throw new Error("true would believe any X-Forwarded-For; give the number of proxy hops or the proxies' addresses");
  if (/^\d+$/.test(trimmed)) {
    const hops = Number(trimmed);
    if (hops < 1 || hops > 10) throw new Error(`${trimmed} hops: give 1 to 10`);
    return hops;
  }
  const entries = list(trimmed);
  for (const entry of entries) {
    if (!PROXY_NAMES.has(entry) && !ipaddr.isValid(entry) && !isCidr(entry)) {
      throw new Error(`${entry} is not an IP address, a CIDR or one of loopback, linklocal, uniquelocal`);
    }
  }
  return entries;
}

/** Unset: the maintained default list; `none`: no user agent is ignored; else the given substrings. */
function ignoredUserAgents(value: string | undefined): string[] | null {
  if (value === undefined) return null;
  if (value.trim().toLowerCase() === 'none') return [];
  return list(value).map((item) => item.toLowerCase());
}

/** Loopback receivers (a local webhook receiver, the demo) are allowed in development unless the operator says otherwise. */
export const DEVELOPMENT_ALLOWED_CIDRS = ['127.0.0.0/8', '::1/128'];

/** An allowlist of CIDRs: unset, loopback in development and nothing in production; `none`, nothing. */
function allowedCidrsOf(value: string | undefined, isDevelopment: boolean): string[] {
  if (value === undefined) return isDevelopment ? [...DEVELOPMENT_ALLOWED_CIDRS] : [];
  if (value.trim().toLowerCase() === 'none') return [];
  return list(value);
}

function list(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

function isCidr(value: string): boolean {
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
}

interface DevSecrets {
  secretsKey: string;
  adminToken: string;
  ingestToken: string;
}

/** Development only: secrets generated once into a git-ignored file, so restarts keep them. */
function loadDevSecrets(file: string): DevSecrets {
  const path = resolve(file);
  if (existsSync(path)) {
    let stored: Partial<DevSecrets>;
    try {
      stored = JSON.parse(readFileSync(path, 'utf8')) as Partial<DevSecrets>;
    } catch (error) {
      throw new ConfigError(`Invalid configuration:\n  - DEV_SECRETS_FILE: ${path} is not valid JSON (${(error as Error).message}); fix or delete it`);
    }
    if (!stored.secretsKey || !/^[0-9a-f]{64}$/i.test(stored.secretsKey) || !stored.adminToken) {
      // Replacing it would lose the key that sealed existing webhook secrets: refuse instead.
      throw new ConfigError(`Invalid configuration:\n  - DEV_SECRETS_FILE: ${path} lacks a 64-hex secretsKey or an adminToken; fix or delete it`);
    }
    if (stored.ingestToken) return stored as DevSecrets;
    const upgraded = { ...stored, ingestToken: `dev_ingest_${randomBytes(16).toString('hex')}` } as DevSecrets;
    writeFileSync(path, JSON.stringify(upgraded, null, 2) + '\n', { mode: 0o600 });
    return upgraded;
  }
  const secrets: DevSecrets = {
    secretsKey: randomBytes(32).toString('hex'),
    adminToken: `dev_admin_${randomBytes(16).toString('hex')}`,
    ingestToken: `dev_ingest_${randomBytes(16).toString('hex')}`,
  };
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
  return secrets;
}
