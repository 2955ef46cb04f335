import { EVENT_LIMITS, MAX_RECENT_MESSAGES } from '../conversations/message-data.builder';
import { EVENT_KINDS, EventKind } from '../events/event-kinds';
import { PayloadMode } from '../webhooks/webhook.types';

/**
 * The event catalog: one JSON Schema (draft 2020-12) per event kind and payload mode, the
 * contract of what a webhook delivery carries (docs/webhooks.md, "Event catalog"). This file is
 * the single source: the service serves these documents, the AsyncAPI document and docs/ are
 * built from them, and the e2e suite validates every delivery it receives against them.
 *
 * Published schemas do not forbid unknown properties, so receivers that validate keep working
 * when a later version adds an optional field (docs/webhooks.md, "How the schemas evolve").
 */

export type JsonSchema = { [keyword: string]: unknown };

export const PAYLOAD_MODES: readonly PayloadMode[] = ['concise', 'verbose'];
export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** Where the documents are served, under PUBLIC_BASE_URL (their `$id`s). */
export const CATALOG_PATH = '/events/schemas';
export function payloadSchemaId(baseUrl: string, kind: EventKind, mode: PayloadMode): string {
  return `${baseUrl}${CATALOG_PATH}/${kind}/${mode}`;
}
export function dataSchemaId(baseUrl: string, kind: EventKind, mode: PayloadMode): string {
  return `${payloadSchemaId(baseUrl, kind, mode)}/data`;
}

const ref = (name: string): JsonSchema => ({ $ref: `#/$defs/${name}` });
const nullable = (type: string): string[] => [type, 'null'];
const text = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', description, ...extra });
const nullableText = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: nullable('string'), description, ...extra });
const object = (title: string, description: string, properties: Record<string, JsonSchema>, extra: JsonSchema = {}): JsonSchema => ({
  type: 'object',
  title,
  description,
  required: Object.keys(properties),
  properties,
  ...extra,
});

/** The object schema with `optional` properties beside its required ones. */
const withOptional = (schema: JsonSchema, optional: Record<string, JsonSchema>): JsonSchema => ({
  ...schema,
  properties: { ...(schema.properties as Record<string, JsonSchema>), ...optional },
});

const MESSAGE_STATUSES = ['RECEIVED', 'QUEUED', 'SENT', 'DELIVERED', 'FAILED', 'SCHEDULED', 'CANCELED'];

