/** JSON Schemas of messaging tool results, shared by the tools. */
import { nullableString } from '../tools/tool-schemas';
import { MESSAGE_STATUSES } from './message.entity';

/** A message's fromIdentity or toIdentity. */
export const identityRef = {
  type: 'object',
  properties: { value: { type: 'string' }, kind: { type: 'string', enum: ['PHONE', 'EMAIL'] } },
  required: ['value', 'kind'],
} as const;

export const messageSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    threadId: { type: 'string' },
    channel: { type: 'string', enum: ['SMS', 'EMAIL'] },
    direction: { type: 'string', enum: ['INBOUND', 'OUTBOUND'] },
    status: {
      type: 'string',
      enum: [...MESSAGE_STATUSES],
      description:
        'RECEIVED for inbound messages; outbound ones go QUEUED → SENT → DELIVERED, or FAILED. A send with sendAt is SCHEDULED until then ' +
        '(then QUEUED, or FAILED when refused then), or CANCELED.',
    },
    body: { type: 'string' },
    createdAt: { type: 'string' },
    sentAt: nullableString,
    sendAt: { type: 'string', format: 'date-time', description: 'Given when the message was sent with sendAt: the time it was scheduled for.' },
    fromIdentity: identityRef,
    toIdentity: identityRef,
  },
  required: ['id', 'threadId', 'channel', 'direction', 'status', 'body', 'createdAt', 'sentAt', 'fromIdentity', 'toIdentity'],
} as const;

/** The idempotencyKey property of the send tools (docs/mcp.md, "Sending once"). */
export const idempotencyKeyProperty = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  description:
    'Optional, recommended when a call may be repeated (a retry after a timeout, an agent woken twice by the same webhook): ' +
    'a key of your choosing, such as the id of the event you are answering. The same key within 24 hours, with the same ' +
    'arguments, sends nothing and returns the first message with replayed true; with other arguments it is an error.',
} as const;

/** What the send tools answer. */
/**
 * What a send tool answers: the message; or, to a draft-only credential, `turn` in its place (the
 * draft awaiting a person, as get_agent_turn shows it). One of the two is always there.
 */
export const sentMessageSchema = {
  type: 'object',
  properties: {
    message: { ...messageSchema, description: 'The message queued (absent when this credential is draft-only: see turn).' },
    replayed: { type: 'boolean', description: 'Given with idempotencyKey: true when the key was used before and this call sent nothing.' },
    turn: {
      type: 'object',
      description:
        'Only for a draft-only credential, in place of message: the agent turn AWAITING_APPROVAL that holds the message as proposed (as get_agent_turn shows it; credential is this one). Nothing was sent.',
      properties: { id: { type: 'string' }, status: { type: 'string' }, threadId: { type: 'string' } },
      required: ['id', 'status', 'threadId'],
    },
  },
  // One of message (sent or scheduled) and turn (held as a draft) is there, as the caller's permission decides.
  required: [],
} as const;

export const identitySchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    kind: { type: 'string', enum: ['PHONE', 'EMAIL'] },
    value: { type: 'string' },
    displayName: nullableString,
  },
  required: ['id', 'kind', 'value', 'displayName'],
} as const;

/** A thread as the thread tools show it: the spec's thread object plus its channel and line. */
export const threadSummarySchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    subject: nullableString,
    lastMessageAt: { type: 'string' },
    messageCount: { type: 'integer', minimum: 0 },
    channel: { type: 'string', enum: ['SMS', 'EMAIL'] },
    lineId: { type: 'string' },
  },
  required: ['id', 'subject', 'lastMessageAt', 'messageCount', 'channel', 'lineId'],
} as const;

/** The spec's concise person: a contact, an orphan identity (id null), or null. */
export const personConciseSchema = {
  anyOf: [{ type: 'null' }, { type: 'object', properties: { id: nullableString, displayName: nullableString }, required: ['id', 'displayName'] }],
} as const;

/** The verbose person: with every identity of the contact (or the orphan identity alone). */
export const personSchema = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      properties: { id: nullableString, displayName: nullableString, identities: { type: 'array', items: identitySchema } },
      required: ['id', 'displayName', 'identities'],
    },
  ],
} as const;

export const labelWithConfidenceSchema = {
  type: 'object',
  properties: { name: { type: 'string' }, confidence: { type: 'number', minimum: 0, maximum: 1 } },
  required: ['name', 'confidence'],
} as const;

export const attachmentRefSchema = {
  type: 'object',
  properties: { id: { type: 'string' }, filename: { type: 'string' }, mimeType: { type: 'string' }, sizeBytes: { type: 'integer' } },
  required: ['id', 'filename', 'mimeType', 'sizeBytes'],
} as const;

/** A number's opt-out of SMS from a line (docs/opt-out.md). */
export const optOutSchema = {
  type: 'object',
  properties: {
    number: { type: 'string', description: 'The number that texted the keyword (E.164).' },
    lineId: { type: 'string', description: 'The phone line it opted out of.' },
    keyword: { type: 'string', description: 'The keyword it texted: STOP, STOPALL, UNSUBSCRIBE, CANCEL, END or QUIT.' },
    since: { type: 'string', description: 'When (ISO 8601).' },
  },
  required: ['number', 'lineId', 'keyword', 'since'],
} as const;

/** A contact of the org; `identities` lists only what the caller may see, and list_contacts cuts `notes` (docs/messaging.md). */
export const contactSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    displayName: nullableString,
    notes: nullableString,
    notesTruncated: { type: 'boolean' },
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' },
    identities: { type: 'array', items: identitySchema },
    optedOut: {
      type: 'array',
      items: optOutSchema,
      description: 'Its phone numbers that texted STOP to one of your lines (and not START since): send_sms to them from that line is refused.',
    },
  },
  required: ['id', 'displayName', 'notes', 'notesTruncated', 'createdAt', 'updatedAt', 'identities', 'optedOut'],
} as const;
