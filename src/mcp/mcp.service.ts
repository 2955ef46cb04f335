import { Inject, Injectable, Logger } from '@nestjs/common';
import { ApiKeysService } from '../auth/api-keys.service';
import { actingThrough, KeyPrincipal, Principal } from '../identity/principal';
import { DomainError, isDatabaseUnavailable, RateLimitedError } from '../common/errors';
import { bearerChallenge } from '../common/http-error.filter';
import { exceedsJsonDepth, JSON_TOO_DEEP_MESSAGE } from '../common/json-depth';
import { mapBounded } from '../common/map-bounded';
import { findIllFormed } from '../common/well-formed';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ApiKeyLimits, KeyTicket } from '../limits/api-key-limits.service';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import {
  asRequest,
  failure,
  idOf,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  JsonRpcError,
  JsonRpcId,
  JsonRpcRequest,
  JsonRpcResponse,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  UNAUTHORIZED,
} from './json-rpc';
import { McpAnswer, rateLimitedAnswer, serializedAs } from './mcp-answer';
import { describeArgumentError } from '../tools/tool-arguments';
import { describeResultError, refusal, ToolRegistry } from './tool-registry';
import { inCallerTrace, SpanKind, SpanStatusCode } from '../ops/tracing/traces';
import { visibleResult, visibleText } from './visible-text';
import {
  checkModern,
  checkModernNotification,
  claimsModern,
  eraOf,
  LATEST_LEGACY_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  McpHeaders,
  META,
  metaOf,
  modernBatch,
  ModernContext,
  ProtocolRefusal,
  SUPPORTED_PROTOCOL_VERSIONS,
} from './protocol-eras';
import { listenFilterOf } from './listen-filter';
import { EventFeedService } from '../event-feed/event-feed.service';
import { EventSubscriptionsService } from '../event-feed/event-subscriptions.service';
import { answerEventSubscriptions, SUBSCRIPTION_METHODS, SubscriptionMethod } from './mcp-event-subscriptions';
import { EventStreams } from '../event-feed/event-streams';
import { answerEvents, EVENTS_CAPABILITIES } from './mcp-events';
import { streamAnswer } from './mcp-event-streams';
import { actorOf, AuditCall, targetsOf } from '../audit/audit-call';
import { AuditTrail } from '../audit/audit-trail.service';
import { verdictOf } from '../audit/audit-verdict';

export const SERVER_INFO = { name: 'messaging-sync', title: 'Messaging Sync', version: '0.1.0' };

const INSTRUCTIONS =
  'Tools act on the SMS and email conversations of the user who owns the API key, limited to the lines the key may use. ' +
  'Register a webhook (register_webhook) to be woken by events instead of polling, or, without a URL, wait on ' +
  'events/poll or events/stream (MCP Events: events/list names the kinds); list_email_accounts and ' +
  'list_phone_numbers give the line ids a channelScope takes.';

/**
 * How long a client may keep a 2026-07-28 tools/list (`ttlMs`): the list changes only when the
 * credential's permissions or the person's role do, and a listening client hears of that at once
 * (notifications/tools/list_changed). `private`: the list depends on who asks (docs/mcp.md).
 */
export const TOOLS_LIST_TTL_MS = 5 * 60 * 1000;
/** How long a client may keep server/discover: it changes only when the service is upgraded. `public`: the same for every caller. */
export const DISCOVER_TTL_MS = 60 * 60 * 1000;

/** The methods either era answers; any other is labelled "other" in the metrics. */
const KNOWN_METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'server/discover',
  'subscriptions/listen',
  'events/list',
  'events/poll',
  ...SUBSCRIPTION_METHODS,
  'events/stream',
]);
/** Methods of the legacy era that revision 2026-07-28 removed, and what a modern client does instead. */
const REMOVED_IN_MODERN: Record<string, string> = {
  initialize: 'there is no handshake: every request carries its version and capabilities in params._meta; server/discover tells what this server speaks',
  ping: 'ping was removed; any request (server/discover, say) shows the server answers',
  'logging/setLevel': 'the log level is per request: params._meta["io.modelcontextprotocol/logLevel"]',
};

export interface CallToolResult {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: object;
  isError?: boolean;
}

