/**
 * The shared data objects of the spec ("Shared data objects"), in their fullest (verbose) form.
 * A domain event carries these; the delivery payload builders cut them down for concise mode.
 */
export type Channel = 'SMS' | 'EMAIL';
export type Direction = 'INBOUND' | 'OUTBOUND';
export type IdentityKind = 'PHONE' | 'EMAIL';

export interface SerializedMessage {
  id: string;
  threadId: string;
  channel: Channel;
  direction: Direction;
  status: string;
  body: string;
  createdAt: string;
  sentAt: string | null;
  fromIdentity: { value: string; kind: IdentityKind };
  toIdentity: { value: string; kind: IdentityKind };
}

/**
 * A message as events carry it: `body` is cut to a limit (EVENT_LIMITS in
 * conversations/message-data.builder.ts) and `bodyTruncated` says whether it was.
 */
export interface EventMessage extends SerializedMessage {
  bodyTruncated: boolean;
}

export interface ThreadData {
  id: string;
  subject: string | null;
  lastMessageAt: string;
  messageCount: number;
  /** Newest last; verbose only, trimmed to the endpoint's messageHistoryCount. */
  recentMessages: EventMessage[];
}

export interface IdentityData {
  id: string;
  kind: IdentityKind;
  value: string;
  displayName: string | null;
}

/** A person, an orphan identity (id null, displayName set), or null. */
export interface PersonData {
  id: string | null;
  displayName: string | null;
  /** Verbose only. */
  identities: IdentityData[];
}

/** In verbose `attachments`; `url` is added at each attempt (a signed link valid 1 hour). */
export interface AttachmentRef {
  id: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
}

export interface EmailHeaders {
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  listUnsubscribe: string | null;
  authentication: { spf: string | null; dkim: string | null; dmarc: string | null };
}

/** What every message-centred event carries. */
export interface MessageEventData {
  thread: ThreadData;
  person: PersonData | null;
  labels: string[];
  message: EventMessage;
  /** Verbose only. */
  attachments: AttachmentRef[];
  /** Verbose only, EMAIL channel only. */
  emailHeaders: EmailHeaders | null;
  /** Verbose only. */
  labelConfidence: Record<string, number>;
}

export interface StatusChangedData extends MessageEventData {
  previousStatus: string | null;
  currentStatus: string;
  /** Why sending failed, when currentStatus is FAILED; else null. */
  error: string | null;
}

export interface OpenData {
  firstOpenedAt: string;
  lastOpenedAt: string;
  openCount: number;
}

export interface EmailOpenedData extends MessageEventData {
  open: OpenData;
}

export interface ExtractedAttachment {
  id: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  messageId: string;
  textLength: number;
  hasText: boolean;
  extractedAt: string;
}

export interface CalendarEventData {
  id: string;
  uid: string;
  method: string | null;
  status: string | null;
  summary: string | null;
  startsAt: string | null;
  endsAt: string | null;
  organizerEmail: string | null;
  attendeeEmails: string[];
}

export interface AttachmentExtractedData extends MessageEventData {
  attachment: ExtractedAttachment;
  calendarEvents: CalendarEventData[];
}

export interface ContactMergedData {
  contact: { id: string; displayName: string | null; identities: IdentityData[] };
  mergedContactIds: string[];
}

export interface EmailAccountHealthData {
  emailAccount: { id: string; emailAddress: string; isActive: boolean; lastSyncedAt: string | null };
  health: { status: 'unhealthy' | 'recovered'; errorKind: string | null; error: string | null; since: string | null };
}

export interface AgentTurnData {
  thread: ThreadData;
  person: PersonData | null;
  labels: string[];
  agentTurn: {
    id: string;
    status: string;
    threadId: string;
    messageId: string | null;
    createdAt: string;
    agent: { id: string; name: string; mode: 'DRAFT' | 'AUTO' | 'SUPERVISED' };
  };
}

/** Event kind → the data its domain event carries. */
export interface EventDataByKind {
  'message.received': MessageEventData;
  'message.sent': MessageEventData;
  'message.status_changed': StatusChangedData;
  'thread.created': MessageEventData;
  'email.opened': EmailOpenedData;
  'attachment.extracted': AttachmentExtractedData;
  'contact.merged': ContactMergedData;
  'email_account.health_changed': EmailAccountHealthData;
  'agent_turn.awaiting_approval': AgentTurnData;
  'agent_turn.sent': AgentTurnData;
}