/** The shared objects, by name; each document carries, under `$defs`, the ones it uses. */
const SHARED: Record<string, JsonSchema> = {
  timestamp: {
    type: 'string',
    title: 'Timestamp',
    description: 'An ISO 8601 UTC timestamp with milliseconds, as `2025-11-20T14:02:55.342Z`.',
    format: 'date-time',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
  },
  nullableTimestamp: {
    type: nullable('string'),
    title: 'Timestamp or null',
    description: 'An ISO 8601 UTC timestamp with milliseconds, or null.',
    format: 'date-time',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
  },
  uuid: { type: 'string', title: 'Id', description: 'A UUID.', format: 'uuid' },
  identityKind: { type: 'string', title: 'Identity kind', description: '`PHONE` (E.164 number) or `EMAIL` (address).', enum: ['PHONE', 'EMAIL'] },
  address: object('Address', 'One side of a message: a phone number or an email address.', {
    value: text('The phone number (E.164) or the email address.'),
    kind: ref('identityKind'),
  }),
  message: messageSchema(
    'Message',
    `The message the event is about. \`body\` holds at most ${EVENT_LIMITS.messageBodyChars} characters (Unicode code points); \`bodyTruncated\` says whether it was cut (get_message returns the whole body).`,
    EVENT_LIMITS.messageBodyChars,
  ),
  recentMessage: messageSchema(
    'Recent message',
    `A message of the thread's history. \`body\` holds at most ${EVENT_LIMITS.recentMessageBodyChars} characters; \`bodyTruncated\` says whether it was cut.`,
    EVENT_LIMITS.recentMessageBodyChars,
  ),
  threadConcise: threadSchema('concise'),
  threadVerbose: threadSchema('verbose'),
  identity: object('Identity', 'A phone number or email address of a person.', {
    id: { ...ref('uuid'), description: 'The identity id.' },
    kind: ref('identityKind'),
    value: text('The phone number (E.164) or the email address.'),
    displayName: nullableText('The name this identity goes by, or null.'),
  }),
  personConcise: personSchema('concise'),
  personVerbose: personSchema('verbose'),
  labels: {
    type: 'array',
    title: 'Labels',
    description: "The names of the thread's user-defined labels, by name.",
    items: { type: 'string' },
  },
  attachmentLink: object('Attachment', 'An attachment of the message, with a download link signed for this delivery attempt and valid 1 hour from it.', {
    id: ref('uuid'),
    filename: text('The file name.', { maxLength: EVENT_LIMITS.attachmentNameChars }),
    mimeType: text('The media type.', { maxLength: EVENT_LIMITS.attachmentNameChars }),
    sizeBytes: { type: 'integer', minimum: 0, description: 'The size of the file in bytes.' },
    url: text('`{PUBLIC_BASE_URL}/attachments/<id>/download?for=…&expires=…&sig=…`: signed again at every attempt, valid 1 hour.', {
      format: 'uri',
    }),
  }),
  emailHeaders: object('Email headers', 'Headers of an email message; each value holds at most 998 characters.', {
    messageId: nullableText('`Message-ID`, or null.', { maxLength: EVENT_LIMITS.headerChars }),
    inReplyTo: nullableText('`In-Reply-To`, or null.', { maxLength: EVENT_LIMITS.headerChars }),
    references: {
      type: 'array',
      description: `\`References\`: the first id (the thread's root) and the latest ones, at most ${EVENT_LIMITS.references}.`,
      maxItems: EVENT_LIMITS.references,
      items: { type: 'string', maxLength: EVENT_LIMITS.headerChars },
    },
    listUnsubscribe: nullableText('`List-Unsubscribe`, or null.', { maxLength: EVENT_LIMITS.headerChars }),
    authentication: object('Authentication results', 'SPF, DKIM and DMARC results as the receiving server reported them (for example `pass`), each or null.', {
      spf: nullableText('The SPF result, or null.'),
      dkim: nullableText('The DKIM result, or null.'),
      dmarc: nullableText('The DMARC result, or null.'),
    }),
  }),
  labelConfidence: {
    type: 'object',
    title: 'Label confidence',
    description: 'Map from label name to the confidence of that label, from 0 to 1.',
    additionalProperties: { type: 'number', minimum: 0, maximum: 1 },
  },
  open: object('Open', 'A snapshot of the opens of the email at the open that produced this event.', {
    firstOpenedAt: { ...ref('timestamp'), description: 'The first open.' },
    lastOpenedAt: { ...ref('timestamp'), description: 'The open that produced this event.' },
    openCount: { type: 'integer', minimum: 1, description: 'Distinct opens so far; 1 is the first.' },
  }),
  extractedAttachment: object('Extracted attachment', 'The attachment whose text was extracted (no `url`: read the text with read_attachment).', {
    id: ref('uuid'),
    filename: text('The file name.', { maxLength: EVENT_LIMITS.attachmentNameChars }),
    mimeType: text('The media type.', { maxLength: EVENT_LIMITS.attachmentNameChars }),
    sizeBytes: { type: 'integer', minimum: 0, description: 'The size of the file in bytes.' },
    messageId: ref('uuid'),
    textLength: { type: 'integer', minimum: 0, description: 'Characters of text extracted.' },
    hasText: { type: 'boolean', description: '`textLength > 0`.' },
    extractedAt: ref('timestamp'),
  }),
  calendarEvent: object('Calendar event', 'An event of an attached iCalendar (.ics, text/calendar) file.', {
    id: ref('uuid'),
    uid: text('The iCalendar UID.'),
    method: nullableText('The iCalendar METHOD (`REQUEST`, `CANCEL`, …), or null.'),
    status: nullableText('The iCalendar STATUS (`CONFIRMED`, …), or null.'),
    summary: nullableText('The title, or null.'),
    startsAt: { ...ref('nullableTimestamp'), description: 'The start, or null.' },
    endsAt: { ...ref('nullableTimestamp'), description: 'The end, or null.' },
    organizerEmail: nullableText("The organizer's address, or null."),
    attendeeEmails: { type: 'array', items: { type: 'string' }, description: "The attendees' addresses." },
  }),
  contact: object('Contact', 'The contact that remains after the merge, with every identity (in both modes).', {
    id: ref('uuid'),
    displayName: nullableText("The contact's name, or null."),
    identities: { type: 'array', items: ref('identity'), description: 'Every identity of the contact.' },
  }),
  emailAccount: object('Email account', 'The mailbox whose health changed.', {
    id: { ...ref('uuid'), description: "The mailbox's line id, as in list_email_accounts and channelScope." },
    emailAddress: text('The address of the mailbox.'),
    isActive: { type: 'boolean', description: 'Whether the mailbox is switched on.' },
    lastSyncedAt: { ...ref('nullableTimestamp'), description: 'The last successful sync, or null.' },
  }),
  health: object('Health', 'The transition: one event per change in each direction, not per failed retry.', {
    status: { type: 'string', enum: ['unhealthy', 'recovered'], description: '`unhealthy` when syncing stopped, `recovered` when it works again.' },
    errorKind: nullableText('`AUTH` (a human must re-authenticate), `RATE_LIMIT`, `NETWORK`, others, or null. Handle unknown values.', {
      examples: ['AUTH', 'RATE_LIMIT', 'NETWORK'],
    }),
    error: nullableText('The error as the mail server reported it, or null.'),
    since: { ...ref('nullableTimestamp'), description: 'When the mailbox became unhealthy, or null.' },
  }),
  optOut: object('SMS opt-out', "A number's opt-out of SMS from one of the org's phone lines, after the change (docs/opt-out.md).", {
    lineId: { ...ref('uuid'), description: 'The phone line the number texted.' },
    lineNumber: text("The line's number (E.164)."),
    number: text('The number that texted the keyword (E.164).'),
    optedOut: { type: 'boolean', description: 'True when the number is now opted out (sms.opted_out), false when it opted back in (sms.opted_in).' },
    keyword: text('The keyword as the message said it, in capitals: STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT, START, UNSTOP or YES.', {
      examples: ['STOP', 'START'],
    }),
    changedAt: { ...ref('timestamp'), description: 'When the change was recorded.' },
    threadId: { ...ref('uuid'), type: nullable('string'), description: 'The thread of the number on the line, or null.' },
    messageId: { ...ref('uuid'), type: nullable('string'), description: 'The inbound message that said the keyword (get_message), or null.' },
  }),
  agentTurn: withOptional(
    object('Agent turn', "The turn of an AI agent on the thread, or a draft-only credential's draft (then `credential` is present).", {
      id: ref('uuid'),
      status: text('`AWAITING_APPROVAL`, `SENT` or `REJECTED` (agent_turn.rejected). Handle unknown values.', {
        examples: ['AWAITING_APPROVAL', 'SENT', 'REJECTED'],
      }),
      threadId: ref('uuid'),
      messageId: { type: nullable('string'), format: 'uuid', description: 'The message the turn sent, or null (not sent yet).' },
      createdAt: ref('timestamp'),
      agent: object(
        'Agent',
        "The agent that took the turn. On a draft-only credential's draft (`credential` present), the credential acting as a DRAFT-mode agent: its id and name, mode `DRAFT` (not an agent of list_agents).",
        {
          id: ref('uuid'),
          name: text("The agent's name."),
          mode: {
            type: 'string',
            enum: ['DRAFT', 'AUTO', 'SUPERVISED'],
            description: 'How the agent sends: `DRAFT` (a human approves), `AUTO` or `SUPERVISED`.',
          },
        },
      ),
    }),
    {
      credential: object(
        'Credential',
        "Only on a draft-only credential's draft: the API key or app (OAuth grant) whose send_sms, send_email or reply_to_thread it holds.",
        {
          id: ref('uuid'),
          name: text("The API key's name, or the app's name, when it proposed the draft."),
          kind: { type: 'string', enum: ['API_KEY', 'OAUTH_GRANT'], description: '`API_KEY` or `OAUTH_GRANT` (an app a person connected).' },
        },
      ),
      rejectionReason: nullableText('Only on agent_turn.rejected: why the person rejected the turn, or null when they did not say.'),
    },
  ),
};

