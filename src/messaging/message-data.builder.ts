import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AttachmentRef, EmailHeaders, EventMessage, IdentityData, MessageEventData, PersonData, SerializedMessage, ThreadData } from '../events/event-payloads';

/** recentMessages carries at most this many (an endpoint trims further to its messageHistoryCount). */
export const MAX_RECENT_MESSAGES = 50;

/**
 * What one event's data may hold, so that the largest payload has a known bound (docs/webhooks.md,
 * "Payload size"). Characters are Unicode code points. A cut body says so (`bodyTruncated`); the
 * whole message stays available with get_thread, the whole file with read_attachment.
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

interface MessageRow {
  id: string;
  thread_id: string;
  channel: 'SMS' | 'EMAIL';
  direction: 'INBOUND' | 'OUTBOUND';
  status: string;
  body: string;
  created_at: Date;
  sent_at: Date | null;
  from_value: string;
  from_kind: 'PHONE' | 'EMAIL';
  to_value: string;
  to_kind: 'PHONE' | 'EMAIL';
}

/** A message as an event carries it: its body cut to a limit, and whether it was. */
type EventMessageRow = MessageRow & { body_truncated: boolean };

interface EmailHeaderRow {
  header_message_id: string | null;
  header_in_reply_to: string | null;
  header_references: string[];
  header_list_unsubscribe: string | null;
  auth_spf: string | null;
  auth_dkim: string | null;
  auth_dmarc: string | null;
}

interface ThreadRow {
  id: string;
  subject: string | null;
  last_message_at: Date;
  message_count: number;
}

interface PersonRow {
  identity_id: string;
  kind: 'PHONE' | 'EMAIL';
  value: string;
  identity_name: string | null;
  contact_id: string | null;
  contact_name: string | null;
}

type IdentityRow = { id: string; kind: 'PHONE' | 'EMAIL'; value: string; display_name: string | null };
type LabelRow = { name: string; confidence: number };
type AttachmentRow = { id: string; filename: string; mime_type: string; size_bytes: number };
type JsonPersonRow = PersonRow & { contact_identities: IdentityRow[] | null };

/** A row as row_to_json gives it: timestamps are ISO text, not Dates. */
type JsonRow<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

/** A message's columns for an event, its body cut to `maxChars` (a SQL parameter): a long body is never read whole. */
function eventMessageColumns(maxChars: string): string {
  return `m.id, m.thread_id, m.channel, m.direction, m.status, left(m.body, ${maxChars}) AS body,
    char_length(m.body) > ${maxChars} AS body_truncated, m.created_at, m.sent_at, m.from_value, m.from_kind, m.to_value, m.to_kind`;
}