/** Dispatches one request of its era to its result (JsonRpcError for a protocol fault). */
type Dispatch = (request: JsonRpcRequest, caller: Principal) => Promise<object>;

/** JSON-RPC 2.0 / MCP over one stateless POST: parses, dispatches, and shapes every answer. */
@Injectable()
export class McpService {
  private readonly logger = new Logger(McpService.name);

  private readonly maxBatch: number;
  private readonly batchConcurrency: number;
  private readonly checkResults: boolean;

  constructor(
    private readonly tools: ToolRegistry,
    private readonly apiKeys: ApiKeysService,
    private readonly limits: ApiKeyLimits,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly metrics: ServiceMetrics,
    private readonly events: EventFeedService,
    private readonly subscriptions: EventSubscriptionsService,
    private readonly streams: EventStreams,
    private readonly audit: AuditTrail,
  ) {
    this.maxBatch = config.mcp.maxBatch;
    this.batchConcurrency = config.mcp.batchConcurrency;
    this.checkResults = config.mcp.checkResults;
  }

  /**
   * Answers one POST, of either era (docs/mcp.md, "Protocol revisions"): the body's `_meta`, else
   * the MCP-Protocol-Version header, says which. `ticket` holds the request's running-calls slot
   * (McpAdmissionMiddleware took it); a legacy batch widens it to run up to MCP_BATCH_CONCURRENCY
   * messages at once. A modern subscriptions/listen is answered with `listen` set: the controller
   * turns the response into its stream (McpSubscriptions). `hangUp` aborts when the client is gone:
   * a waiting events/poll stops waiting.
   */
  async handle(raw: Buffer, caller: KeyPrincipal, ticket: KeyTicket, headers: McpHeaders = {}, hangUp?: AbortSignal): Promise<McpAnswer> {
    if (exceedsJsonDepth(raw)) return { status: 400, body: failure(null, PARSE_ERROR, `Parse error: ${JSON_TOO_DEEP_MESSAGE}`) };
    let payload: unknown;
    try {
      payload = JSON.parse(raw.toString('utf8'));
    } catch {
      return { status: 400, body: failure(null, PARSE_ERROR, 'Parse error: the body is not valid JSON') };
    }
    try {
      if (Array.isArray(payload)) {
        // No one id answers a batch, and a 2026-07-28 error response has none rather than a null one.
        if (claimsModern(payload, headers)) return refusalAnswer(modernBatch(), undefined);
        if (headers.protocolVersion !== undefined) eraOf(undefined, headers); // an unknown header version is refused as for one message
        return await this.legacyBatch(payload, caller, ticket);
      }
      const era = eraOf(payload, headers);
      if (era.era === 'modern') return (await this.spend(caller, 1)) ?? (await this.runModern(payload, caller, era.version, headers, hangUp));
      return (await this.spend(caller, 1)) ?? (await this.runOne(payload, caller, hangUp));
    } catch (error) {
      if (error instanceof ProtocolRefusal) return refusalAnswer(error, idOf(payload));
      throw error;
    }
  }

  private async legacyBatch(payload: unknown[], caller: KeyPrincipal, ticket: KeyTicket): Promise<McpAnswer> {
    if (payload.length === 0) return { status: 400, body: failure(null, INVALID_REQUEST, 'an empty batch is not a valid request') };
    if (payload.length > this.maxBatch) {
      const message = `a batch may hold at most ${this.maxBatch} messages (MCP_MAX_BATCH); this one holds ${payload.length}, and none of them ran`;
      return { status: 400, body: failure(null, INVALID_REQUEST, message) };
    }
    return (await this.spend(caller, payload.length)) ?? this.runBatch(payload, caller, ticket.widen(this.batchConcurrency));
  }

  /** Every message counts as a call against the key's rate limit; the 429 answer when they do not fit. */
  private async spend(caller: KeyPrincipal, calls: number): Promise<McpAnswer | undefined> {
    try {
      await this.limits.spend(caller.keyId, calls, actingThrough(caller));
      return undefined;
    } catch (error) {
      if (error instanceof RateLimitedError) return rateLimitedAnswer(error);
      throw error;
    }
  }