function messageSchema(title: string, description: string, bodyChars: number): JsonSchema {
  return object(title, description, {
    id: { ...ref('uuid'), description: 'The message id (get_message reads the whole message).' },
    threadId: { ...ref('uuid'), description: 'The thread the message belongs to.' },
    channel: { type: 'string', enum: ['SMS', 'EMAIL'], description: 'The channel of the message.' },
    direction: { type: 'string', enum: ['INBOUND', 'OUTBOUND'], description: 'Whether the message came in or went out.' },
    status: text(`One of ${MESSAGE_STATUSES.map((s) => `\`${s}\``).join(', ')} (\`RECEIVED\` for every inbound message). Handle unknown values.`, {
      examples: MESSAGE_STATUSES,
    }),
    body: text('The text of the message, cut to the limit.', { maxLength: bodyChars }),
    createdAt: { ...ref('timestamp'), description: 'When the message was recorded.' },
    sentAt: { ...ref('nullableTimestamp'), description: 'When the message was sent, or null.' },
    fromIdentity: ref('address'),
    toIdentity: ref('address'),
    bodyTruncated: { type: 'boolean', description: '`true` when `body` was cut to the limit.' },
  });
}

function threadSchema(mode: PayloadMode): JsonSchema {
  const base: Record<string, JsonSchema> = {
    id: { ...ref('uuid'), description: 'The thread id.' },
    subject: nullableText('The subject (SMS threads usually have none), at most 998 characters, or null.', { maxLength: EVENT_LIMITS.headerChars }),
    lastMessageAt: { ...ref('timestamp'), description: 'When the newest message of the thread was created.' },
    messageCount: { type: 'integer', minimum: 1, description: 'How many messages the thread holds.' },
  };
  if (mode === 'concise') return object('Thread', 'The conversation the event belongs to.', base);
  return object('Thread', 'The conversation the event belongs to, with its latest messages.', {
    ...base,
    recentMessages: {
      type: 'array',
      description: `The thread's most recent messages, oldest first (the newest last), at most the endpoint's messageHistoryCount (0 to ${MAX_RECENT_MESSAGES}).`,
      maxItems: MAX_RECENT_MESSAGES,
      items: ref('recentMessage'),
    },
  });
}

