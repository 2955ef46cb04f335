import { Principal } from '../identity/principal';
import { draftErrorOf, FeedRefusal } from '../event-feed/event-feed.errors';
import { EventFeedService, PollRequest } from '../event-feed/event-feed.service';
import { JsonRpcError } from './json-rpc';

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

/** A feed refusal as the draft's JSON-RPC error; anything else as it is. */
export function asEventsError(error: unknown): unknown {
  return error instanceof FeedRefusal ? rpcErrorOf(error) : error;
}

/** events/list and events/poll in either protocol era: the feed's answer, or its refusal as the draft's JSON-RPC error. */
export async function answerEvents(
  feed: EventFeedService,
  method: 'events/list' | 'events/poll',
  params: unknown,
  caller: Principal,
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
  const { code, message, data } = draftErrorOf(refusal);
  return new JsonRpcError(code, message, data);
}
