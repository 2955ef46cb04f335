import { EVENT_KINDS, EventKind } from '../events/event-kinds';
import { DEFAULT_MESSAGE_HISTORY_COUNT, MAX_MESSAGE_HISTORY_COUNT } from '../webhooks/webhook.types';

/** How an event kind may be delivered (the draft's `delivery`): poll (events/poll), push (events/stream) and webhook (events/subscribe). */
export type DeliveryMode = 'poll' | 'push' | 'webhook';
export const DELIVERY_MODES: readonly DeliveryMode[] = ['poll', 'push', 'webhook'];

/** The filters a subscription may narrow an event kind by (its `arguments`), and which kinds each applies to. */
export type FeedFilter = 'line' | 'thread' | 'direction' | 'label';

const MESSAGE_KINDS: EventKind[] = ['message.received', 'message.sent', 'message.status_changed', 'thread.created', 'email.opened', 'attachment.extracted'];
const AGENT_KINDS: EventKind[] = ['agent_turn.awaiting_approval', 'agent_turn.sent', 'agent_turn.rejected'];

/**
 * Which filters apply to which kind: every kind on a line takes `line` (all but contact.merged,
 * which is org-wide); kinds about a thread take `thread` and `label` (message kinds and agent turns:
 * their data carry `thread` and `labels`); only message kinds take `direction` (their data carry
 * `message.direction`). email_account.health_changed happens on a mailbox line and takes `line` only, as sms.opted_out and
 * sms.opted_in do on a phone line.
 */
export const FILTERS_BY_KIND: Record<EventKind, FeedFilter[]> = Object.fromEntries(
  EVENT_KINDS.map((kind) => {
    if (MESSAGE_KINDS.includes(kind)) return [kind, ['line', 'thread', 'direction', 'label']];
    if (AGENT_KINDS.includes(kind)) return [kind, ['line', 'thread', 'label']];
    if (kind === 'contact.merged') return [kind, []];
    return [kind, ['line']];
  }),
) as Record<EventKind, FeedFilter[]>;

const DESCRIPTIONS: Record<EventKind, string> = {
  'message.received': 'A message arrived on a line (SMS or email).',
  'message.sent': 'A message was sent from a line.',
  'message.status_changed': "A message's delivery status changed (queued, sent, delivered, failed...).",
  'thread.created': 'A new conversation started on a line.',
  'email.opened': 'A sent email was opened (tracking pixel).',
  'attachment.extracted': "An attachment's text was extracted and can be read.",
  'contact.merged': 'Contacts of the organization were merged into one (org-wide: only credentials with access to all channels see it).',
  'email_account.health_changed': 'A mailbox stopped syncing, or recovered.',
  'agent_turn.awaiting_approval': "An agent's draft awaits a person's approval.",
  'agent_turn.sent': "An agent's turn was approved and sent.",
  'sms.opted_out': 'A number texted STOP to a phone line: SMS to it from that line are refused.',
  'sms.opted_in': 'A number that had opted out of a phone line texted START: SMS to it may be sent again.',
  'agent_turn.rejected': "A person rejected a draft (an agent's, or a draft-only credential's), with the reason they gave if any.",
};

const FILTER_SCHEMAS: Record<FeedFilter, object> = {
  line: {
    type: 'string',
    format: 'uuid',
    description: 'Only events on this line (a phone number or mailbox id from list_phone_numbers / list_email_accounts).',
  },
  thread: { type: 'string', format: 'uuid', description: 'Only events of this thread.' },
  direction: { type: 'string', enum: ['INBOUND', 'OUTBOUND'], description: "Only messages of this direction (the message's `direction`)." },
  label: { type: 'string', minLength: 1, maxLength: 100, description: 'Only events whose thread carries this label.' },
};

/** The transforms every kind takes: the webhook envelope's payload mode, and the verbose thread history's length. */
const SHAPE_SCHEMAS = {
  mode: {
    type: 'string',
    enum: ['concise', 'verbose'],
    default: 'concise',
    description: 'The payload mode, as a webhook endpoint has: concise, or verbose (attachments, email headers, label confidences, recent messages).',
  },
  messageHistoryCount: {
    type: 'integer',
    minimum: 0,
    maximum: MAX_MESSAGE_HISTORY_COUNT,
    default: DEFAULT_MESSAGE_HISTORY_COUNT,
    description: "Verbose mode: how many recent messages of the thread to include (as a webhook endpoint's messageHistoryCount).",
  },
};

/**
 * The `arguments` schema of one kind: its filters and the payload shape, nothing else; of every
 * kind at once (null, the HTTP feed without `type`): every filter, each keeping only the kinds it
 * applies to (a thread filter passes no contact.merged).
 */
export function inputSchemaOf(kind: EventKind | null): object {
  const properties: Record<string, object> = {};
  const filters: FeedFilter[] = kind === null ? ['line', 'thread', 'direction', 'label'] : FILTERS_BY_KIND[kind];
  for (const filter of filters) properties[filter] = FILTER_SCHEMAS[filter];
  return { type: 'object', properties: { ...properties, ...SHAPE_SCHEMAS }, additionalProperties: false };
}

export interface EventDescriptor {
  name: EventKind;
  description: string;
  delivery: DeliveryMode[];
  inputSchema: object;
  payloadSchema: object;
}

/**
 * events/list: every kind, each with its filters, delivery modes and payload; `payloadSchemaOf`
 * is the event catalog's schema of an occurrence's `data` (EventCatalog.feedPayloadSchema: both
 * modes, `oneOf` by `mode`). Built once by EventFeedService.
 */
export function eventDescriptors(payloadSchemaOf: (kind: EventKind) => object): readonly EventDescriptor[] {
  return EVENT_KINDS.map((name) => ({
    name,
    description: DESCRIPTIONS[name],
    delivery: [...DELIVERY_MODES],
    inputSchema: inputSchemaOf(name),
    payloadSchema: payloadSchemaOf(name),
  }));
}
