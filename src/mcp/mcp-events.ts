import { Caller } from '../auth/caller';
import { FeedRefusal, FeedRefusalKind } from '../event-feed/event-feed.errors';
import { EventFeedService, PollRequest } from '../event-feed/event-feed.service';
import { INVALID_PARAMS, JsonRpcError } from './json-rpc';

/** The MCP Events extension's identifier (capabilities.extensions) in revision 2026-07-28's naming. */
export const EVENTS_EXTENSION = 'io.modelcontextprotocol/events';

/**
 * How the server advertises MCP Events, in both places clients read it: the draft's top-level
 * `events` capability and the 2026-07-28 `extensions` map. No `listChanged`: the catalog changes
 * only with the service.
 */
export const EVENTS_CAPABILITIES = {
  events: { listChanged: false },
  extensions: { [EVENTS_EXTENSION]: { listChanged: false } },
};

/**
 * The draft's error codes (design sketch, "Error Codes"); the message is the draft's name, the
 * refusal's own words go in `data.detail` beside its typed data. -32015 (CallbackEndpointError)
 * is webhook mode's (events/subscribe, mcp-event-subscriptions.ts).
 */
const CODES: Record<FeedRefusalKind, { code: number; name: string }> = {
  invalid: { code: INVALID_PARAMS, name: 'InvalidParams' },
  not_found: { code: -32011, name: 'NotFound' },
  forbidden: { code: -32012, name: 'Forbidden' },
  exhausted: { code: -32013, name: 'ResourceExhausted' },
  unsupported: { code: -32014, name: 'Unsupported' },
  callback: { code: -32015, name: 'CallbackEndpointError' },
};

/** A feed refusal as the draft's JSON-RPC error; anything else as it is. */
export function asEventsError(error: unknown): unknown {
  return error instanceof FeedRefusal ? rpcErrorOf(error) : error;
}

/** events/list and events/poll in either protocol era: the feed's answer, or its refusal as the draft's JSON-RPC error. */
export async function answerEvents(
  feed: EventFeedService,
  method: 'events/list' | 'events/poll',
  params: unknown,
  caller: Caller,
  hangUp?: AbortSignal,
): Promise<object> {
  try {
    if (method === 'events/list') return feed.list();
    const request = (typeof params === 'object' && params !== null && !Array.isArray(params) ? params : {}) as PollRequest;
    return await feed.poll(caller, request, { signal: hangUp });
  } catch (error) {
    throw asEventsError(error);
  }
}

/** A refusal of the feed as the draft's JSON-RPC error (events/stream's `terminated` carries it too). */
export function rpcErrorOf(refusal: FeedRefusal): JsonRpcError {
  const { code, name } = CODES[refusal.kind];
  return new JsonRpcError(code, `${name}: ${refusal.message}`, { ...refusal.data, detail: refusal.message });
}
