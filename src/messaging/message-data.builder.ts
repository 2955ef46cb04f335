import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AttachmentRef, EmailHeaders, EventMessage, IdentityData, MessageEventData, PersonData, SerializedMessage, ThreadData } from '../events/event-payloads';
import {
  AttachmentRow,
  EventDataLimits,
  EventMessageRow,
  EventThreadRow,
  IdentityRow,
  JsonRow,
  MessageDataRepository,
  MessageEventRow,
  MessageRow,
  PersonRow,
} from './message-data.repository';

/** recentMessages carries at most this many (an endpoint trims further to its messageHistoryCount). */
export const MAX_RECENT_MESSAGES = 50;

/**
 * What one event's data may hold, so that the largest payload has a known bound (docs/webhooks.md,
 * "Payload size"). Characters are Unicode code points. A cut body says so (`bodyTruncated`); the
 * whole message stays available with get_message, the whole file's text with read_attachment.
 */
export const EVENT_LIMITS = {
  /** `message.body` of the event's own message. */
  messageBodyChars: 16_384,
  /** `body` of each `thread.recentMessages` entry. */
  recentMessageBodyChars: 1_024,
  /** `thread.subject` and each email header value (RFC 5322's longest line). */
  headerChars: 998,
  /** `emailHeaders.references`: the first (the thread's root) and the latest ones, as in our own replies. */
  references: 30,
  /** `attachments` of the message, in their order. */
  attachments: 100,
  /** An attachment's `filename` and `mimeType`. */
  attachmentNameChars: 255,
} as const;

/** The limits as the repository's statements take them. */
const LIMITS: EventDataLimits = { recentMessages: MAX_RECENT_MESSAGES, ...EVENT_LIMITS };

export function serializeMessage(m: MessageRow): SerializedMessage {
  return {
    id: m.id,
    threadId: m.thread_id,
    channel: m.channel,
    direction: m.direction,
    status: m.status,
    body: m.body,
    createdAt: m.created_at.toISOString(),
    sentAt: m.sent_at?.toISOString() ?? null,
    fromIdentity: { value: m.from_value, kind: m.from_kind },
    toIdentity: { value: m.to_value, kind: m.to_kind },
  };
}

function eventMessage(m: EventMessageRow): EventMessage {
  return { ...serializeMessage(m), bodyTruncated: m.body_truncated };
}

/**
 * Builds the full (verbose) data of a message-centred event from the database, inside the
 * transaction that publishes it, so the event shows the state that change committed.
 */
@Injectable()
export class MessageDataBuilder {
  constructor(private readonly repository: MessageDataRepository) {}

  /** Everything in one statement: an inbound message's transaction waits on this round trip. */
  async build(messageId: string, manager: EntityManager): Promise<MessageEventData> {
    return (await this.buildMany([messageId], manager))[0];
  }

  /** build() of each message, in the order given, in one statement (for messages of distinct threads recorded together). */
  async buildMany(messageIds: string[], manager: EntityManager): Promise<MessageEventData[]> {
    const rows = await this.repository.messageEvents(manager, messageIds, LIMITS);
    const byId = new Map(rows.map((row) => [row.message.id, row]));
    return messageIds.map((id) => {
      const row = byId.get(id);
      if (!row) throw new Error(`message ${id} does not exist`);
      return toEventData(row);
    });
  }

  /** Thread, person and labels only: for agent turns, which carry no message. */
  async buildThreadEnvelope(threadId: string, manager: EntityManager): Promise<{ thread: ThreadData; person: PersonData | null; labels: string[] }> {
    const thread = await this.thread(threadId, manager);
    const person = await this.person(threadId, manager);
    const labels = await this.repository.labels(manager, threadId);
    const recent = await this.recentMessages(threadId, manager);
    return { thread: { ...thread, recentMessages: recent }, person, labels: labels.map((l) => l.name) };
  }

  private async thread(threadId: string, manager: EntityManager): Promise<Omit<ThreadData, 'recentMessages'>> {
    return toThread(await this.repository.thread(manager, threadId, LIMITS));
  }

  /** The thread's partner: their contact with every identity, or an orphan identity (id null). */
  async person(threadId: string, manager: EntityManager): Promise<PersonData | null> {
    const partner = await this.repository.partner(manager, threadId);
    if (!partner) return null;
    const identities = partner.contact_id ? await this.repository.contactIdentities(manager, partner.contact_id) : [];
    return toPerson(partner, identities);
  }

  private async recentMessages(threadId: string, manager: EntityManager): Promise<EventMessage[]> {
    const rows = await this.repository.recentMessages(manager, threadId, LIMITS);
    return rows.map(eventMessage);
  }
}

function toEventData({ message, thread, person, labels, recent, attachments }: MessageEventRow): MessageEventData {
  const emailHeaders: EmailHeaders | null =
    message.channel === 'EMAIL'
      ? {
          messageId: message.header_message_id,
          inReplyTo: message.header_in_reply_to,
          references: message.header_references,
          listUnsubscribe: message.header_list_unsubscribe,
          authentication: { spf: message.auth_spf, dkim: message.auth_dkim, dmarc: message.auth_dmarc },
        }
      : null;
  return {
    thread: { ...toThread({ ...thread, last_message_at: new Date(thread.last_message_at) }), recentMessages: recent.map(fromJson).map(eventMessage) },
    person: person && toPerson(person, person.contact_identities ?? []),
    labels: labels.map((l) => l.name),
    message: eventMessage(fromJson(message)),
    attachments: attachments.map(toAttachment),
    emailHeaders,
    labelConfidence: Object.fromEntries(labels.map((l) => [l.name, l.confidence])),
  };
}

function toThread(t: EventThreadRow): Omit<ThreadData, 'recentMessages'> {
  return { id: t.id, subject: t.subject, lastMessageAt: t.last_message_at.toISOString(), messageCount: t.message_count };
}

/** A contact with every identity, or (no contact) the orphan identity alone, with id null. */
function toPerson(partner: PersonRow, contactIdentities: IdentityRow[]): PersonData {
  if (!partner.contact_id) {
    return {
      id: null,
      displayName: partner.identity_name ?? partner.value,
      identities: [{ id: partner.identity_id, kind: partner.kind, value: partner.value, displayName: partner.identity_name }],
    };
  }
  return {
    id: partner.contact_id,
    displayName: partner.contact_name ?? partner.identity_name ?? partner.value,
    identities: contactIdentities.map(toIdentity),
  };
}

function toAttachment(a: AttachmentRow): AttachmentRef {
  return { id: a.id, filename: a.filename, mimeType: a.mime_type, sizeBytes: a.size_bytes };
}

/** A message row read through row_to_json: its times arrive as text. */
function fromJson(m: JsonRow<EventMessageRow>): EventMessageRow {
  return { ...m, created_at: new Date(m.created_at), sent_at: m.sent_at === null ? null : new Date(m.sent_at) };
}

export function toIdentity(row: IdentityRow): IdentityData {
  return { id: row.id, kind: row.kind, value: row.value, displayName: row.display_name };
}
