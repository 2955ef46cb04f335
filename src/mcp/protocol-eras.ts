import { HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, JsonRpcRequest, UNSUPPORTED_PROTOCOL_VERSION } from './json-rpc';

/**
 * The MCP revisions the endpoint serves (docs/mcp.md, "Protocol revisions"), newest first, in the
 * two eras revision 2026-07-28 names: **modern** revisions carry the version, the client's
 * capabilities and its identity in every request's `_meta` (no handshake, no session); **legacy**
 * revisions open with `initialize`. One URL serves both, chosen per request ("dual-era").
 */
export const MODERN_PROTOCOL_VERSIONS = ['2026-07-28'] as const;
export const LEGACY_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
/**
 * Every revision a client may use here, newest first: what `server/discover` lists and what an
 * UnsupportedProtocolVersion error's `data.supported` says. The legacy ones are listed too: they
 * are served at this URL (through `initialize`), and a client refused for its version must choose
 * from this list rather than fall back on its own (revision 2026-07-28, "Versioning").
 */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [...MODERN_PROTOCOL_VERSIONS, ...LEGACY_PROTOCOL_VERSIONS];
/** What `initialize` answers a client that asks for a revision it does not know. */
export const LATEST_LEGACY_VERSION = LEGACY_PROTOCOL_VERSIONS[0];

/** The reserved `_meta` keys of revision 2026-07-28 ("General fields: _meta"). */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** The syslog levels of the Logging utility: the values `io.modelcontextprotocol/logLevel` may take. */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;

/** The Streamable HTTP headers that mirror the body (revision 2026-07-28, "Request Metadata"), as received. */
export interface McpHeaders {
  protocolVersion?: string;
  method?: string;
  name?: string;
}

/** Reads the mirrored headers off a request's headers (Node lower-cases their names; repeated ones arrive joined with ", "). */
export function mcpHeadersOf(headers: Record<string, string | string[] | undefined>): McpHeaders {
  const one = (name: string): string | undefined => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  return { protocolVersion: one('mcp-protocol-version'), method: one('mcp-method'), name: one('mcp-name') };
}

/**
 * A request refused before it is dispatched, as the transport page says: its HTTP status (400, or
 * 404 for a method the modern era does not have) and its JSON-RPC error.
 */
export class ProtocolRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export type Era = { era: 'legacy' } | { era: 'modern'; version: string };

/** What a modern request told the server about itself, beside its method and params. */
export interface ModernContext {
  version: string;
  clientInfo?: { name: string; version: string };
  /** The lowest log level the client wants for this request; the service sends no log notifications (docs/mcp.md). */
  logLevel?: (typeof LOG_LEVELS)[number];
}

/** Methods whose `Mcp-Name` header mirrors `params.name` (or `params.uri` for resources/read). */
const NAMED_METHODS: Record<string, 'name' | 'uri'> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

/**
 * The era of one message, chosen per request (revision 2026-07-28, "Backward Compatibility"): the
 * version the body's `_meta` claims, else the `MCP-Protocol-Version` header's. No version at all is
 * the legacy era (a client older than 2025-06-18 sends no header; `initialize` has no envelope); a
 * legacy version is the legacy era too, envelope or not, and is served without a session as every
 * legacy request here is. A modern version is the modern era, whose envelope and headers
 * checkModern then judges. Any other version is refused: UnsupportedProtocolVersion, 400.
 *
 * A header that names another version than the body's `_meta` does not mirror it: HeaderMismatch,
 * 400 ("Protocol Version Header": the header MUST match `_meta`; "Server Validation"), in either
 * era, and before the body's version is judged: the request disagrees with itself, and which of its
 * two versions is "the requested one" cannot be told (the official conformance suite's
 * sep-2575-http-server-header-mismatch-400 expects -32020 there, not -32022). Above all a
 * 2026-07-28 header over a body that claims a legacy revision: an intermediary trusts such a header
 * as checked against the body (its Mcp-Method, its Mcp-Name), and the legacy era checks none of them.
 */
