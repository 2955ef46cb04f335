import request from 'supertest';
import { TestApp } from './app';
import { checkedEvents, mcpPost } from './mcp';

/**
 * MCP revision 2026-07-28 on the wire, spelled out as a client sends it (the test's own copy of
 * the keys and rules, not the service's): every request carries its version, capabilities and
 * identity in `params._meta`, and the Streamable HTTP headers mirror the body.
 */
export const MODERN = '2026-07-28';
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];
export const SUPPORTED_VERSIONS = [MODERN, ...LEGACY_VERSIONS];

export const PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
export const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/** What the service says it is, in every modern result's `_meta`. */
export const SERVER_IDENTITY = { name: 'messaging-sync', title: 'Messaging Sync', version: '0.1.0' };

/** The per-request envelope of a conforming client; `over` replaces or adds keys (undefined leaves one out). */
export function envelope(over: Record<string, unknown> = {}): Record<string, unknown> {
  const meta: Record<string, unknown> = {
    [PROTOCOL_VERSION]: MODERN,
    [CLIENT_CAPABILITIES]: {},
    [CLIENT_INFO]: { name: 'raw-e2e', version: '1.0.0' },
    ...over,
  };
  for (const key of Object.keys(meta)) if (meta[key] === undefined) delete meta[key];
  return meta;
}

let nextId = 1;

export interface ModernOptions {
  /** The request id (a fresh number unless told); `null` sends a notification (no id). */
  id?: string | number | null;
  /** The `_meta` to send (the conforming envelope unless told); `null` sends none. */
  meta?: Record<string, unknown> | null;
  /** Headers over the mirrored ones; `undefined` leaves one out, an array sends the header once per value. */
  headers?: Record<string, string | string[] | undefined>;
}

/** The JSON-RPC message of a 2026-07-28 request: `params` with the envelope in `_meta`. */
export function modernMessage(method: string, params: Record<string, unknown> = {}, options: ModernOptions = {}): Record<string, unknown> {
  const id = options.id === undefined ? nextId++ : options.id;
  const meta = options.meta === undefined ? envelope() : options.meta;
  const body: Record<string, unknown> = { jsonrpc: '2.0', method, params: meta === null ? params : { ...params, _meta: meta } };
  if (id !== null) body.id = id;
  return body;
}

/**
 * The headers a conforming client derives from a body: MCP-Protocol-Version from `_meta`,
 * Mcp-Method from `method`, Mcp-Name from `params.name` on tools/call (Base64-sentinel form when it is
 * not plain visible ASCII).
 */
export function mirroredHeaders(body: Record<string, any>): Record<string, string> {
  const headers: Record<string, string> = { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': String(body.method) };
  const name = body.method === 'tools/call' ? body.params?.name : undefined;
  if (typeof name === 'string') headers['Mcp-Name'] = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(name) ? name : base64Sentinel(name);
  return headers;
}

/** A header value in the transport's Base64 sentinel form. */
export function base64Sentinel(value: string): string {
  return `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** POSTs `body` with the mirrored headers (`headers` over them) and the key. */
export function modernPost(t: TestApp, key: string, body: Record<string, any>, headers: ModernOptions['headers'] = {}): request.Test {
  const req = mcpPost(t, key);
  for (const [name, value] of Object.entries({ ...mirroredHeaders(body), ...headers })) if (value !== undefined) req.set(name, value as string);
  return req.send(body);
}

/** One 2026-07-28 request, as a conforming client sends it unless `options` says otherwise; the raw HTTP answer. */
export function modernRpc(t: TestApp, key: string, method: string, params: Record<string, unknown> = {}, options: ModernOptions = {}): request.Test {
  return checkedEvents(method, modernPost(t, key, modernMessage(method, params, options), options.headers));
}

/** A 2026-07-28 result without what the era adds to every result (`resultType`, the server's identity in `_meta`). */
export function withoutModernFields(result: Record<string, any>): Record<string, any> {
  const { resultType: _resultType, _meta, ...rest } = result;
  const { [SERVER_INFO]: _serverInfo, ...meta } = (_meta ?? {}) as Record<string, unknown>;
  return Object.keys(meta).length ? { ...rest, _meta: meta } : rest;
}
