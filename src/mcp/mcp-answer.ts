import { Response } from 'express';
import { RateLimitedError } from '../common/errors';
import { failure, JsonRpcResponse, TOO_MANY_REQUESTS } from './json-rpc';

export interface McpAnswer {
  /** HTTP status; 202 with no body when every message was a notification or response. */
  status: number;
  body?: JsonRpcResponse | JsonRpcResponse[];
  /** Headers the answer must carry (WWW-Authenticate on a 401, Retry-After on a 429). */
  headers?: Record<string, string>;
}

/** A request refused by a per-key limit: 429, Retry-After, one JSON-RPC -32000 error. */
export function rateLimitedAnswer(error: RateLimitedError): McpAnswer {
  return { status: 429, headers: { 'Retry-After': String(error.retryAfterSeconds) }, body: failure(null, TOO_MANY_REQUESTS, error.message) };
}

/**
 * Writes the answer itself rather than through Express's res.json: an answer to a POST is never
 * revalidated, so the ETag res.json hashes the body for, and the charset it parses back out of the
 * Content-Type, were spent on every call for nothing.
 */
export function sendAnswer(res: Response, answer: McpAnswer): void {
  if (answer.headers) res.set(answer.headers);
  res.status(answer.status);
  if (answer.body === undefined) {
    res.end();
    return;
  }
  const body = Buffer.from(JSON.stringify(answer.body), 'utf8');
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}
