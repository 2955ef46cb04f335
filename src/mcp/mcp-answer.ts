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

export function sendAnswer(res: Response, answer: McpAnswer): void {
  if (answer.headers) res.set(answer.headers);
  if (answer.body === undefined) {
    res.status(answer.status).end();
    return;
  }
  res.status(answer.status).json(answer.body);
}