  private async runOne(message: unknown, caller: Principal, hangUp?: AbortSignal): Promise<McpAnswer> {
    if (isStreamRequest(message)) return streamAnswer(this.streams, message.id, message.params, caller, 'legacy');
    const response = await this.answer(message, caller, hangUp);
    if (!response) return { status: 202 };
    const invalid = 'error' in response && response.error.code === INVALID_REQUEST;
    return { status: invalid ? 400 : 200, body: response };
  }

  /**
   * One request of the modern era (revision 2026-07-28): one message per POST, checked before it is
   * dispatched (checkModern: envelope, then headers; 400 on either), answered with `resultType` and
   * the server's identity in `_meta`; a method this era does not have is 404. A notification is
   * accepted (202) as the transport page says, once the headers it sends mirror it (the revision
   * requires none on a notification). An error whose request has no readable id has no id.
   */
  private async runModern(message: unknown, caller: Principal, version: string, headers: McpHeaders, hangUp?: AbortSignal): Promise<McpAnswer> {
    if (isClientResponse(message)) return { status: 202 };
    let request: JsonRpcRequest;
    try {
      request = asRequest(message);
    } catch (error) {
      return { status: 400, body: failure(idOf(message) ?? undefined, INVALID_REQUEST, (error as Error).message) };
    }
    const id = request.id;
    let context: ModernContext;
    try {
      if (id === undefined) {
        checkModernNotification(request.method, version, headers);
        return { status: 202 };
      }
      context = checkModern(request, version, headers);
    } catch (error) {
      if (!(error instanceof ProtocolRefusal)) throw error;
      return refusalAnswer(error, id);
    }
    if (request.method === 'subscriptions/listen') {
      try {
        return { status: 200, listen: { id, honored: listenFilterOf(request.params) } };
      } catch (error) {
        if (error instanceof JsonRpcError) return { status: 200, body: failure(id, error.code, error.message, error.data) };
        throw error;
      }
    }
    if (request.method === 'events/stream') return streamAnswer(this.streams, id, request.params, caller, 'modern');
    const response = await this.traced(request, id, caller, (r, c) => this.dispatchModern(r, c, context, hangUp));
    if ('error' in response) return { status: response.error.code === METHOD_NOT_FOUND ? 404 : 200, body: response };
    return { status: 200, body: { ...response, result: modernResult(response.result) } };
  }

  /**
   * A few messages at a time, so one batch never takes more than its share of the database pool.
   * The key is checked again before each message: once it is revoked, nothing more runs.
   */
  private async runBatch(messages: unknown[], caller: KeyPrincipal, concurrency: number): Promise<McpAnswer> {
    const run = await mapBounded(
      messages,
      concurrency,
      (message) => this.answer(message, caller),
      () => this.apiKeys.isActive(caller.keyId),
    );
    if (run.stopped) {
      const what = actingThrough(caller) === 'this app' ? "the app's access was revoked" : 'the API key was revoked';
      const message = `${what} while this batch ran: ${run.ran} of its ${messages.length} messages had started, the others did not run`;
      return { status: 401, headers: { 'WWW-Authenticate': bearerChallenge(true) }, body: failure(null, UNAUTHORIZED, message) };
    }
    const responses = run.results.filter((a): a is JsonRpcResponse => a !== undefined);
    return responses.length ? { status: 200, body: responses } : { status: 202 };
  }

  /** Answers one message of the legacy era; undefined for notifications and for responses sent to us. */
  private async answer(message: unknown, caller: Principal, hangUp?: AbortSignal): Promise<JsonRpcResponse | undefined> {
    if (isClientResponse(message)) return undefined;
    let request: JsonRpcRequest;
    try {
      request = asRequest(message);
    } catch (error) {
      return failure(idOf(message), INVALID_REQUEST, (error as Error).message);
    }
    const id = request.id;
    if (id === undefined) return undefined; // a notification: nothing to answer
    return this.traced(request, id, caller, (r, c) => this.dispatch(r, c, hangUp));
  }