function personSchema(mode: PayloadMode): JsonSchema {
  const base: Record<string, JsonSchema> = {
    id: { type: nullable('string'), format: 'uuid', description: 'The contact id, or null for an orphan identity (an unknown partner no contact claims yet).' },
    displayName: nullableText("The person's name, or null."),
  };
  const identities = { identities: { type: 'array', items: ref('identity'), description: 'Every identity of the person.' } };
  return {
    ...object(
      'Person',
      'The partner of the thread: a contact, an orphan identity (`id` null), or null when unknown.',
      mode === 'concise' ? base : { ...base, ...identities },
    ),
    type: nullable('object'),
  };
}

/** What each kind is: its title, when it fires, and how its data is built. */
interface KindInfo {
  title: string;
  firesWhen: string;
  shape: 'message' | 'agentTurn' | 'contact' | 'health' | 'optOut';
  /** Properties beside the message event's ones (message kinds). */
  extra?: Record<string, JsonSchema>;
  /** A sentence to add to the description. */
  note?: string;
}

export const KIND_INFO: Record<EventKind, KindInfo> = {
  'message.received': {
    title: 'Message received',
    firesWhen: 'an inbound SMS or email has been ingested and stored (before attachment text is extracted)',
    shape: 'message',
  },
  'message.sent': {
    title: 'Message sent',
    firesWhen: 'an outbound message was handed to the carrier or mail server (it left `QUEUED`)',
    shape: 'message',
  },
  'message.status_changed': {
    title: 'Message status changed',
    firesWhen:
      'a status change of a message is recorded (a scheduled send also when it is written: `previousStatus` null, `SCHEDULED`; then `SCHEDULED` → `QUEUED`, `FAILED` or `CANCELED`)',
    shape: 'message',
    extra: {
      previousStatus: nullableText('The status before the change, or null when the message was just written in its status (a scheduled send: `SCHEDULED`).'),
      currentStatus: text('The status after the change (the same as `message.status`).'),
      error: nullableText('Why sending failed, when `currentStatus` is `FAILED`; else null.'),
    },
  },
  'thread.created': {
    title: 'Thread created',
    firesWhen: 'a new thread is created (the first message from an unknown partner)',
    shape: 'message',
    note: '`message` is the message that created the thread; `labels` is usually empty.',
  },
  'email.opened': {
    title: 'Email opened',
    firesWhen: 'a tracked outbound email records a distinct open',
    shape: 'message',
    extra: { open: ref('open') },
  },
  'attachment.extracted': {
    title: 'Attachment extracted',
    firesWhen: "an attachment's text has been extracted and is searchable (at most once per attachment)",
    shape: 'message',
    extra: {
      attachment: ref('extractedAttachment'),
      calendarEvents: { type: 'array', items: ref('calendarEvent'), description: 'The events of an .ics (text/calendar) attachment; empty for other files.' },
    },
  },
  'contact.merged': {
    title: 'Contact merged',
    firesWhen: 'two or more contacts were merged into one',
    shape: 'contact',
    note: 'The data is the same in both modes.',
  },
  'email_account.health_changed': {
    title: 'Email account health changed',
    firesWhen: 'a mailbox stops syncing, or works again',
    shape: 'health',
    note: 'The data is the same in both modes.',
  },
  'agent_turn.awaiting_approval': {
    title: 'Agent turn awaiting approval',
    firesWhen: "a DRAFT-mode agent drafted a reply that needs human approval, or a draft-only credential's send was held as a draft",
    shape: 'agentTurn',
  },
  'agent_turn.sent': {
    title: 'Agent turn sent',
    firesWhen: "an agent sent a reply (AUTO or SUPERVISED mode, or an approved DRAFT turn), or a person approved a draft-only credential's draft",
    shape: 'agentTurn',
  },
  'sms.opted_out': {
    title: 'SMS opted out',
    firesWhen:
      'a number texted STOP (or STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT) to a phone line it was not opted out of: SMS to it from that line are refused',
    shape: 'optOut',
    note: 'The data is the same in both modes.',
  },
  'sms.opted_in': {
    title: 'SMS opted in',
    firesWhen: 'a number opted out of a phone line texted START (or UNSTOP, YES) to it: SMS to it may be sent again',
    shape: 'optOut',
    note: 'The data is the same in both modes.',
  },
  'agent_turn.rejected': {
    title: 'Agent turn rejected',
    firesWhen: "a person rejected a draft (a DRAFT agent's, or a draft-only credential's); nothing was sent",
    shape: 'agentTurn',
    note: 'The turn carries `rejectionReason`, the reason the person gave, or null.',
  },
};

