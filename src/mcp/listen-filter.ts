import { INVALID_PARAMS, JsonRpcError } from './json-rpc';

/** The notification types a subscriptions/listen stream of this service can carry: the tool list is the only list it has. */
export interface HonoredFilter {
  toolsListChanged?: true;
}

const BOOLEAN_FIELDS = ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const;

/**
 * The part of a subscriptions/listen request's `notifications` filter this server honours
 * (revision 2026-07-28, "Subscriptions"): `toolsListChanged` when asked for; prompts, resources
 * and resource subscriptions are not served here, so they are left out of the acknowledgement.
 * The filter is required and each field must have its type: otherwise -32602, naming the field.
 */
export function listenFilterOf(params: unknown): HonoredFilter {
  const filter = typeof params === 'object' && params !== null && !Array.isArray(params) ? (params as Record<string, unknown>).notifications : undefined;
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
    throw new JsonRpcError(INVALID_PARAMS, 'Invalid params: params.notifications is required: an object such as {"toolsListChanged": true}');
  }
  const f = filter as Record<string, unknown>;
  for (const field of BOOLEAN_FIELDS) {
    if (f[field] !== undefined && typeof f[field] !== 'boolean')
      throw new JsonRpcError(INVALID_PARAMS, `Invalid params: params.notifications.${field} must be a boolean`);
  }
  const uris = f.resourceSubscriptions;
  if (uris !== undefined && !(Array.isArray(uris) && uris.every((uri) => typeof uri === 'string'))) {
    throw new JsonRpcError(INVALID_PARAMS, 'Invalid params: params.notifications.resourceSubscriptions must be a list of URIs (strings)');
  }
  return f.toolsListChanged === true ? { toolsListChanged: true } : {};
}