  /**
   * Answers a request in its span (a child of the caller's trace when `params._meta` carries a
   * W3C traceparent, in either era) and counts it in the metrics.
   */
  private traced(request: JsonRpcRequest, id: JsonRpcId, caller: Principal, dispatch: Dispatch): Promise<JsonRpcResponse> {
    const { method, tool } = this.namesOf(request);
    const attributes = { 'mcp.method.name': method, ...(method === 'tools/call' ? { 'gen_ai.tool.name': tool } : {}) };
    const meta = metaOf(request);
    const trace = { traceParent: meta?.traceparent, traceState: meta?.tracestate };
    return inCallerTrace(trace, method === 'tools/call' ? `${method} ${tool}` : method, { kind: SpanKind.SERVER, attributes }, (span) =>
      this.answerRequest(request, id, caller, dispatch, (outcome, started) => {
        span?.setAttribute('mcp.outcome', outcome);
        if (outcome !== 'ok') span?.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
        this.metrics.mcpAnswered(method, tool, outcome, (performance.now() - started) / 1000);
      }),
    );
  }

  /** Answers a request; `record` gets its outcome (metrics, span) once known. */
  private async answerRequest(
    request: JsonRpcRequest,
    id: JsonRpcId,
    caller: Principal,
    dispatch: Dispatch,
    record: (outcome: 'ok' | 'tool_error' | 'rpc_error', started: number) => void,
  ): Promise<JsonRpcResponse> {
    const started = performance.now();
    const measured = (response: JsonRpcResponse): JsonRpcResponse => {
      record('error' in response ? 'rpc_error' : (response.result as Partial<CallToolResult>).isError ? 'tool_error' : 'ok', started);
      return response;
    };
    try {
      return measured({ jsonrpc: '2.0', id, result: await dispatch(request, caller) });
    } catch (error) {
      if (error instanceof JsonRpcError) return measured(failure(id, error.code, error.message, error.data));
      // Not the request's fault and worth repeating: the HTTP error filter answers 503 with Retry-After.
      if (isDatabaseUnavailable(error)) {
        record('rpc_error', started);
        throw error;
      }
      this.logger.error(`${request.method} failed: ${error instanceof Error ? error.stack : String(error)}`);
      return measured(failure(id, INTERNAL_ERROR, 'Internal error'));
    }
  }

  /**
   * The method and tool a request is counted and traced under: known names only, so a caller
   * cannot mint metric labels or span names ("other" method, "unknown" tool, "-" for no tool).
   */
  private namesOf(request: JsonRpcRequest): { method: string; tool: string } {
    const method = KNOWN_METHODS.has(request.method) ? request.method : 'other';
    if (method !== 'tools/call') return { method, tool: '-' };
    const name = isObject(request.params) ? request.params.name : undefined;
    return { method, tool: typeof name === 'string' && this.tools.get(name) ? name : 'unknown' };
  }

  /** The legacy era's methods (2025-11-25 and earlier): the handshake, ping, and the tools. */
  private async dispatch(request: JsonRpcRequest, caller: Principal, hangUp?: AbortSignal): Promise<object> {
    switch (request.method) {
      case 'initialize':
        return this.initialize(request.params);
      case 'ping':
        return {};
      case 'tools/list':
        return { tools: this.tools.listFor(caller) };
      case 'tools/call':
        return this.callTool(request.params, caller);
      case 'events/list':
      case 'events/poll':
      case 'events/subscribe':
      case 'events/unsubscribe':
        return this.answerEventsMethod(request, caller, hangUp);
      case 'events/stream': // alone in its POST it is answered with its stream (runOne)
        throw new JsonRpcError(INVALID_REQUEST, 'events/stream opens a stream of its own: send it alone, not in a batch');
      default:
        throw new JsonRpcError(METHOD_NOT_FOUND, `Method not found: ${request.method}`);
    }
  }

  /** The MCP Events methods answered in one request, alike in both eras (events/stream is the controller's stream). */
  private answerEventsMethod(request: JsonRpcRequest, caller: Principal, hangUp?: AbortSignal): Promise<object> {
    if (request.method === 'events/list' || request.method === 'events/poll') return answerEvents(this.events, request.method, request.params, caller, hangUp);
    // events/subscribe and events/unsubscribe change a webhook subscription: audited like a write tool (src/audit).
    return this.audit.record(
      { ...actorOf(caller), action: request.method, surface: 'mcp', targets: targetsOf(request.params) },
      () => answerEventSubscriptions(this.subscriptions, request.method as SubscriptionMethod, request.params, caller),
      (ended) =>
        'result' in ended
          ? { outcome: 'ok', targets: targetsOf(ended.result) }
          : ended.error instanceof JsonRpcError
            ? { outcome: 'refused', errorCode: `JSONRPC_${ended.error.code}`, detail: null }
            : verdictOf(ended.error),
    );
  }

