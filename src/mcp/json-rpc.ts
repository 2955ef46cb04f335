/** JSON-RPC 2.0 shapes and the standard error codes. */
export type JsonRpcId = string | number;

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/**
 * Server errors of this implementation (JSON-RPC reserves -32000 to -32099 for them). Each is only
 * ever sent as the whole answer of a request refused with an HTTP error status.
 */
export const TOO_MANY_REQUESTS = -32000;
export const UNAUTHORIZED = -32001;
/**
 * Errors the MCP specification defines (revision 2026-07-28 reserves -32020 to -32099 for them):
 * the HTTP headers disagree with the body, or are missing or malformed (`HeaderMismatch`), and a
 * protocol version the server does not speak (`UnsupportedProtocolVersion`, with
 * `data.supported` and `data.requested`).
 */
export const HEADER_MISMATCH = -32020;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id?: JsonRpcId;
  method: string;
  params?: unknown;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: object;
}

export interface JsonRpcFailure {
  jsonrpc: '2.0';
  /** null when the request's id could not be read (JSON-RPC 2.0); left out in the 2026-07-28 era, whose error responses have no null id. */
  id?: JsonRpcId | null;
  error: { code: number; message: string; data?: unknown };
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;

export class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** An error response; an `undefined` id is left out (a 2026-07-28 answer whose request had no readable id). */
export function failure(id: JsonRpcId | null | undefined, code: number, message: string, data?: unknown): JsonRpcFailure {
  const error = data === undefined ? { code, message } : { code, message, data };
  return id === undefined ? { jsonrpc: '2.0', error } : { jsonrpc: '2.0', id, error };
}

/** The id of a message, when it has a usable one (for answering even an invalid request). */
export function idOf(message: unknown): JsonRpcId | null {
  if (message && typeof message === 'object' && !Array.isArray(message)) {
    const id = (message as { id?: unknown }).id;
    if (typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))) return id;
  }
  return null;
}

/** Checks the JSON-RPC 2.0 request shape; throws INVALID_REQUEST naming what is wrong. */
export function asRequest(message: unknown): JsonRpcRequest {
  if (!message || typeof message !== 'object' || Array.isArray(message)) {
    throw new JsonRpcError(INVALID_REQUEST, 'a request must be a JSON object');
  }
  const m = message as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') throw new JsonRpcError(INVALID_REQUEST, 'jsonrpc must be "2.0"');
  if (typeof m.method !== 'string' || m.method.length === 0) throw new JsonRpcError(INVALID_REQUEST, 'method must be a non-empty string');
  if ('id' in m && !(typeof m.id === 'string' || (typeof m.id === 'number' && Number.isFinite(m.id)))) {
    throw new JsonRpcError(INVALID_REQUEST, 'id must be a string or a number');
  }
  if ('params' in m && (m.params === null || typeof m.params !== 'object')) {
    throw new JsonRpcError(INVALID_REQUEST, 'params must be an object or an array');
  }
  return m as unknown as JsonRpcRequest;
}
