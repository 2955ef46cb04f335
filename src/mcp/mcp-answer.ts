import { Response } from 'express';
import { RateLimitedError } from '../common/errors';
import { failure, JsonRpcId, JsonRpcResponse, TOO_MANY_REQUESTS } from './json-rpc';
import { HonoredFilter } from './listen-filter';
import type { AcceptedStream } from './mcp-event-streams';

export interface McpAnswer {
  /** HTTP status; 202 with no body when every message was a notification or response. */
  status: number;
  body?: JsonRpcResponse | JsonRpcResponse[];
  /** Headers the answer must carry (WWW-Authenticate on a 401, Retry-After on a 429). */
  headers?: Record<string, string>;
  /** A subscriptions/listen the service accepted: the answer is its stream (McpSubscriptions), not a body. */
  listen?: { id: JsonRpcId; honored: HonoredFilter };
  /** An events/stream whose checks passed: the answer is its stream (EventStreams), not a body. */
  eventStream?: AcceptedStream;
}

/** A request refused by a per-key limit: 429, Retry-After, one JSON-RPC -32000 error answering `id` (null when no one request's id is known). */
export function rateLimitedAnswer(error: RateLimitedError, id: JsonRpcId | null = null): McpAnswer {
  return { status: 429, headers: { 'Retry-After': String(error.retryAfterSeconds) }, body: failure(id, TOO_MANY_REQUESTS, error.message) };
}

/**
 * The JSON text of values whose text was already made: a tool's structuredContent, which
 * visibleResult serialized to check it (mcp.service.ts). A WeakMap, so the value itself stays a
 * plain object and the text goes with it.
 */
const alreadySerialized = new WeakMap<object, string>();

/** Marks `value` as having `json` as its JSON text (exactly JSON.stringify(value)); answers the value. */
export function serializedAs<T extends object>(value: T, json: string): T {
  alreadySerialized.set(value, json);
  return value;
}

/**
 * The answer's JSON text: JSON.stringify(body), except that a result's structuredContent whose
 * text is known (serializedAs) is written from that text instead of being serialized a second
 * time. A list_threads page is 20 KB of it, and serializing it again was a tenth of the call.
 */
export function answerText(body: JsonRpcResponse | JsonRpcResponse[]): string {
  return Array.isArray(body) ? `[${body.map(responseText).join(',')}]` : responseText(body);
}

function responseText(response: JsonRpcResponse): string {
  if (!('result' in response) || typeof response.result !== 'object' || response.result === null) return JSON.stringify(response);
  const { structuredContent, ...rest } = response.result as { structuredContent?: unknown };
  const known = typeof structuredContent === 'object' && structuredContent !== null ? alreadySerialized.get(structuredContent) : undefined;
  if (known === undefined) return JSON.stringify(response);
  const { result: _result, ...envelope } = response;
  return `${withMember(JSON.stringify(envelope), 'result', withMember(JSON.stringify(rest), 'structuredContent', known))}`;
}

/** The JSON text of an object (`objectText`) with one more member, `name`, whose value's text is `valueText`. */
function withMember(objectText: string, name: string, valueText: string): string {
  const member = `${JSON.stringify(name)}:${valueText}`;
  return objectText === '{}' ? `{${member}}` : `${objectText.slice(0, -1)},${member}}`;
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
  const body = Buffer.from(answerText(answer.body), 'utf8');
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}