  /** The modern era's methods (2026-07-28): discovery and the tools; subscriptions/listen is the controller's stream. */
  private async dispatchModern(request: JsonRpcRequest, caller: Principal, context: ModernContext, hangUp?: AbortSignal): Promise<object> {
    switch (request.method) {
      case 'server/discover':
        return this.discover();
      case 'tools/list':
        return { tools: this.tools.listFor(caller), ttlMs: TOOLS_LIST_TTL_MS, cacheScope: 'private' };
      case 'tools/call':
        return this.callTool(request.params, caller);
      case 'events/list':
      case 'events/poll':
      case 'events/subscribe':
      case 'events/unsubscribe':
        return this.answerEventsMethod(request, caller, hangUp);
      default: {
        const instead = REMOVED_IN_MODERN[request.method];
        const why = instead ? `: ${request.method} is not part of ${context.version}; ${instead}` : '';
        throw new JsonRpcError(METHOD_NOT_FOUND, `Method not found: ${request.method}${why}`);
      }
    }
  }

  /** server/discover: every revision served here, what a modern client may subscribe to, and how to use the tools. */
  private discover(): object {
    return {
      supportedVersions: SUPPORTED_PROTOCOL_VERSIONS,
      capabilities: { tools: { listChanged: true }, ...EVENTS_CAPABILITIES },
      instructions: INSTRUCTIONS,
      ttlMs: DISCOVER_TTL_MS,
      cacheScope: 'public',
    };
  }

