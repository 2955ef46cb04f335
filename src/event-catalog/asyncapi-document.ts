import { EVENT_KINDS, EventKind } from '../events/event-kinds';
import { PayloadMode } from '../webhooks/webhook.types';
import { JsonSchema, KIND_INFO, PAYLOAD_MODES, payloadSchema, payloadSchemaId } from './event-schemas';

/**
 * The webhooks as an AsyncAPI 3.0 document, built from the catalog's schemas: one channel per
 * event kind with a message per mode, one `send` operation per kind (the service sends, the
 * receiver's endpoint is the channel's address, chosen at registration), the delivery headers as
 * the messages' headers. AsyncAPI's schema format is draft-07 based, so each standalone schema's
 * `$defs` move to `components.schemas` and its refs follow; the keywords used are common to both.
 */

export const ASYNCAPI_PATH = '/events/asyncapi.json';

const TIMESTAMP_SECONDS = '^[0-9]+$';

/** The headers of every delivery (docs/webhooks.md, "Headers" and "Verifying signatures"). */
const HEADERS: JsonSchema = {
  type: 'object',
  description: 'The HTTP headers of a delivery. Header names are not case sensitive.',
  required: ['Content-Type', 'X-Service-Event-Id', 'X-Service-Event-Type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'],
  properties: {
    'Content-Type': { type: 'string', const: 'application/json', description: 'The body is one compact JSON object in UTF-8.' },
    'User-Agent': { type: 'string', description: 'The service, as `MessagingSync-Webhooks/1.0`.' },
    'X-Service-Event-Id': { type: 'string', pattern: '^evt_[0-9a-f]{32}$', description: "The envelope's `id` (not covered by the signature)." },
    'X-Service-Event-Type': { type: 'string', description: "The envelope's `type` (not covered by the signature)." },
    'X-Service-Signature': {
      type: 'string',
      pattern: '^t=[0-9]+(,v1=[0-9a-f]{64})+$',
      description:
        'The service\'s own signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "{t}.{body}">`, with a second `v1` during a secret rotation. Kept for existing receivers; absent when the endpoint switched it off (`legacySignature: false`).',
    },
    'webhook-id': {
      type: 'string',
      pattern: '^evt_[0-9a-f]{32}$',
      description: "Standard Webhooks: the message id, the envelope's `id`; the same on every retry, so it is the deduplication key.",
    },
    'webhook-timestamp': { type: 'string', pattern: TIMESTAMP_SECONDS, description: 'Standard Webhooks: the time of this attempt in Unix seconds.' },
    'webhook-signature': {
      type: 'string',
      pattern: '^v1a?,[A-Za-z0-9+/]+={0,2}( v1a?,[A-Za-z0-9+/]+={0,2})*$',
      description:
        'Standard Webhooks: space-separated signatures of "{webhook-id}.{webhook-timestamp}.{body}": `v1,<base64 HMAC-SHA256>` with the endpoint\'s `whsec_` secret, or `v1a,<base64 ed25519>` for an endpoint that chose asymmetric signing; two during a rotation.',
    },
  },
};

function messageName(kind: EventKind, mode: PayloadMode): string {
  return `${kind}.${mode}`;
}

/** `#/$defs/data` → the kind's data component; `#/$defs/<name>` → the shared component. */
function relocate(schema: unknown, dataName: string): unknown {
  if (Array.isArray(schema)) return schema.map((item) => relocate(item, dataName));
  if (!schema || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key]) => key !== '$schema' && key !== '$id' && key !== '$defs')
      .map(([key, value]) => {
        if (key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/')) {
          const name = value.slice('#/$defs/'.length);
          return [key, `#/components/schemas/${name === 'data' ? dataName : name}`];
        }
        return [key, relocate(value, dataName)];
      }),
  );
}

export function asyncApiDocument(baseUrl: string): JsonSchema {
  const schemas: Record<string, unknown> = {};
  const messages: Record<string, unknown> = {};
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  for (const kind of EVENT_KINDS) {
    const info = KIND_INFO[kind];
    for (const mode of PAYLOAD_MODES) {
      const name = messageName(kind, mode);
      const standalone = payloadSchema(kind, mode, baseUrl);
      const { data, ...shared } = standalone.$defs as Record<string, unknown>;
      for (const [defName, def] of Object.entries(shared)) schemas[defName] ??= relocate(def, `${name}.data`);
      schemas[`${name}.data`] = relocate(data, `${name}.data`);
      schemas[name] = relocate(standalone, `${name}.data`);
      messages[name] = {
        name,
        title: `${info.title} (${mode})`,
        summary: `Fires when ${info.firesWhen}; sent to endpoints in ${mode} mode.`,
        contentType: 'application/json',
        headers: { $ref: '#/components/schemas/deliveryHeaders' },
        payload: { $ref: `#/components/schemas/${name}` },
        externalDocs: { description: 'The JSON Schema (draft 2020-12) of this body', url: payloadSchemaId(baseUrl, kind, mode) },
      };
    }
    channels[kind] = {
      address: null,
      title: info.title,
      description: `Deliveries of ${kind} to a webhook endpoint subscribed to it: fires when ${info.firesWhen}. The address is the endpoint's URL, chosen at registration.`,
      messages: Object.fromEntries(PAYLOAD_MODES.map((mode) => [mode, { $ref: `#/components/messages/${messageName(kind, mode)}` }])),
    };
    operations[`send.${kind}`] = {
      action: 'send',
      title: `Send ${kind}`,
      summary: `The service POSTs ${kind} to each active endpoint subscribed to it, in the endpoint's mode, and retries until a 2xx.`,
      channel: { $ref: `#/channels/${kind}` },
      messages: PAYLOAD_MODES.map((mode) => ({ $ref: `#/channels/${kind}/messages/${mode}` })),
    };
  }
  schemas.deliveryHeaders = HEADERS;
  return {
    asyncapi: '3.0.0',
    id: `${baseUrl}${ASYNCAPI_PATH}`,
    info: {
      title: 'Messaging sync service webhooks',
      version: '1.0.0',
      description:
        'The signed webhooks the service POSTs to endpoints registered with register_webhook: one channel per event kind, each in a concise and a verbose mode. The body is the event envelope; the payload schemas are the event catalog (JSON Schema draft 2020-12, served under /events/schemas).',
    },
    defaultContentType: 'application/json',
    channels,
    operations,
    components: { schemas: sortKeys(schemas), messages },
  };
}

function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}
