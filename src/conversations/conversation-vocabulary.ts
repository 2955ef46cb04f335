/**
 * The conversation vocabulary: the channel, direction and identity kinds, and the message,
 * thread, person and identity views in their fullest (verbose) form, as the spec's "Shared data
 * objects" define them. Conversations build them; events carry them (events/event-payloads.ts),
 * delivery cuts them down for concise mode, tools and pages show them. Types only: importing
 * this file loads no code.
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
  /** A scheduled send's time: given by the tools' reads when the message was sent with sendAt (not in event payloads). */
  sendAt?: string;
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
