import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import {
  AttachmentRef, EmailHeaders, IdentityData, MessageEventData, PersonData, SerializedMessage, ThreadData,
} from '../events/event-payloads';

/** recentMessages carries at most this many (an endpoint trims further to its messageHistoryCount). */
export const MAX_RECENT_MESSAGES = 50;

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

const MESSAGE_COLUMNS = `m.id, m.thread_id, m.channel, m.direction, m.status, m.body, m.created_at, m.sent_at,
  m.from_value, m.from_kind, m.to_value, m.to_kind`;

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

/**
 * Builds the full (verbose) data of a message-centred event from the database, inside the
 * transaction that publishes it, so the event shows the state that change committed.
 */
@Injectable()
export class MessageDataBuilder {
  /** Everything in one statement: an inbound message's transaction waits on this round trip. */
  async build(messageId: string, manager: EntityManager): Promise<MessageEventData> {
    const [row]: Array<{ message: JsonRow<MessageRow> & EmailHeaderRow; thread: JsonRow<ThreadRow>; person: JsonPersonRow | null; labels: LabelRow[]; recent: JsonRow<MessageRow>[]; attachments: AttachmentRow[] }> =
      await manager.query(
        `WITH m AS (
           SELECT ${MESSAGE_COLUMNS}, m.header_message_id, m.header_in_reply_to, m.header_references, m.header_list_unsubscribe,
                  m.auth_spf, m.auth_dkim, m.auth_dmarc
             FROM messages m WHERE m.id = $1)
         SELECT row_to_json(m) AS message,
                (SELECT row_to_json(t) FROM (SELECT id, subject, last_message_at, message_count FROM threads WHERE id = m.thread_id) t) AS thread,
                (SELECT row_to_json(p) FROM (
                   SELECT i.id AS identity_id, i.kind, i.value, i.display_name AS identity_name, c.id AS contact_id, c.display_name AS contact_name,
                          (SELECT json_agg(ci ORDER BY ci.created_at, ci.id)
                             FROM (SELECT id, kind, value, display_name, created_at FROM identities WHERE contact_id = c.id) ci) AS contact_identities
                     FROM threads t JOIN identities i ON i.id = t.partner_identity_id LEFT JOIN contacts c ON c.id = i.contact_id
                    WHERE t.id = m.thread_id) p) AS person,
                (SELECT COALESCE(json_agg(l ORDER BY l.name), '[]')
                   FROM (SELECT l.name, tl.confidence FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = m.thread_id) l) AS labels,
                (SELECT COALESCE(json_agg(r ORDER BY r.created_at, r.id), '[]')
                   FROM (SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.thread_id = (SELECT thread_id FROM m)
                          ORDER BY m.created_at DESC, m.id DESC LIMIT $2) r) AS recent,
                (SELECT COALESCE(json_agg(a ORDER BY a.created_at, a.id), '[]')
                   FROM (SELECT id, filename, mime_type, size_bytes, created_at FROM attachments WHERE message_id = m.id) a) AS attachments
           FROM m`,
        [messageId, MAX_RECENT_MESSAGES],
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
      thread: { ...toThread({ ...thread, last_message_at: new Date(thread.last_message_at) }), recentMessages: recent.map(fromJson).map(serializeMessage) },
      person: person && toPerson(person, person.contact_identities ?? []),
      labels: labels.map((l) => l.name),
      message: serializeMessage(fromJson(message)),
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
    const [t]: ThreadRow[] = await manager.query(`SELECT id, subject, last_message_at, message_count FROM threads WHERE id = $1`, [threadId]);
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
    return manager.query(
      `SELECT l.name, tl.confidence FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = $1 ORDER BY l.name`,
      [threadId],
    );
  }

  private async recentMessages(threadId: string, manager: EntityManager): Promise<SerializedMessage[]> {
    const rows: MessageRow[] = await manager.query(
      `SELECT * FROM (SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.thread_id = $1 ORDER BY m.created_at DESC, m.id DESC LIMIT $2) r
        ORDER BY r.created_at, r.id`,
      [threadId, MAX_RECENT_MESSAGES],
    );
    return rows.map(serializeMessage);
  }

  private async attachments(messageId: string, manager: EntityManager): Promise<AttachmentRef[]> {
    const rows: AttachmentRow[] = await manager.query(
      `SELECT id, filename, mime_type, size_bytes FROM attachments WHERE message_id = $1 ORDER BY created_at, id`,
      [messageId],
    );
    return rows.map(toAttachment);
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
function fromJson(m: JsonRow<MessageRow>): MessageRow {
  return { ...m, created_at: new Date(m.created_at), sent_at: m.sent_at === null ? null : new Date(m.sent_at) };
}

export function toIdentity(row: IdentityRow): IdentityData {
  return { id: row.id, kind: row.kind, value: row.value, displayName: row.display_name };
}