/** The `data` of `kind` in `mode`, its refs pointing at `#/$defs/<shared name>`. */
function dataBody(kind: EventKind, mode: PayloadMode): JsonSchema {
  const info = KIND_INFO[kind];
  const description = `The data of ${kind} in ${mode} mode: fires when ${info.firesWhen}.${info.note ? ` ${info.note}` : ''}`;
  const title = `${info.title} (${mode}): data`;
  const verbose = mode === 'verbose';
  const thread = ref(verbose ? 'threadVerbose' : 'threadConcise');
  const person = ref(verbose ? 'personVerbose' : 'personConcise');
  switch (info.shape) {
    case 'contact':
      return object(title, description, {
        contact: ref('contact'),
        mergedContactIds: { type: 'array', items: ref('uuid'), minItems: 1, description: 'The contacts merged into `contact` (they no longer exist).' },
      });
    case 'health':
      return object(title, description, { emailAccount: ref('emailAccount'), health: ref('health') });
    case 'optOut':
      return object(title, description, { optOut: ref('optOut') });
    case 'agentTurn':
      return object(title, description, { thread, person, labels: ref('labels'), agentTurn: ref('agentTurn') });
    case 'message': {
      const base = { ...info.extra, thread, person, labels: ref('labels'), message: ref('message') };
      if (!verbose) return object(title, description, base);
      const schema = object(title, description, {
        ...base,
        attachments: {
          type: 'array',
          description: `Every attachment of the message, in its order, at most ${EVENT_LIMITS.attachments}.`,
          maxItems: EVENT_LIMITS.attachments,
          items: ref('attachmentLink'),
        },
        emailHeaders: { ...ref('emailHeaders'), description: 'Present when `message.channel` is `EMAIL`; absent for SMS.' },
        labelConfidence: ref('labelConfidence'),
      });
      schema.required = (schema.required as string[]).filter((name) => name !== 'emailHeaders');
      // emailHeaders: present exactly when the message is an email.
      schema.if = { required: ['message'], properties: { message: { type: 'object', required: ['channel'], properties: { channel: { const: 'EMAIL' } } } } };
      schema.then = { required: ['emailHeaders'] };
      schema.else = { not: { required: ['emailHeaders'] } };
      return schema;
    }
  }
}

/** The names of the shared definitions `schema` uses, transitively. */
function usedDefs(schema: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) schema.forEach((item) => usedDefs(item, found));
  else if (schema && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/')) {
        const name = value.slice('#/$defs/'.length);
        if (!found.has(name) && SHARED[name]) {
          found.add(name);
          usedDefs(SHARED[name], found);
        }
      } else usedDefs(value, found);
    }
  }
  return found;
}

function defsOf(schema: JsonSchema): Record<string, JsonSchema> {
  return Object.fromEntries([...usedDefs(schema)].sort().map((name) => [name, SHARED[name]]));
}

