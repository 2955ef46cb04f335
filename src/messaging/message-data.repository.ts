import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { inValues, queryNamed } from '../database/sql';

/** A message's columns, as serializeMessage reads them. */
export interface MessageRow {
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
export type EventMessageRow = MessageRow & { body_truncated: boolean };

export interface EmailHeaderRow {
  header_message_id: string | null;
  header_in_reply_to: string | null;
  header_references: string[];
  header_list_unsubscribe: string | null;
  auth_spf: string | null;
  auth_dkim: string | null;
  auth_dmarc: string | null;
}

export interface EventThreadRow {
  id: string;
  subject: string | null;
  last_message_at: Date;
  message_count: number;
}

/** A thread's partner: their identity and its contact, if any. */
export interface PersonRow {
  identity_id: string;
  kind: 'PHONE' | 'EMAIL';
  value: string;
  identity_name: string | null;
  contact_id: string | null;
  contact_name: string | null;
}

export type IdentityRow = { id: string; kind: 'PHONE' | 'EMAIL'; value: string; display_name: string | null };
export type LabelRow = { name: string; confidence: number };
export type AttachmentRow = { id: string; filename: string; mime_type: string; size_bytes: number };
export type JsonPersonRow = PersonRow & { contact_identities: IdentityRow[] | null };

/** A row as row_to_json gives it: timestamps are ISO text, not Dates. */
export type JsonRow<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

/** Everything a message-centred event's data is built from, read in one statement. */
export interface MessageEventRow {
  message: JsonRow<EventMessageRow> & EmailHeaderRow;
  thread: JsonRow<EventThreadRow>;
  person: JsonPersonRow | null;
  labels: LabelRow[];
  recent: JsonRow<EventMessageRow>[];
  attachments: AttachmentRow[];
}

/**
 * How much of a thread and its messages the reads take (MessageDataBuilder's EVENT_LIMITS and
 * MAX_RECENT_MESSAGES): each is a parameter of the statements, which cut in SQL, so a long body
 * is never read whole.
 */
export interface EventDataLimits {
  recentMessages: number;
  messageBodyChars: number;
  recentMessageBodyChars: number;
  headerChars: number;
  references: number;
  attachments: number;
  attachmentNameChars: number;
}

/** A message's columns for an event, its body cut to `maxChars` (a `:named` parameter). */
function eventMessageColumns(maxChars: string): string {
  return `m.id, m.thread_id, m.channel, m.direction, m.status, left(m.body, ${maxChars}) AS body,
    char_length(m.body) > ${maxChars} AS body_truncated, m.created_at, m.sent_at, m.from_value, m.from_kind, m.to_value, m.to_kind`;
}

/** A thread's columns for an event, its subject cut to the header limit. */
const THREAD_COLUMNS = `id, left(subject, :headerChars) AS subject, last_message_at, message_count`;

/**
 * SQL of event data. Every method acts for the system, by id, on a message or thread whose
 * access was settled before (an ingested message, a change the caller's transaction made or a
 * thread it checked), inside the transaction that publishes the event.
 */
@Injectable()
export class MessageDataRepository {
  /**
   * Each message with its thread, partner, labels, recent messages and attachments, in one
   * statement; in no particular order, and none for an id that is no message.
   */
  messageEvents(manager: EntityManager, messageIds: string[], limits: EventDataLimits): Promise<MessageEventRow[]> {
    const ids = inValues('m.id', 'messageIds', messageIds, 'uuid');
    return queryNamed<MessageEventRow[]>(
      manager,
      `WITH em AS (
           SELECT ${eventMessageColumns(':messageBodyChars')},
                  left(m.header_message_id, :headerChars) AS header_message_id, left(m.header_in_reply_to, :headerChars) AS header_in_reply_to,
                  ARRAY(SELECT left(r.id, :headerChars) FROM unnest(m.header_references) WITH ORDINALITY AS r(id, n)
                         WHERE r.n = 1 OR r.n > cardinality(m.header_references) - (:references - 1) ORDER BY r.n) AS header_references,
                  left(m.header_list_unsubscribe, :headerChars) AS header_list_unsubscribe, m.auth_spf, m.auth_dkim, m.auth_dmarc
             FROM messages m WHERE ${ids.sql})
         SELECT row_to_json(em) AS message,
                (SELECT row_to_json(t) FROM (SELECT ${THREAD_COLUMNS} FROM threads WHERE id = em.thread_id) t) AS thread,
                (SELECT row_to_json(p) FROM (
                   SELECT i.id AS identity_id, i.kind, i.value, i.display_name AS identity_name, c.id AS contact_id, c.display_name AS contact_name,
                          (SELECT json_agg(ci ORDER BY ci.created_at, ci.id)
                             FROM (SELECT id, kind, value, display_name, created_at FROM identities WHERE contact_id = c.id) ci) AS contact_identities
                     FROM threads t JOIN identities i ON i.id = t.partner_identity_id LEFT JOIN contacts c ON c.id = i.contact_id
                    WHERE t.id = em.thread_id) p) AS person,
                (SELECT COALESCE(json_agg(l ORDER BY l.name), '[]')
                   FROM (SELECT l.name, tl.confidence FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = em.thread_id) l) AS labels,
                (SELECT COALESCE(json_agg(r ORDER BY r.created_at, r.id), '[]')
                   FROM (SELECT ${eventMessageColumns(':recentMessageBodyChars')} FROM messages m WHERE m.thread_id = em.thread_id
                          ORDER BY m.created_at DESC, m.id DESC LIMIT :recentMessages) r) AS recent,
                (SELECT COALESCE(json_agg(a ORDER BY a.created_at, a.id), '[]')
                   FROM (SELECT id, left(filename, :attachmentNameChars) AS filename, left(mime_type, :attachmentNameChars) AS mime_type, size_bytes, created_at
                           FROM attachments WHERE message_id = em.id ORDER BY created_at, id LIMIT :attachments) a) AS attachments
           FROM em`,
      {
        ...ids.parameters,
        recentMessages: limits.recentMessages,
        messageBodyChars: limits.messageBodyChars,
        recentMessageBodyChars: limits.recentMessageBodyChars,
        headerChars: limits.headerChars,
        references: limits.references,
        attachments: limits.attachments,
        attachmentNameChars: limits.attachmentNameChars,
      },
    );
  }