  private initialize(params: unknown): object {
    const requested = isObject(params) ? params.protocolVersion : undefined;
    if (typeof requested !== 'string') throw new JsonRpcError(INVALID_PARAMS, 'params.protocolVersion must be a string');
    const protocolVersion = (LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : LATEST_LEGACY_VERSION;
    return {
      protocolVersion,
      capabilities: { tools: { listChanged: false }, ...EVENTS_CAPABILITIES },
      serverInfo: SERVER_INFO,
      instructions: INSTRUCTIONS,
    };
  }

  private async callTool(params: unknown, caller: Principal): Promise<CallToolResult> {
    if (!isObject(params)) throw new JsonRpcError(INVALID_PARAMS, 'params must be an object with name and arguments');
    const { name } = params;
    if (typeof name !== 'string') throw new JsonRpcError(INVALID_PARAMS, 'params.name must be a string');
    const tool = this.tools.get(name);
    if (!tool) throw new JsonRpcError(INVALID_PARAMS, `Unknown tool: ${name}`);
    // Absent arguments mean none; null is not an object and is refused like any other non-object.
    const args = params.arguments === undefined ? {} : params.arguments;
    if (!isObject(args)) throw new JsonRpcError(INVALID_PARAMS, 'params.arguments must be an object');

    // A call of a tool that is not a read is audited, refusals included (src/audit); a read never is.
    const audit = tool.spec.kind === 'read' ? undefined : this.audit.open({ ...actorOf(caller), action: name, surface: 'mcp', targets: targetsOf(args) });
    // Before the arguments are looked at: a key that may not call the tool learns nothing more.
    const refused = refusal(tool, caller);
    if (refused) return this.refuse(audit, refused, 'FORBIDDEN', 'not permitted');
    // A JSON copy (args came from JSON): plain objects of this realm. structuredClone makes objects of
    // Node's own realm, which ajv's deep equality (uniqueItems on objects) never finds equal under Jest.
    const input = JSON.parse(JSON.stringify(args)) as Record<string, unknown>;
    const illFormed = findIllFormed(input); // U+0000 or a lone surrogate anywhere: refused, naming the argument
    if (illFormed) return this.refuse(audit, `invalid arguments: ${illFormed.message}`, 'VALIDATION', 'invalid arguments');
    if (!tool.validate(input))
      return this.refuse(audit, `invalid arguments: ${describeArgumentError(tool.validate.errors?.[0])}`, 'VALIDATION', 'invalid arguments');
    try {
      const executed = audit ? await this.audit.run(audit, () => tool.handler.execute(input, caller)) : await tool.handler.execute(input, caller);
      if (audit) await this.audit.finish(audit, { outcome: 'ok', targets: targetsOf(executed) });
      // Every string of every result goes to a model, so invisible characters are removed here, once, for all
      // tools (src/mcp/visible-text.ts): a list of fields per tool would miss the next field that holds outside
      // text (a filename, a delivery's response body). Only this answer changes; the stored data, webhooks
      // and the REST API keep the original. Strings the service mints (ids, cursors, URLs, secrets) are ASCII.
      const { json, value: result } = visibleResult(executed);
      if (this.checkResults && !tool.validateResult(result)) {
        // A tool whose result drifted from what tools/list promises: a defect, loud in development and tests.
        throw new JsonRpcError(
          INTERNAL_ERROR,
          `${name} returned a result that does not match its outputSchema: ${describeResultError(tool.validateResult.errors?.[0])}`,
        );
      }
      return {
        content: [{ type: 'text', text: tool.spec.withheldFromText ? textWithout(result, tool.spec.withheldFromText) : json }],
        structuredContent: serializedAs(result, json),
      };
    } catch (error) {
      if (audit?.open) await this.audit.finish(audit, verdictOf(error));
      if (error instanceof DomainError) return toolError(error.message);
      throw error;
    }
  }

  /** A tool error for a call refused before it ran, recorded when the tool is audited. */
  private async refuse(audit: AuditCall | undefined, message: string, errorCode: string, detail: string): Promise<CallToolResult> {
    if (audit) await this.audit.finish(audit, { outcome: 'refused', errorCode, detail });
    return toolError(message);
  }
}

/** The answer to a request refused before it ran: the refusal's HTTP status and JSON-RPC error, with `id` (left out when undefined). */
function refusalAnswer(refusal: ProtocolRefusal, id: JsonRpcId | null | undefined): McpAnswer {
  return { status: refusal.status, body: failure(id, refusal.code, refusal.message, refusal.data) };
}

/** The `_meta` of a modern result that brings none of its own (none does today): the server's identity, made once. */
const SERVER_META: Readonly<Record<string, unknown>> = Object.freeze({ [META.serverInfo]: SERVER_INFO });

/**
 * A modern era result: `resultType` (every result of this service is complete) and the server's
 * identity in `_meta`, after the result's own members, as `{ ...result, resultType, _meta }` would
 * give them. Copied with Object.assign and two assignments: that literal (a spread followed by new
 * members) took V8 about 1 µs a call, a quarter of what the modern era costs beyond the legacy one
 * (PERFORMANCE.md, "Protocol eras").
 */
function modernResult(result: object): object {
  const meta = (result as { _meta?: Record<string, unknown> })._meta;
  const modern = Object.assign({}, result) as Record<string, unknown>;
  modern.resultType = 'complete';
  modern._meta = meta === undefined ? SERVER_META : { ...meta, [META.serverInfo]: SERVER_INFO };
  return modern;
}

/** What the text block says in place of a field given only in structuredContent. */
const WITHHELD_TEXT = 'withheld from this text; read it from structuredContent';

/** The result as JSON text with `fields` replaced by WITHHELD_TEXT (ToolSpec.withheldFromText). */
function textWithout(result: object, fields: string[]): string {
  const shown: Record<string, unknown> = { ...result };
  for (const field of fields) if (field in shown) shown[field] = WITHHELD_TEXT;
  return JSON.stringify(shown);
}

/** A tool failure; its message may quote arguments or stored text, so it is made visible like a result. */
function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: visibleText(message) }], isError: true };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON-RPC response sent by the client (we never send requests, so it needs no answer). */
function isClientResponse(message: unknown): boolean {
  return isObject(message) && !('method' in message) && ('result' in message || 'error' in message) && message.jsonrpc === '2.0';
}

/** A legacy events/stream request (an id, the method): answered with its stream, not by dispatch. */
function isStreamRequest(message: unknown): message is { id: string | number; params?: unknown } {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return false;
  const m = message as Record<string, unknown>;
  return m.jsonrpc === '2.0' && m.method === 'events/stream' && (typeof m.id === 'string' || (typeof m.id === 'number' && Number.isFinite(m.id)));
}