export function eraOf(message: unknown, headers: McpHeaders): Era {
  const meta = metaOf(message);
  const claimed: unknown = meta !== undefined && META.protocolVersion in meta ? meta[META.protocolVersion] : headers.protocolVersion;
  if (claimed === undefined) return { era: 'legacy' };
  if (typeof claimed !== 'string') return { era: 'modern', version: '' }; // a malformed envelope: checkModern names it
  const header = headers.protocolVersion;
  if (header !== undefined && header !== claimed && isModern(header)) throw versionMismatch(header, claimed);
  if (isModern(claimed)) return { era: 'modern', version: claimed };
  if ((LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(claimed)) {
    if (header !== undefined && header !== claimed) throw versionMismatch(header, claimed);
    return { era: 'legacy' };
  }
  throw unsupported(claimed);
}

/** Whether any message of a batch claims the modern era (a batch is a legacy form: 2026-07-28 takes one message per POST). */
export function claimsModern(messages: unknown[], headers: McpHeaders): boolean {
  return isModern(headers.protocolVersion) || messages.some((message) => isModern(metaOf(message)?.[META.protocolVersion]));
}

function isModern(version: unknown): boolean {
  return typeof version === 'string' && (MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(version);
}

/** The refusal of a version the server does not speak, listing what it does. */
export function unsupported(requested: string): ProtocolRefusal {
  const shown = requested.length > 40 ? `${requested.slice(0, 40)}…` : requested;
  return new ProtocolRefusal(
    400,
    UNSUPPORTED_PROTOCOL_VERSION,
    `Unsupported protocol version ${JSON.stringify(shown)}: this server speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')} ` +
      `(${MODERN_PROTOCOL_VERSIONS.join(', ')} with per-request _meta; the others through initialize)`,
    { supported: SUPPORTED_PROTOCOL_VERSIONS, requested },
  );
}

/**
 * Checks a modern request before it is dispatched, in this order: the envelope (`_meta`'s required
 * protocolVersion and clientCapabilities, and clientInfo and logLevel when given: -32602, 400),
 * then the headers that mirror the body (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for
 * tools/call, prompts/get and resources/read, in plain or Base64-sentinel form: HeaderMismatch
 * -32020, 400). Header names are matched case-insensitively (Node lower-cases them), values exactly.
 */
export function checkModern(request: JsonRpcRequest, version: string, headers: McpHeaders): ModernContext {
  const context = envelopeOf(request, version);
  const header = (name: string, value: string | undefined, requiredOn = `every ${version} request`): string => {
    if (value === undefined) throw mismatch(`the ${name} header is required on ${requiredOn}`);
    if (!HEADER_TEXT.test(value)) throw mismatch(`the ${name} header contains characters a header value may not hold`);
    return value;
  };
  const headerVersion = header('MCP-Protocol-Version', headers.protocolVersion);
  if (headerVersion !== version) throw versionMismatch(headerVersion, version);
  const method = header('Mcp-Method', headers.method);
  if (method !== request.method) throw methodMismatch(method, request.method);
  const field = NAMED_METHODS[request.method];
  const body = field === undefined ? undefined : (request.params as Record<string, unknown> | undefined)?.[field];
  // A body without the name is the method's own -32602 (params.name must be a string), unless a header names one.
  if (field !== undefined && (typeof body === 'string' || headers.name !== undefined)) {
    const raw = header('Mcp-Name', headers.name, `every ${version} ${request.method} request`);
    const name = decodeHeaderValue(raw);
    if (name === null) throw mismatch('the Mcp-Name header is not valid: a =?base64?...?= value must hold Base64 of UTF-8 text');
    if (name !== body) {
      const bodyText = typeof body === 'string' ? quote(body) : `(${body === undefined ? 'absent' : typeof body})`;
      throw mismatch(`the Mcp-Name header ${quote(name)} does not match the body's params.${field} ${bodyText}`);
    }
  }
  return context;
}

/**
 * Checks the headers of a modern notification: the revision requires none of them on a notification
 * POST, but one that is sent must mirror the body as on a request (MCP-Protocol-Version, Mcp-Method).
 */
export function checkModernNotification(method: string, version: string, headers: McpHeaders): void {
  if (headers.protocolVersion !== undefined && headers.protocolVersion !== version) throw versionMismatch(headers.protocolVersion, version);
  if (headers.method !== undefined && headers.method !== method) throw methodMismatch(headers.method, method);
}

/** Visible ASCII, space and tab (RFC 9110 field values as the transport page allows them unencoded). */
const HEADER_TEXT = /^[\t\x20-\x7e]*$/;
const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;

/**
 * A header value as the transport page encodes it: plain visible ASCII, or `=?base64?…?=` holding
 * Base64 of the UTF-8 text (for values that are not plain ASCII). Null when the sentinel form is
 * not valid Base64 of valid UTF-8.
 */
export function decodeHeaderValue(value: string): string | null {
  if (!value.startsWith('=?base64?')) return value;
  const match = SENTINEL.exec(value);
  if (!match || match[1].replace(/=+$/, '').length % 4 === 1) return null;
  const bytes = Buffer.from(match[1], 'base64');
  if (bytes.toString('base64').replace(/=+$/, '') !== match[1].replace(/=+$/, '')) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

function envelopeOf(request: JsonRpcRequest, version: string): ModernContext {
  const where = `params._meta`;
  const meta = metaOf(request);
  if (meta === undefined) {
    throw invalidEnvelope(
      `${where} is required in ${version || 'a modern revision'}: it carries ${META.protocolVersion} and ${META.clientCapabilities} on every request`,
    );
  }
  if (typeof meta[META.protocolVersion] !== 'string') {
    throw invalidEnvelope(`${where}["${META.protocolVersion}"] is required and must be a string such as ${JSON.stringify(MODERN_PROTOCOL_VERSIONS[0])}`);
  }
  const capabilities = meta[META.clientCapabilities];
  if (!isObject(capabilities)) {
    throw invalidEnvelope(`${where}["${META.clientCapabilities}"] is required and must be an object ({} for a client that declares none)`);
  }
  const context: ModernContext = { version };
  const info = meta[META.clientInfo];
  if (info !== undefined) {
    if (!isObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string') {
      throw invalidEnvelope(`${where}["${META.clientInfo}"] must be an object with a string name and a string version`);
    }
    context.clientInfo = { name: info.name, version: info.version };
  }
  const level = meta[META.logLevel];
  if (level !== undefined) {
    if (!(LOG_LEVELS as readonly unknown[]).includes(level)) throw invalidEnvelope(`${where}["${META.logLevel}"] must be one of ${LOG_LEVELS.join(', ')}`);
    context.logLevel = level as ModernContext['logLevel'];
  }
  return context;
}

/** A message's `params._meta`, when it is an object. */
export function metaOf(message: unknown): Record<string, unknown> | undefined {
  if (!isObject(message) || !isObject(message.params)) return undefined;
  const meta = message.params._meta;
  return isObject(meta) ? meta : undefined;
}

function invalidEnvelope(message: string): ProtocolRefusal {
  return new ProtocolRefusal(400, INVALID_PARAMS, `Invalid params: ${message}`);
}

function mismatch(message: string): ProtocolRefusal {
  return new ProtocolRefusal(400, HEADER_MISMATCH, `Header mismatch: ${message}`);
}

function versionMismatch(header: string, body: string): ProtocolRefusal {
  return mismatch(`the MCP-Protocol-Version header ${quote(header)} does not match _meta ${META.protocolVersion} ${quote(body)}`);
}

function methodMismatch(header: string, body: string): ProtocolRefusal {
  return mismatch(`the Mcp-Method header ${quote(header)} does not match the body's method ${quote(body)}`);
}

/** A refusal of a batch that claims the modern era. */
export function modernBatch(): ProtocolRefusal {
  return new ProtocolRefusal(
    400,
    INVALID_REQUEST,
    `a ${MODERN_PROTOCOL_VERSIONS[0]} POST carries one JSON-RPC message; batches belong to 2025-03-26 and are served only without a modern version`,
  );
}

function quote(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