  async thread(manager: EntityManager, threadId: string, limits: Pick<EventDataLimits, 'headerChars'>): Promise<EventThreadRow> {
    const [thread] = await queryNamed<EventThreadRow[]>(manager, `SELECT ${THREAD_COLUMNS} FROM threads WHERE id = :threadId`, {
      threadId,
      headerChars: limits.headerChars,
    });
    return thread;
  }

  /** The thread's partner identity and its contact; null when there is no such thread. */
  async partner(manager: EntityManager, threadId: string): Promise<PersonRow | null> {
    const [partner] = await queryNamed<PersonRow[]>(
      manager,
      `SELECT i.id AS identity_id, i.kind, i.value, i.display_name AS identity_name, c.id AS contact_id, c.display_name AS contact_name
         FROM threads t JOIN identities i ON i.id = t.partner_identity_id LEFT JOIN contacts c ON c.id = i.contact_id
        WHERE t.id = :threadId`,
      { threadId },
    );
    return partner ?? null;
  }

  /** Every identity of the contact (a partner's, as partner answered it), oldest first. */
  contactIdentities(manager: EntityManager, contactId: string): Promise<IdentityRow[]> {
    return queryNamed(manager, `SELECT id, kind, value, display_name FROM identities WHERE contact_id = :contactId ORDER BY created_at, id`, { contactId });
  }

  labels(manager: EntityManager, threadId: string): Promise<LabelRow[]> {
    return queryNamed(
      manager,
      `SELECT l.name, tl.confidence FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = :threadId ORDER BY l.name`,
      { threadId },
    );
  }

  /** The thread's latest messages, oldest first, their bodies cut. */
  recentMessages(
    manager: EntityManager,
    threadId: string,
    limits: Pick<EventDataLimits, 'recentMessages' | 'recentMessageBodyChars'>,
  ): Promise<EventMessageRow[]> {
    return queryNamed(
      manager,
      `SELECT * FROM (SELECT ${eventMessageColumns(':recentMessageBodyChars')} FROM messages m WHERE m.thread_id = :threadId ORDER BY m.created_at DESC, m.id DESC LIMIT :recentMessages) r
        ORDER BY r.created_at, r.id`,
      { threadId, recentMessages: limits.recentMessages, recentMessageBodyChars: limits.recentMessageBodyChars },
    );
  }
}
