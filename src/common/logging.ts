import { randomUUID } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { Params } from 'nestjs-pino';
import { AppConfig } from '../config/app-config';

/** Paths pino removes from every log line: credentials and secrets never reach the logs. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-service-signature"]',
  'res.headers["set-cookie"]',
  // An OAuth authorization response sends the browser to the client with the code in the query.
  'res.headers.location',
  // Top-level and one level down: pino's '*.token' does not match a top-level token.
  ...['key', 'secret', 'apiKey', 'password', 'token'].flatMap((name) => [name, `*.${name}`]),
];

/**
 * Paths that carry a bearer token in a segment: whoever holds the URL may use it, so the segment
 * is logged as [redacted]. The tracking pixel of sent emails is GET /t/o/:token. Express matches
 * routes case-insensitively, so these do too.
 */
const TOKEN_PATHS = [/^(\/t\/o\/)[^/]+/i];

/**
 * A request URL as it may be logged: no query string (signed links carry their signature there,
 * e.g. /attachments/:id/download?expires=…&sig=…) and no token path segment.
 */
/**
 * The end-of-request line's object without pino-http's own error for an answer of 500 or more
 * that carried none (`failed with status code 503`: /ready not ready, say), whose eleven lines of
 * stack say nothing the line does not. A real error stays.
 */
function withoutStatusError<T extends { err?: unknown }>(error: Error, value: T): T {
  return /^failed with status code \d+$/.test(error.message) ? { ...value, err: undefined } : value;
}

export function loggableUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  const path = url.split('?')[0];
  return TOKEN_PATHS.reduce((redacted, pattern) => redacted.replace(pattern, '$1[redacted]'), path);
}

/** The message of the line each request ends with: `GET /api/mcp 200 12ms` (the path as {@link loggableUrl} gives it). */
export function requestLine(req: IncomingMessage, res: ServerResponse, responseTime?: number): string {
  const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url;
  return `${req.method} ${loggableUrl(url)} ${res.statusCode}${responseTime === undefined ? '' : ` ${responseTime}ms`}`;
}

/** One line per entry: time, level, message; the request's id, method and URL stay on it. */
export const PRETTY_OPTIONS = {
  singleLine: true,
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,service',
};

/**
 * Structured logs with a request id on every line (taken from X-Request-Id when sane): JSON lines,
 * or with LOG_FORMAT=pretty (the default in development) one readable line each, written by
 * pino-pretty in pino's transport thread.
 *
 * Each request ends with one info line, `GET /api/mcp 200 12ms`: in JSON with `req` (id, method,
 * path), `res.statusCode` and `responseTime`; readable, with the request id only, as the message
 * says the rest. The response headers are added at LOG_LEVEL=debug (or trace) only.
 */
export function loggerParams(config: AppConfig): Params {
  const pretty = config.logFormat === 'pretty' && config.logLevel !== 'silent';
  const headers = config.logLevel === 'debug' || config.logLevel === 'trace';
  /** Readable: the request's id (the error, the response at debug) instead of what the message says. */
  const short = (req: IncomingMessage, { res, err }: { res: unknown; err?: unknown }) => ({
    req: { id: req.id },
    ...(headers ? { res } : {}),
    ...(err === undefined ? {} : { err }),
  });
  return {
    pinoHttp: {
      level: config.logLevel,
      ...(pretty ? { transport: { target: 'pino-pretty', options: PRETTY_OPTIONS } } : {}),
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      genReqId: (req: IncomingMessage, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      // A base binding, not customProps: pino-http calls customProps twice per request and makes
      // a child logger each time (about 4 % of the API's CPU per tool call in bench scenario 3).
      base: { pid: process.pid, hostname: hostname(), service: 'messaging-sync' },
      serializers: {
        req: (req: { id: string; method?: string; url?: string }) => ({ id: req.id, method: req.method, url: loggableUrl(req.url) }),
        res: (res: { statusCode: number; headers?: Record<string, unknown> }) =>
          headers ? { statusCode: res.statusCode, headers: res.headers } : { statusCode: res.statusCode },
      },
      customSuccessMessage: requestLine,
      // pino-http passes the response time to this one too, though its types do not say so.
      customErrorMessage: (req: IncomingMessage, res: ServerResponse, _error: Error, responseTime?: number) => requestLine(req, res, responseTime),
      ...(pretty
        ? {
            // The end-of-request line without the request's bindings: `{"req":{"id":…}}`, not the method and URL again.
            quietResLogger: true,
            customSuccessObject: (req, _res, value: { res: unknown }) => short(req, value),
            customErrorObject: (req, _res, error: Error, value: { res: unknown; err?: unknown }) => short(req, withoutStatusError(error, value)),
          }
        : { customErrorObject: (_req, _res, error: Error, value: { err?: unknown }) => withoutStatusError(error, value) }),
    },
  };
}
