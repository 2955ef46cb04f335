import { secret } from '../config/dev-secrets';
import { list, parseTrustProxy } from '../config/parsers';
import { check, defineSlice, integer, oneOf, Refused, text } from '../config/settings';

const requestTimeoutMs = integer('HTTP_REQUEST_TIMEOUT_MS', { min: 1000, max: 3_600_000, default: 60_000 });
const headersTimeoutMs = integer('HTTP_HEADERS_TIMEOUT_MS', { min: 1000, max: 3_600_000, default: 10_000 });

/** The HTTP server and its limits (docs/security.md), the secrets key, and logging. */
export const commonConfig = defineSlice(
  {
    port: integer('PORT', { min: 0, max: 65535, default: 3000 }),
    /** Limits of the HTTP server (docs/security.md). */
    http: {
      /** Time a client has to send a whole request, headers and body. */
      requestTimeoutMs,
      /** Time a client has to send the request headers. */
      headersTimeoutMs,
      /** How long an idle keep-alive connection stays open. */
      keepAliveTimeoutMs: integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', { min: 1000, max: 3_600_000, default: 5_000 }),
      /** Bytes of request bodies one process holds in memory at once. */
      bodyBudgetBytes: integer('HTTP_BODY_BUDGET_BYTES', { min: 32 * 1024 * 1024, max: 8 * 1024 * 1024 * 1024, default: 128 * 1024 * 1024 }),
      /**
       * Bytes of bodies read before authentication (Twilio's callbacks, the sign-in forms) one client
       * address (clientKey) may hold at once, of the 4 MiB those bodies share per process: at least
       * one of Twilio's 64 KiB forms, at most the whole 4 MiB.
       */
      unauthenticatedBodyBytesPerIp: integer('HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP', { min: 64 * 1024, max: 4 * 1024 * 1024, default: 512 * 1024 }),
    },
    /** Which proxies' X-Forwarded-For is believed for the client IP (per-IP limits). */
    trustProxy: text('TRUST_PROXY', { default: 'false' }).to(parseTrustProxy),
    /** The AES-256-GCM key of secrets at rest (docs/operations.md, "Rotating SECRETS_KEY"). */
    secretsKey: secret('SECRETS_KEY', 'secretsKey', { pattern: /^[0-9a-fA-F]{64}$/, message: 'must be 64 hexadecimal characters (32 bytes)' }).to((key) =>
      Buffer.from(key, 'hex'),
    ),
    /** Earlier (or next) keys that open sealed secrets but never seal: key rotation (docs/operations.md). */
    secretsKeyFallbacks: text('SECRETS_KEY_FALLBACKS', { default: '' }).to((value) => {
      const keys = list(value);
      // The entry's number, never its text: it may be a secret.
      const bad = keys.flatMap((key, i) => (/^[0-9a-fA-F]{64}$/.test(key) ? [] : [`entry ${i + 1} is not 64 hexadecimal characters (32 bytes)`]));
      if (bad.length) throw new Refused(...bad);
      return keys.map((key) => Buffer.from(key, 'hex'));
    }),
    logLevel: oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
    /** `json` lines for machines, `pretty` one-line text for people. */
    logFormat: oneOf('LOG_FORMAT', ['json', 'pretty'], { default: ({ isDevelopment }) => (isDevelopment ? 'pretty' : 'json') }),
  },
  [check(headersTimeoutMs, [requestTimeoutMs], (headers, request) => (headers > request ? `must not exceed HTTP_REQUEST_TIMEOUT_MS (${request})` : undefined))],
);
