/**
 * The data each event kind carries, built from the conversation vocabulary
 * (conversations/conversation-vocabulary.ts) in its fullest (verbose) form. A domain event carries
 * these; the delivery payload builders cut them down for concise mode.
 */
import { AttachmentRef, EmailHeaders, EventMessage, IdentityData, PersonData, ThreadData } from '../conversations/conversation-vocabulary';

/** The parts of an event's data the delivery payload builders cut down: they read them here, on the event bus, never from conversations/. */
export type { PersonData, ThreadData };

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
    /**
     * The agent that took the turn. On a draft-only credential's draft (`credential` present), the
     * credential acting as a DRAFT-mode agent: its id and name, mode DRAFT (not an agent of list_agents).
     */
    agent: { id: string; name: string; mode: 'DRAFT' | 'AUTO' | 'SUPERVISED' };
    /** A draft-only credential's draft (issue 45): the API key or app whose send it holds. Absent on an agent's turn. */
    credential?: { id: string; name: string; kind: 'API_KEY' | 'OAUTH_GRANT' };
    /** agent_turn.rejected only: why the person rejected it, or null when they did not say. */
    rejectionReason?: string | null;
  };
}

/** sms.opted_out and sms.opted_in: a number's opt-out of SMS from a line changed (docs/opt-out.md). */
export interface SmsOptOutData {
  optOut: {
    lineId: string;
    lineNumber: string;
    number: string;
    optedOut: boolean;
    keyword: string;
    changedAt: string;
    threadId: string | null;
    messageId: string | null;
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
  'sms.opted_out': SmsOptOutData;
  'sms.opted_in': SmsOptOutData;
  'agent_turn.rejected': AgentTurnData;
}
