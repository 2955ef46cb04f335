import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { feedPayloadSchema, PAYLOAD_MODES, JsonSchema, payloadSchema } from '../../src/event-catalog/event-schemas';
import { EVENT_KINDS, EventKind } from '../../src/events/event-kinds';
import { PayloadMode } from '../../src/webhooks/webhook.types';

/**
 * Validates webhook bodies against the event catalog, strictly: the published schemas let
 * receivers tolerate fields added later, but what the service emits must hold no field the
 * catalog does not document, so every object schema with `properties` gets
 * `unevaluatedProperties: false` here (maps such as labelConfidence keep their
 * `additionalProperties`). TestReceiver runs every delivery it receives through this, so a payload
 * that drifts from its schema fails the test that made it.
 */

const BASE = 'https://catalog.test';

/** A copy of `schema` where every object schema that lists its properties refuses any other. */
export function strict(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strict);
  if (!schema || typeof schema !== 'object') return schema;
  // Values of const and enum are data; `if` and `not` only test a condition, they do not describe the object's whole shape.
  const copy = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, AS_IS.has(key) ? value : strict(value)]));
  if ('properties' in copy && !('additionalProperties' in copy)) copy.unevaluatedProperties = false;
  return copy;
}
const AS_IS = new Set(['const', 'enum', 'examples', 'if', 'not']);

/** Strict about schema mistakes; `required` may name a property listed beside it (the emailHeaders `then`). */
export function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true, strict: true, strictRequired: false });
  addFormats(ajv);
  return ajv;
}

let validators: Map<string, ValidateFunction> | undefined;

/**
 * Compiles the twenty validators (about a second, more on a loaded machine). Receivers call it in
 * start(), before they listen, so no delivery waits on it (a sender's timeout would count that).
 */
export function loadEventSchemas(): Map<string, ValidateFunction> {
  if (!validators) {
    const ajv = newAjv();
    validators = new Map(EVENT_KINDS.flatMap((k) => PAYLOAD_MODES.map((m) => [`${k}:${m}`, ajv.compile(strict(payloadSchema(k, m, BASE)) as JsonSchema)])));
    feedValidatorOf(EVENT_KINDS[0]); // the feed's too: an MCP Events subscription's deliveries are checked on arrival as well
  }
  return validators;
}

function validatorOf(kind: EventKind, mode: PayloadMode): ValidateFunction {
  return loadEventSchemas().get(`${kind}:${mode}`)!;
}

export class EventSchemaError extends Error {}

function explain(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map((e) => `${e.instancePath || '/'} ${e.message}${e.keyword === 'unevaluatedProperties' ? ` (${String(e.params.unevaluatedProperty)})` : ''}`)
    .join('; ');
}

/** The envelope of a webhook body, after checking it against the schema of its own `type` and `mode`; throws EventSchemaError naming each mismatch. */
export function validatedEnvelope(body: string | object): Record<string, any> {
  let envelope: unknown;
  try {
    envelope = typeof body === 'string' ? JSON.parse(body) : body;
  } catch {
    throw new EventSchemaError(`webhook body is not JSON: ${String(body).slice(0, 200)}`);
  }
  const { type, mode } = (envelope ?? {}) as { type?: unknown; mode?: unknown };
  if (!(EVENT_KINDS as readonly unknown[]).includes(type) || !(PAYLOAD_MODES as readonly unknown[]).includes(mode)) {
    throw new EventSchemaError(`webhook body has no catalog schema: type ${JSON.stringify(type)}, mode ${JSON.stringify(mode)}`);
  }
  const validate = validatorOf(type as EventKind, mode as PayloadMode);
  if (!validate(envelope)) throw new EventSchemaError(`${String(type)} (${String(mode)}) drifts from its schema: ${explain(validate.errors)}`);
  return envelope as Record<string, any>;
}

let feedValidators: Map<EventKind, ValidateFunction> | undefined;