/** The schema of the envelope-less `data` of `kind` in `mode`: a standalone document. */
export function dataSchema(kind: EventKind, mode: PayloadMode, baseUrl: string): JsonSchema {
  const body = dataBody(kind, mode);
  return { $schema: JSON_SCHEMA_DIALECT, $id: dataSchemaId(baseUrl, kind, mode), ...body, $defs: defsOf(body) };
}

/** The schema of a whole webhook body (the envelope with its `data`) of `kind` in `mode`: a standalone document. */
export function payloadSchema(kind: EventKind, mode: PayloadMode, baseUrl: string): JsonSchema {
  const info = KIND_INFO[kind];
  const data = dataBody(kind, mode);
  const envelope = object(
    `${info.title} (${mode})`,
    `The body of a webhook delivery of ${kind} to an endpoint in ${mode} mode. Fires when ${info.firesWhen}.`,
    {
      id: {
        type: 'string',
        pattern: '^evt_[0-9a-f]{32}$',
        description: 'The id of this delivery (`evt_` + 32 lowercase hex): the deduplication key. Retries keep it; a resend gets a new one.',
      },
      type: { const: kind, description: 'The event kind.' },
      createdAt: {
        ...ref('timestamp'),
        description: 'When the event happened (the time of its database transaction); a resend carries the time of the resend.',
      },
      endpointId: { ...ref('uuid'), description: 'The endpoint receiving this delivery.' },
      mode: { const: mode, description: 'The detail level `data` was built in (the endpoint’s `mode`).' },
      data: ref('data'),
    },
  );
  return { $schema: JSON_SCHEMA_DIALECT, $id: payloadSchemaId(baseUrl, kind, mode), ...envelope, $defs: { data, ...defsOf({ envelope, data }) } };
}

export interface CatalogEntry {
  kind: EventKind;
  title: string;
  firesWhen: string;
  schemas: Record<PayloadMode, { payload: string; data: string }>;
}

/** Every kind with the URLs of its documents. */
export function catalogIndex(baseUrl: string): CatalogEntry[] {
  return EVENT_KINDS.map((kind) => ({
    kind,
    title: KIND_INFO[kind].title,
    firesWhen: KIND_INFO[kind].firesWhen,
    schemas: Object.fromEntries(
      PAYLOAD_MODES.map((mode) => [mode, { payload: payloadSchemaId(baseUrl, kind, mode), data: dataSchemaId(baseUrl, kind, mode) }]),
    ) as CatalogEntry['schemas'],
  }));
}

/**
 * The schema of an event feed occurrence's `data` (events/poll, GET /api/events; the `payloadSchema`
 * of events/list): the envelope a webhook endpoint receives, without `endpointId` (a feed has no
 * endpoint) and with the event's id in the log (`evt_` + its number, the same on every read) in
 * place of a delivery's id. Which of the two modes: the subscription's `mode` argument, so the
 * schema is `oneOf` the concise and the verbose envelope, told apart by their `mode` (docs/mcp.md,
 * "events/list"). A standalone document without `$id` (it is served inside events/list).
 */
export function feedPayloadSchema(kind: EventKind): JsonSchema {
  const info = KIND_INFO[kind];
  const data = Object.fromEntries(PAYLOAD_MODES.map((mode) => [`${mode}Data`, dataBody(kind, mode)]));
  const envelopes = PAYLOAD_MODES.map((mode) =>
    object(`${info.title} (${mode})`, `The event in ${mode} mode: what a subscription with \`mode: "${mode}"\` receives.`, {
      id: {
        type: 'string',
        pattern: '^evt_[0-9]+$',
        description: 'The event id (`evt_` + its number in the log): the same on every read, the dedup key; the eventId of the occurrence.',
      },
      type: { const: kind, description: 'The event kind.' },
      createdAt: { ...ref('timestamp'), description: 'When the event happened (the time of its database transaction).' },
      mode: { const: mode, description: 'The detail level `data` was built in: the subscription’s `mode` argument.' },
      data: ref(`${mode}Data`),
    }),
  );
  return {
    $schema: JSON_SCHEMA_DIALECT,
    title: `${info.title} (event feed)`,
    description:
      `The \`data\` of a ${kind} occurrence, in the subscription's mode (\`concise\` unless its \`mode\` argument says \`verbose\`): ` +
      `the webhook envelope of that mode without \`endpointId\`. Fires when ${info.firesWhen}.`,
    oneOf: envelopes,
    $defs: { ...data, ...defsOf({ envelopes, data }) },
  };
}
