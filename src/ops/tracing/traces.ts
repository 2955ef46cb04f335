import {
  Attributes,
  context,
  Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  Link,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * The service's spans (docs/operations.md, "Tracing"). One trace follows an inbound message or
 * a tool call into the outbox, and from there to each delivery attempt: the W3C `traceparent`
 * of the span that published an event is stored with it (outbox_events.trace_parent), the
 * relay's span for the event is stored with each delivery it fans out to
 * (webhook_deliveries.trace_parent), and every attempt of that delivery, a retry hours later
 * included, is a child of it.
 *
 * Off (the default), every function here answers at once: no span, no context lookup, and null
 * for a trace parent, so nothing is stored either. Spans carry ids, counts and outcomes; never
 * a URL, an address, a body or a secret.
 */

const TRACER = 'messaging-sync';
const w3c = new W3CTraceContextPropagator();
let enabled = false;

/** Called once the OpenTelemetry SDK has started (start-tracing.ts). */
export function enableTraces(): void {
  enabled = true;
}

export function tracesEnabled(): boolean {
  return enabled;
}

/** The active span as a W3C traceparent, to store with what it caused; null when off or outside a span. */
export function activeTraceParent(): string | null {
  if (!enabled) return null;
  const span = trace.getActiveSpan();
  return span ? traceParentOf(span) : null;
}

export function traceParentOf(span: Span): string | null {
  const carrier: Record<string, string> = {};
  w3c.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
  return carrier.traceparent ?? null;
}

/** The context of a stored (or received) traceparent (and tracestate); undefined when it is not a valid one. */
function contextOf(traceParent: string, traceState?: string): Context | undefined {
  const carrier: Record<string, string> = { traceparent: traceParent };
  if (traceState !== undefined) carrier.tracestate = traceState;
  const extracted = w3c.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  return trace.getSpanContext(extracted) ? extracted : undefined;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** Spans this one relates to without being their child (an untrusted caller's traceparent). */
  links?: Link[];
}

/**
 * Runs `fn` in a new span, a child of the active one (a root without one); records an error and
 * ends the span when `fn` settles. Off: `fn(undefined)`.
 */
export function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!enabled) return fn(undefined);
  return run(trace.getTracer(TRACER).startSpan(name, options), context.active(), fn);
}

/**
 * Runs `fn` in a new span, a child of a stored traceparent: what an event or a delivery carries
 * into a later process. No traceparent (tracing was off when it was stored), or off: `fn(undefined)`.
 */
export function inStoredTrace<T>(traceParent: string | null, name: string, options: SpanOptions, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  const span = startStoredSpan(traceParent, name, options);
  return span ? run(span, context.active(), fn) : fn(undefined);
}

/** Starts a span (a child of the active one) for the caller to end and to run code in (`within`); undefined when off. */
export function startSpan(name: string, options: SpanOptions): Span | undefined {
  return enabled ? trace.getTracer(TRACER).startSpan(name, options) : undefined;
}

/**
 * Runs `fn` in a new span that continues a caller's own trace: the W3C `traceparent` (and
 * `tracestate`) an MCP request carries in `params._meta` (the MCP specification's trace context
 * convention). The span is a child of the caller's span, so the call and everything it causes
 * (events, deliveries) are in the caller's trace; the sampling decision stays the service's (the
 * flags are those of the active span, the request's server span, which is linked). Without a valid
 * traceparent it is `inSpan`. Off: `fn(undefined)`.
 */
export function inCallerTrace<T>(
  caller: { traceParent?: unknown; traceState?: unknown },
  name: string,
  options: SpanOptions,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!enabled) return fn(undefined);
  const traceState = typeof caller.traceState === 'string' ? caller.traceState : undefined;
  const remote = typeof caller.traceParent === 'string' ? contextOf(caller.traceParent, traceState) : undefined;
  const remoteSpan = remote && trace.getSpanContext(remote);
  if (!remoteSpan) return inSpan(name, options, fn);
  const active = trace.getActiveSpan();
  const parent = trace.setSpanContext(context.active(), {
    ...remoteSpan,
    traceFlags: active ? active.spanContext().traceFlags : remoteSpan.traceFlags,
    isRemote: true,
  });
  const links = [...(options.links ?? []), ...(active ? [{ context: active.spanContext() }] : [])];
  return run(trace.getTracer(TRACER).startSpan(name, { ...options, links }, parent), parent, fn);
}

/** Runs `fn` with the span active, so what it starts (and awaits) is the span's child. */
export function within<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Starts a child span of a stored traceparent, for the caller to end; undefined when off or there is none. */
export function startStoredSpan(traceParent: string | null, name: string, options: SpanOptions): Span | undefined {
  if (!enabled || !traceParent) return undefined;
  const parent = contextOf(traceParent);
  return parent ? trace.getTracer(TRACER).startSpan(name, options, parent) : undefined;
}

/** A link to a caller's traceparent header (never its parent: a caller must not steer our sampling); none when off or invalid. */
export function linkTo(traceParent: string | undefined): Link[] {
  if (!enabled || !traceParent) return [];
  const remote = trace.getSpanContext(contextOf(traceParent) ?? ROOT_CONTEXT);
  return remote ? [{ context: remote }] : [];
}

/** Marks the span failed with the error's message (and kind), without ending it. */
export function recordFailure(span: Span | undefined, error: unknown): void {
  if (!span) return;
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

async function run<T>(span: Span, parent: Context, fn: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

export { SpanKind, SpanStatusCode };
export type { Span };