/** The strict validator of an event feed occurrence's `data` of `kind`: events/list's payloadSchema (EventCatalog.feedPayloadSchema), strict as above. */
function feedValidatorOf(kind: EventKind): ValidateFunction {
  if (!feedValidators) {
    const ajv = newAjv();
    feedValidators = new Map(EVENT_KINDS.map((k) => [k, ajv.compile(strict(feedPayloadSchema(k)) as JsonSchema)]));
  }
  return feedValidators.get(kind)!;
}

/**
 * An event feed answer (events/poll's result, GET /api/events' body; a stream's event in an array
 * of one), after checking every occurrence: its `data` against the payloadSchema events/list
 * advertises for its `name`, strictly, and `eventId`/`name`/`timestamp` against the envelope's
 * `id`/`type`/`createdAt`. Throws EventSchemaError naming each mismatch.
 */
export function validatedFeedAnswer<T>(answer: T): T {
  const events = (answer as { events?: unknown } | undefined)?.events;
  if (!Array.isArray(events)) throw new EventSchemaError(`a feed answer has no events array: ${JSON.stringify(answer).slice(0, 200)}`);
  for (const event of events as Array<Record<string, any>>) validatedOccurrence(event, false);
  return answer;
}

/**
 * One EventOccurrence, checked as validatedFeedAnswer checks each of its events; `withCursor`: it
 * carries its own `cursor` (a string), as occurrences pushed on a stream or POSTed to a
 * subscription's URL do, while a poll's carry none (the answer has it).
 */
export function validatedOccurrence<T extends Record<string, any>>(event: T, withCursor: boolean): T {
  const kind = event?.name as EventKind;
  if (!(EVENT_KINDS as readonly unknown[]).includes(kind)) throw new EventSchemaError(`a feed event names no kind: ${JSON.stringify(event).slice(0, 200)}`);
  const validate = feedValidatorOf(kind);
  if (!validate(event.data))
    throw new EventSchemaError(`feed event ${String(event.eventId)} (${kind}) drifts from its payloadSchema: ${explain(validate.errors)}`);
  const { id, type, createdAt } = event.data as Record<string, unknown>;
  const keys = withCursor ? 'cursor,data,eventId,name,timestamp' : 'data,eventId,name,timestamp';
  if (
    event.eventId !== id ||
    type !== kind ||
    event.timestamp !== createdAt ||
    Object.keys(event).sort().join() !== keys ||
    (withCursor && typeof event.cursor !== 'string')
  ) {
    throw new EventSchemaError(
      `feed event ${String(event.eventId)} disagrees with its envelope: ${JSON.stringify({ ...event, data: { id, type, createdAt } })}`,
    );
  }
  return event;
}

/** An events/list result, after checking that each kind advertises the catalog's payloadSchema and that it compiles as JSON Schema 2020-12. */
export function validatedEventList<T>(result: T): T {
  const listed = (result as { events?: Array<{ name: EventKind; payloadSchema: unknown }> }).events ?? [];
  if (listed.map((e) => e.name).join() !== EVENT_KINDS.join()) throw new EventSchemaError(`events/list names ${listed.map((e) => e.name).join(', ')}`);
  const ajv = newAjv();
  for (const { name, payloadSchema: advertised } of listed) {
    // As JSON: what went over the wire, whatever realm the client parsed it in.
    if (JSON.stringify(advertised) !== JSON.stringify(feedPayloadSchema(name)))
      throw new EventSchemaError(`events/list advertises a payloadSchema of ${name} that is not the catalog's`);
    ajv.compile(advertised as JsonSchema);
  }
  return result;
}

/** What the e2e helpers call on every events/* result they read: events/list and events/poll are checked, other methods passed through. */
export function validatedEventsResult<T>(method: string, result: T): T {
  if (result === undefined || result === null) return result;
  if (method === 'events/list') return validatedEventList(result);
  if (method === 'events/poll') return validatedFeedAnswer(result);
  return result;
}