/** A thread's columns for an event, its subject cut to the header limit. */
const THREAD_COLUMNS = `id, left(subject, ${EVENT_LIMITS.headerChars}) AS subject, last_message_at, message_count`;

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
  /** Everything in one statement: an inbound message's transaction waits on this round trip. */
  async build(messageId: string, manager: EntityManager): Promise<MessageEventData> {
    const [row]: Array<{
      message: JsonRow<EventMessageRow> & EmailHeaderRow;
      thread: JsonRow<ThreadRow>;
      person: JsonPersonRow | null;
      labels: LabelRow[];
      recent: JsonRow<EventMessageRow>[];
      attachments: AttachmentRow[];
    }> = await manager.query(
      `WITH m AS (
           SELECT ${eventMessageColumns('$3')},
                  left(m.header_message_id, $5) AS header_message_id, left(m.header_in_reply_to, $5) AS header_in_reply_to,
                  ARRAY(SELECT left(r.id, $5) FROM unnest(m.header_references) WITH ORDINALITY AS r(id, n)
                         WHERE r.n = 1 OR r.n > cardinality(m.header_references) - ($6 - 1) ORDER BY r.n) AS header_references,
                  left(m.header_list_unsubscribe, $5) AS header_list_unsubscribe, m.auth_spf, m.auth_dkim, m.auth_dmarc
             FROM messages m WHERE m.id = $1)
         SELECT row_to_json(m) AS message,
                (SELECT row_to_json(t) FROM (SELECT ${THREAD_COLUMNS} FROM threads WHERE id = m.thread_id) t) AS thread,
                (SELECT row_to_json(p) FROM (
                   SELECT i.id AS identity_id, i.kind, i.value, i.display_name AS identity_name, c.id AS contact_id, c.display_name AS contact_name,
                          (SELECT json_agg(ci ORDER BY ci.created_at, ci.id)
                             FROM (SELECT id, kind, value, display_name, created_at FROM identities WHERE contact_id = c.id) ci) AS contact_identities
                     FROM threads t JOIN identities i ON i.id = t.partner_identity_id LEFT JOIN contacts c ON c.id = i.contact_id
                    WHERE t.id = m.thread_id) p) AS person,
                (SELECT COALESCE(json_agg(l ORDER BY l.name), '[]')
                   FROM (SELECT l.name, tl.confidence FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = m.thread_id) l) AS labels,
                (SELECT COALESCE(json_agg(r ORDER BY r.created_at, r.id), '[]')
                   FROM (SELECT ${eventMessageColumns('$4')} FROM messages m WHERE m.thread_id = (SELECT thread_id FROM m)
                          ORDER BY m.created_at DESC, m.id DESC LIMIT $2) r) AS recent,
                (SELECT COALESCE(json_agg(a ORDER BY a.created_at, a.id), '[]')
                   FROM (SELECT id, left(filename, $8) AS filename, left(mime_type, $8) AS mime_type, size_bytes, created_at
                           FROM attachments WHERE message_id = m.id ORDER BY created_at, id LIMIT $7) a) AS attachments
           FROM m`,
      [
        messageId,
        MAX_RECENT_MESSAGES,
        EVENT_LIMITS.messageBodyChars,
        EVENT_LIMITS.recentMessageBodyChars,
        EVENT_LIMITS.headerChars,
        EVENT_LIMITS.references,
        EVENT_LIMITS.attachments,
        EVENT_LIMITS.attachmentNameChars,
      ],
    );
    if (!row) throw new Error(`message ${messageId} does not exist`);
    const { message, thread, person, labels, recent, attachments } = row;
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

  /** Thread, person and labels only: for agent turns, which carry no message. */
  async buildThreadEnvelope(threadId: string, manager: EntityManager): Promise<{ thread: ThreadData; person: PersonData | null; labels: string[] }> {
    const thread = await this.thread(threadId, manager);
    const person = await this.person(threadId, manager);
    const labels = await this.labels(threadId, manager);
    const recent = await this.recentMessages(threadId, manager);
    return { thread: { ...thread, recentMessages: recent }, person, labels: labels.map((l) => l.name) };
  }

  private async thread(threadId: string, manager: EntityManager): Promise<Omit<ThreadData, 'recentMessages'>> {
    const [t]: ThreadRow[] = await manager.query(`SELECT ${THREAD_COLUMNS} FROM threads WHERE id = $1`, [threadId]);
    return toThread(t);
  }

  /** The thread's partner: their contact with every identity, or an orphan identity (id null). */
  async person(threadId: string, manager: EntityManager): Promise<PersonData | null> {
    const [partner]: PersonRow[] = await manager.query(
      `SELECT i.id AS identity_id, i.kind, i.value, i.display_name AS identity_name, c.id AS contact_id, c.display_name AS contact_name
         FROM threads t JOIN identities i ON i.id = t.partner_identity_id LEFT JOIN contacts c ON c.id = i.contact_id
        WHERE t.id = $1`,
      [threadId],
    );
    if (!partner) return null;
    const identities: IdentityRow[] = partner.contact_id
      ? await manager.query(`SELECT id, kind, value, display_name FROM identities WHERE contact_id = $1 ORDER BY created_at, id`, [partner.contact_id])
      : [];
    return toPerson(partner, identities);
  }

  private labels(threadId: string, manager: EntityManager): Promise<LabelRow[]> {
    return manager.query(`SELECT l.name, tl.confidence FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = $1 ORDER BY l.name`, [
      threadId,
    ]);
  }

  private async recentMessages(threadId: string, manager: EntityManager): Promise<EventMessage[]> {
    const rows: EventMessageRow[] = await manager.query(
      `SELECT * FROM (SELECT ${eventMessageColumns('$3')} FROM messages m WHERE m.thread_id = $1 ORDER BY m.created_at DESC, m.id DESC LIMIT $2) r
        ORDER BY r.created_at, r.id`,
      [threadId, MAX_RECENT_MESSAGES, EVENT_LIMITS.recentMessageBodyChars],
    );
    return rows.map(eventMessage);
  }
}

function toThread(t: ThreadRow): Omit<ThreadData, 'recentMessages'> {
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
