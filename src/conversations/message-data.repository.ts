import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { inValues, queryNamed } from '../database/sql';
import { SqlEventData } from '../events/domain-event';
import { Channel, Direction, IdentityKind, PersonData, ThreadData } from './conversation-vocabulary';
import { MessageEventData } from '../events/event-payloads';

/** A message's columns, as serializeMessage reads them. */
export interface MessageRow {
  id: string;
  thread_id: string;
  channel: Channel;
  direction: Direction;
  status: string;
  body: string;
  created_at: Date;
  sent_at: Date | null;
  /** A scheduled send's time (tools' reads select it; event payloads do not carry it). */
  send_at?: Date | null;
  from_value: string;
  from_kind: IdentityKind;
  to_value: string;
  to_kind: IdentityKind;
}

export type IdentityRow = { id: string; kind: IdentityKind; value: string; display_name: string | null };
export type LabelRow = { name: string; confidence: number };

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

/** A timestamp as JavaScript's Date.prototype.toISOString writes it: UTC, milliseconds (cut, as a Date cuts them), "Z". */
function isoTime(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** A message as events carry it (EventMessage), from the message row `m`, its body cut to `maxChars` (a `:named` parameter). */
function eventMessageJson(m: string, maxChars: string): string {
  return `json_build_object('id', ${m}.id, 'threadId', ${m}.thread_id, 'channel', ${m}.channel, 'direction', ${m}.direction,
    'status', ${m}.status, 'body', left(${m}.body, ${maxChars}), 'createdAt', ${isoTime(`${m}.created_at`)}, 'sentAt', ${isoTime(`${m}.sent_at`)},
    'fromIdentity', json_build_object('value', ${m}.from_value, 'kind', ${m}.from_kind),
    'toIdentity', json_build_object('value', ${m}.to_value, 'kind', ${m}.to_kind),
    'bodyTruncated', char_length(${m}.body) > ${maxChars})`;
}

/** An identity as events carry it (IdentityData), from the identity row `i`. */
function identityJson(i: string): string {
  return `json_build_object('id', ${i}.id, 'kind', ${i}.kind, 'value', ${i}.value, 'displayName', ${i}.display_name)`;
}

/** The thread row `t` as events carry it (ThreadData), with its latest messages, oldest first. */
function threadJson(t: string): string {
  const recent = `(SELECT COALESCE(json_agg(${eventMessageJson('r', ':recentMessageBodyChars')} ORDER BY r.created_at, r.id), '[]')
      FROM (SELECT id, thread_id, channel, direction, status, body, created_at, sent_at, from_value, from_kind, to_value, to_kind
              FROM messages WHERE thread_id = ${t}.id ORDER BY created_at DESC, id DESC LIMIT :recentMessages) r)`;
  return `json_build_object('id', ${t}.id, 'subject', left(${t}.subject, :headerChars), 'lastMessageAt', ${isoTime(`${t}.last_message_at`)},
      'messageCount', ${t}.message_count, 'recentMessages', ${recent})`;
}

/** The partner of the thread row `t` (PersonData): their contact with every identity, or the orphan identity alone (id null); null if none. */
function personJson(t: string): string {
  return `(SELECT CASE WHEN c.id IS NULL
        THEN json_build_object('id', NULL, 'displayName', COALESCE(i.display_name, i.value), 'identities', json_build_array(${identityJson('i')}))
        ELSE json_build_object('id', c.id, 'displayName', COALESCE(c.display_name, i.display_name, i.value), 'identities',
               (SELECT COALESCE(json_agg(${identityJson('ci')} ORDER BY ci.created_at, ci.id), '[]') FROM identities ci WHERE ci.contact_id = c.id))
        END
      FROM identities i LEFT JOIN contacts c ON c.id = i.contact_id WHERE i.id = ${t}.partner_identity_id)`;
}

/** The names of the labels of the thread row `t`, by name. */
function labelsJson(t: string): string {
  return `(SELECT COALESCE(json_agg(l.name ORDER BY l.name), '[]') FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = ${t}.id)`;
}

/**
 * The event data of the message row `m` in its thread row `t` (MessageEventData, verbose), cut to
 * the `:named` limits of EventDataLimits. The one place this shape is made: the delivery payload
 * builders cut it down for concise mode.
 */
function messageEventData(m: string, t: string): string {
  const labelConfidence = `(SELECT COALESCE(json_object_agg(l.name, tl.confidence ORDER BY l.name), '{}')
      FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = ${t}.id)`;
  const attachments = `(SELECT COALESCE(json_agg(json_build_object('id', a.id, 'filename', left(a.filename, :attachmentNameChars),
        'mimeType', left(a.mime_type, :attachmentNameChars), 'sizeBytes', a.size_bytes) ORDER BY a.created_at, a.id), '[]')
      FROM (SELECT id, filename, mime_type, size_bytes, created_at FROM attachments WHERE message_id = ${m}.id ORDER BY created_at, id LIMIT :attachments) a)`;
  // The first reference (the thread's root) and the latest ones, as in our own replies.
  const references = `ARRAY(SELECT left(r.id, :headerChars) FROM unnest(${m}.header_references) WITH ORDINALITY AS r(id, n)
      WHERE r.n = 1 OR r.n > cardinality(${m}.header_references) - (:references - 1) ORDER BY r.n)`;
  const emailHeaders = `CASE WHEN ${m}.channel = 'EMAIL' THEN json_build_object('messageId', left(${m}.header_message_id, :headerChars),
      'inReplyTo', left(${m}.header_in_reply_to, :headerChars), 'references', ${references},
      'listUnsubscribe', left(${m}.header_list_unsubscribe, :headerChars),
      'authentication', json_build_object('spf', ${m}.auth_spf, 'dkim', ${m}.auth_dkim, 'dmarc', ${m}.auth_dmarc)) END`;
  return `json_build_object('thread', ${threadJson(t)}, 'person', ${personJson(t)}, 'labels', ${labelsJson(t)},
    'message', ${eventMessageJson(m, ':messageBodyChars')}, 'attachments', ${attachments}, 'emailHeaders', ${emailHeaders},
    'labelConfidence', ${labelConfidence})`;
}

/**
 * SQL of event data. Every method acts for the system, by id, on a message or thread whose
 * access was settled before (an ingested message, a change the caller's transaction made or a
 * thread it checked), inside the transaction that publishes the event.
 */
@Injectable()
export class MessageDataRepository {
  /**
   * Each message's event data, built in one statement: rows of (key: the message id, data), in no
   * particular order, and none for an id that is no message. Publishing gives this statement to the
   * outbox (EventBus.publishAllFrom), so an inbound message's data, which carries its thread's
   * recent messages, is built and stored without crossing to Node and back.
   */
  eventDataSource(messageIds: string[], limits: EventDataLimits): SqlEventData {
    const ids = inValues('m.id', 'messageIds', messageIds, 'uuid');
    return {
      sql: `SELECT m.id::text AS key, ${messageEventData('m', 't')} AS data
              FROM messages m JOIN threads t ON t.id = m.thread_id
             WHERE ${ids.sql}`,
      parameters: {
        ...ids.parameters,
        recentMessages: limits.recentMessages,
        messageBodyChars: limits.messageBodyChars,
        recentMessageBodyChars: limits.recentMessageBodyChars,
        headerChars: limits.headerChars,
        references: limits.references,
        attachments: limits.attachments,
        attachmentNameChars: limits.attachmentNameChars,
      },
    };
  }

  /** eventDataSource's rows, read. */
  messageEventData(manager: EntityManager, messageIds: string[], limits: EventDataLimits): Promise<Array<{ key: string; data: MessageEventData }>> {
    const { sql, parameters } = this.eventDataSource(messageIds, limits);
    return queryNamed(manager, sql, parameters);
  }

  /** A thread, its partner and its labels, as agent-turn events carry them; null when there is no such thread. */
  async threadEnvelope(
    manager: EntityManager,
    threadId: string,
    limits: Pick<EventDataLimits, 'headerChars' | 'recentMessages' | 'recentMessageBodyChars'>,
  ): Promise<{ thread: ThreadData; person: PersonData | null; labels: string[] } | null> {
    const [row] = await queryNamed<Array<{ thread: ThreadData; person: PersonData | null; labels: string[] }>>(
      manager,
      `SELECT ${threadJson('t')} AS thread, ${personJson('t')} AS person, ${labelsJson('t')} AS labels FROM threads t WHERE t.id = :threadId`,
      { threadId, headerChars: limits.headerChars, recentMessages: limits.recentMessages, recentMessageBodyChars: limits.recentMessageBodyChars },
    );
    return row ?? null;
  }

  /** The thread's partner (PersonData); null when there is no such thread or it has no partner. */
  async person(manager: EntityManager, threadId: string): Promise<PersonData | null> {
    const [row] = await queryNamed<Array<{ person: PersonData | null }>>(manager, `SELECT ${personJson('t')} AS person FROM threads t WHERE t.id = :threadId`, {
      threadId,
    });
    return row?.person ?? null;
  }
}
