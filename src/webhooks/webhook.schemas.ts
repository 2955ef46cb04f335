import { argumentCheck } from '../tools/tool-arguments';
import { ToolArgs } from '../tools/tool.decorator';
import { nullable, nullableString } from '../tools/tool-schemas';
import { LINE_TYPES } from '../identity/account.types';
import { ENDPOINT_STATUSES, EVENT_KINDS, MAX_MESSAGE_HISTORY_COUNT, PAYLOAD_MODES, SIGNATURE_VERSIONS } from './webhook.types';

/** JSON Schemas of the webhook tools: one source for validation and for tools/list. */
export const endpointIdSchema = { type: 'string', format: 'uuid', description: 'The endpoint id (from register_webhook or list_webhooks).' } as const;

export const urlSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 2048,
  description: 'Where events are POSTed. https:// (http:// only in development); must resolve to public addresses.',
} as const;

export const eventsSchema = {
  type: 'array',
  minItems: 1,
  uniqueItems: true,
  items: { type: 'string', enum: [...EVENT_KINDS] },
  description: 'Event kinds to receive.',
} as const;

export const modeSchema = { type: 'string', enum: [...PAYLOAD_MODES], description: 'Payload detail: concise (default) or verbose.' } as const;

export const messageHistoryCountSchema = {
  type: 'integer',
  minimum: 0,
  maximum: MAX_MESSAGE_HISTORY_COUNT,
  description: `Verbose mode: at most this many entries in thread.recentMessages (0..${MAX_MESSAGE_HISTORY_COUNT}, default 10).`,
} as const;

export const channelScopeSchema = {
  type: 'object',
  description: 'Which lines the endpoint hears from. Omitted: all lines, including lines connected later.',
  properties: {
    allChannels: { type: 'boolean', description: 'true: every line. false: only the listed channels.' },
    channels: {
      type: 'array',
      maxItems: 200,
      uniqueItems: true,
      description: 'With allChannels false: the lines to hear from, at least one. With allChannels true: empty or left out.',
      items: {
        type: 'object',
        properties: {
          channelType: { type: 'string', enum: [...LINE_TYPES], description: 'PHONE_NUMBER for a phone line, EMAIL_ACCOUNT for a mailbox.' },
          channelId: { type: 'string', format: 'uuid', description: 'A line id from list_email_accounts or list_phone_numbers.' },
        },
        required: ['channelType', 'channelId'],
        additionalProperties: false,
      },
    },
  },
  required: ['allChannels'],
  additionalProperties: false,
} as const;

export const signatureVersionSchema = {
  type: 'string',
  enum: [...SIGNATURE_VERSIONS],
  description:
    'Standard Webhooks webhook-signature version: v1 (default) is HMAC-SHA256 with the secret; v1a is ed25519, verified with the public key ' +
    '(publicKey, also published as a JWK Set at /webhooks/{endpointId}/jwks.json).',
} as const;

export const legacySignatureSchema = {
  type: 'boolean',
  description: 'Whether deliveries also carry the legacy X-Service-Signature header (default true). false turns it off for this endpoint.',
} as const;

/** The arguments of the tools that take only an endpoint id (get, rotate, delete), and of a page's path id. */
export const byEndpointId = { type: 'object', properties: { endpointId: endpointIdSchema }, required: ['endpointId'], additionalProperties: false } as const;
export type ByEndpointId = ToolArgs<typeof byEndpointId>;

/** register_webhook's arguments: also what the Add endpoint form must make. */
export const registerInput = {
  type: 'object',
  properties: {
    url: urlSchema,
    events: eventsSchema,
    mode: modeSchema,
    messageHistoryCount: messageHistoryCountSchema,
    channelScope: channelScopeSchema,
    signatureVersion: signatureVersionSchema,
    legacySignature: legacySignatureSchema,
  },
  required: ['url', 'events'],
  additionalProperties: false,
} as const;

/** update_webhook's arguments: also what the Edit form (and Disable / Enable) make. */
export const updateInput = {
  type: 'object',
  properties: {
    endpointId: endpointIdSchema,
    url: urlSchema,
    events: eventsSchema,
    mode: modeSchema,
    messageHistoryCount: messageHistoryCountSchema,
    status: { type: 'string', enum: ENDPOINT_STATUSES, description: 'disabled stops delivery (events are kept); active resumes it.' },
    channelScope: channelScopeSchema,
    signatureVersion: signatureVersionSchema,
    legacySignature: legacySignatureSchema,
  },
  required: ['endpointId'],
  additionalProperties: false,
} as const;

/**
 * The webhook tools' argument checks for the other surfaces (the web pages): the tools' own input
 * schemas, judged as the MCP registry judges them, so a page accepts exactly what the tool does.
 */
export const webhookArguments = {
  endpointId: argumentCheck(byEndpointId),
  register: argumentCheck(registerInput),
  update: argumentCheck(updateInput),
};

export const endpointSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    url: { type: 'string' },
    events: { type: 'array', items: { type: 'string' } },
    mode: { type: 'string', enum: [...PAYLOAD_MODES] },
    messageHistoryCount: { type: 'integer' },
    status: { type: 'string', enum: [...ENDPOINT_STATUSES] },
    channelScope: {
      type: 'object',
      properties: {
        allChannels: { type: 'boolean' },
        channels: {
          type: 'array',
          items: {
            type: 'object',
            properties: { channelType: { type: 'string' }, channelId: { type: 'string' } },
            required: ['channelType', 'channelId'],
          },
        },
      },
      required: ['allChannels', 'channels'],
    },
    signatureVersion: { type: 'string', enum: [...SIGNATURE_VERSIONS], description: 'v1 (HMAC-SHA256) or v1a (ed25519) webhook-signature entries.' },
    legacySignature: { type: 'boolean', description: 'Whether deliveries carry the legacy X-Service-Signature header.' },
    publicKey: nullable({ type: 'string' } as const, 'v1a: the ed25519 public key (whpk_ + base64 of 32 bytes) that verifies webhook-signature; null for v1.'),
    disabledReason: nullableString,
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
  required: [
    'id',
    'url',
    'events',
    'mode',
    'messageHistoryCount',
    'status',
    'channelScope',
    'signatureVersion',
    'legacySignature',
    'publicKey',
    'createdAt',
    'updatedAt',
  ],
} as const;

export const secretSchema = {
  type: 'string',
  pattern: '^[0-9a-f]{64}$',
  description: 'Signing secret, 32 bytes as hex (the HMAC key is this string, as UTF-8). Shown only now.',
} as const;

export const signingSecretSchema = {
  type: 'string',
  pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
  description: 'The same secret in Standard Webhooks form for its libraries: whsec_ + base64 of the UTF-8 bytes of secret. Shown only now.',
} as const;
