import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../../identity/principal';
import { callerLines } from '../../identity/line-access.sql';
import { KeysetPosition } from '../../common/keyset-cursor';
import { inIndexOrder, queryNamed, SqlCondition } from '../../database/sql';
import { Channel, Direction, IdentityKind } from '../conversation-vocabulary';
import { LabelRow, MessageRow } from '../message-data.repository';
import { CallerThread } from './thread-access.repository';
import { RESULT_BOUNDS } from '../../common/result-bounds';

export interface ThreadRow {
  id: string;
  subject: string | null;
  last_message_at: Date;
  message_count: number;
  channel: Channel;
  line_id: string;
}

/** A thread of list_threads: its partner, its labels' names, and its last message (m_ columns, all null when it has none). */
export type ThreadListRow = ThreadRow & {
  partner_value: string;
  identity_name: string | null;
  contact_id: string | null;
  contact_name: string | null;
  labels: string[];
  m_id: string | null;
  m_thread_id: string;
  m_channel: Channel;
  m_direction: Direction;
  m_status: string;
  /** The start of the body (PREVIEW_SOURCE_CHARS), and whether there was more. */
  m_body: string;
  m_body_cut: boolean;
  m_created_at: Date;
  m_sent_at: Date | null;
  m_from_value: string;
  m_from_kind: IdentityKind;
  m_to_value: string;
  m_to_kind: IdentityKind;
  m_error: string | null;
};

/** A message of get_thread: its body cut to the page's maxBodyChars, and whether it was. */
export type BoundedMessageRow = MessageRow & { body_truncated: boolean; error: string | null };

/** get_message's message: a window of its body, the body's whole length, its subject and (when FAILED) why. */
export type MessageWindowRow = MessageRow & { body_length: number; subject: string | null; error: string | null };

export interface MessageAttachmentRow {
  id: string;
  message_id: string;
  filename: string;
  mime_type: string;
  size_bytes: number;
  /** How many attachments the message has, listed or not. */
  total: number;
}

/** Why sending failed: set on FAILED messages only (get_thread, get_message, list_threads' last message). */
const FAILURE_REASON = `CASE WHEN m.status = 'FAILED' THEN m.error END AS error`;

const MESSAGE_COLUMNS = `m.id, m.thread_id, m.channel, m.direction, m.status, m.body, m.created_at, m.sent_at, m.send_at,
  m.from_value, m.from_kind, m.to_value, m.to_kind`;

/** get_thread's messages: each body cut to :maxBodyChars, and whether it was. */
const BOUNDED_MESSAGE_COLUMNS = `m.id, m.thread_id, m.channel, m.direction, m.status, left(m.body, :maxBodyChars) AS body,
  char_length(m.body) > :maxBodyChars AS body_truncated, m.created_at, m.sent_at, m.send_at, m.from_value, m.from_kind, m.to_value, m.to_kind, ${FAILURE_REASON}`;

/** A label id no label has (labels' ids are random UUIDs): the label filter's page of a name the org does not know. */
const NO_LABEL_ID = '00000000-0000-0000-0000-000000000000';

/** How much of the last message's body list_threads reads to make its preview (whitespace folds away). */
const PREVIEW_SOURCE_CHARS = 1_000;

/**
 * list_threads' page of one line `pl.line_id`, newest activity first: from the line's recency index
 * (threads_line_recent_idx), or with a label from the label's (thread_labels_label_recent_idx,
 * whose rows carry their thread's line and last activity). Each reads at most the page's rows.
 * The texts are fixed, so each of the eight statements (label or not, line or not, cursor or not)
 * stays prepared.
 */
function linePage(label: boolean, after: boolean): string {
  if (!label) {
    return `SELECT t.id, t.last_message_at FROM threads t
             WHERE t.line_id = pl.line_id ${after ? `AND (t.last_message_at, t.id) < (:afterKey::timestamptz, :afterId::uuid)` : ''}
             ORDER BY t.last_message_at DESC, t.id DESC LIMIT :limit`;
  }
  return `SELECT tl.thread_id AS id, tl.last_message_at FROM thread_labels tl
           WHERE tl.label_id = :labelId AND tl.line_id = pl.line_id
                 ${after ? `AND (tl.last_message_at, tl.thread_id) < (:afterKey::timestamptz, :afterId::uuid)` : ''}
           ORDER BY tl.last_message_at DESC, tl.thread_id DESC LIMIT :limit`;
}

/**
 * The page's thread ids, newest activity first, `:limit` of them: each line's newest merged
 * (linePage), or, among given threads (`:threadIds`, the web app's "awaiting approval" filter: a
 * bounded list the agents feature answers), those threads read by key and sorted, so a line's
 * other threads are never walked to find them.
 */
function pageIds(caller: Principal, input: { lineId?: string; threadIds?: string[]; after?: KeysetPosition }, label: boolean): SqlCondition {
  if (input.threadIds === undefined) {
    const scope = callerLines(caller, 'pl.line_id');
    return {
      sql: `SELECT p.id FROM unnest(:scopeLineIds::uuid[]) AS pl(line_id)
             CROSS JOIN LATERAL (${linePage(label, input.after !== undefined)}) p
             WHERE ${scope.sql} ${input.lineId === undefined ? '' : 'AND pl.line_id = :lineId'}
             ORDER BY p.last_message_at DESC, p.id DESC
             LIMIT :limit`,
      parameters: scope.parameters,
    };
  }
  // Each given thread by key (an OFFSET 0 lateral, which the planner cannot turn into a join that
  // reads every thread), its label by key too (a scalar subquery, probed per thread).
  const scope = callerLines(caller, 't.line_id');
  return {
    sql: `SELECT t.id FROM unnest(:threadIds::uuid[]) AS x(id)
           CROSS JOIN LATERAL (SELECT t.id, t.line_id, t.last_message_at FROM threads t WHERE t.id = x.id OFFSET 0) t
           WHERE ${scope.sql} ${input.lineId === undefined ? '' : 'AND t.line_id = :lineId'}
                 ${label ? 'AND (SELECT true FROM thread_labels tl WHERE tl.thread_id = t.id AND tl.label_id = :labelId)' : ''}
                 ${input.after === undefined ? '' : 'AND (t.last_message_at, t.id) < (:afterKey::timestamptz, :afterId::uuid)'}
           ORDER BY t.last_message_at DESC, t.id DESC
           LIMIT :limit`,
    parameters: { ...scope.parameters, threadIds: input.threadIds },
  };
}

/**
 * Whether label `l` is in view for the caller (list_labels): a thread on a line the caller may
 * see carries it, or no thread carries it. A label found only on threads of other lines is not
 * shown: its name would tell what is said on lines this key may not read (contacts follow the
 * same rule for their identities: contacts.repository.ts).
 *
 * Written as scalar subqueries rather than EXISTS: the planner may run an EXISTS under OR as one
 * hashed pass over every label row of the org, where these probe thread_labels_label_recent_idx
 * once per label (ordered as the index is, so that reading the table until a row of the label
 * turns up never looks cheaper: for a rare label it reads nearly all of it).
 */
function labelInView(caller: Principal): SqlCondition {
  const scope = callerLines(caller, 'vtl.line_id');
  return {
    sql: `(
  (SELECT 1 FROM thread_labels vtl WHERE vtl.label_id = l.id AND ${scope.sql} ORDER BY vtl.line_id LIMIT 1) IS NOT NULL
  OR (SELECT 1 FROM thread_labels vtl WHERE vtl.label_id = l.id ORDER BY vtl.line_id LIMIT 1) IS NULL)`,
    parameters: scope.parameters,
  };
}

/**
 * SQL of reading and labelling threads. list_threads, get_message and list_labels take the
 * `Principal` and keep to the lines it may see (callerLines); every other method takes the thread
 * as ThreadAccessRepository.threadForCaller answered it in the same transaction (and the
 * `Principal` where it touches the org's labels). Rules live in ThreadsService.
 */
@Injectable()
export class ThreadsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Up to `limit` threads of the caller's org on the caller's lines (only `lineId` of them, when
   * given), newest activity first (last_message_at DESC, id DESC), after the keyset position
   * `after`; with `label`, only threads that carry it.
   *
   * Each line's newest `limit` threads are read from an index (linePage) and merged, so the cost is
   * the page times the caller's lines, whatever the org's size: ordering all of the lines' threads
   * at once cannot use an index (the sort keys of several lines interleave), and a sort of every
   * thread took 34 ms at 100,000 threads. The page is cut before anything is joined to it, so a
   * thread's partner, contact, labels and last message are read for the page's threads only: each
   * by key, one page row at a time (OFFSET 0 keeps the planner from flattening the lateral into a
   * join; a generic plan, which cannot know the page's size, estimated it at 1,000 rows and hashed
   * every thread of the org to join them).
   */
  async page(
    caller: Principal,
    input: { lineId?: string; label?: string; threadIds?: string[]; after?: KeysetPosition; limit: number },
  ): Promise<ThreadListRow[]> {
    // The label's id as a value, not a subquery: planned for a value, PostgreSQL knows from its
    // statistics how many rows the label has, and reads a common one's newest from the index
    // rather than all of them to sort (which it did for a label id it could not see).
    if (input.label === undefined) return this.pageOf(this.dataSource.manager, caller, input, undefined);
    const label = input.label;
    return inIndexOrder(this.dataSource, async (manager) => {
      const [found] = await queryNamed<Array<{ id: string }>>(manager, `SELECT id FROM labels WHERE org_id = :orgId AND name = :label`, {
        orgId: caller.orgId,
        label,
      });
      // A name the org does not know reads the page as a label found only on other lines does (an
      // id no row has), so neither the page nor its time tells whether the name is used where the
      // caller may not look (list_labels hides such a label for that reason).
      return this.pageOf(manager, caller, input, found?.id ?? NO_LABEL_ID);
    });
  }

  /** page()'s statement, with the label resolved to its id (labelId: undefined for no label filter). */
  private pageOf(
    manager: EntityManager,
    caller: Principal,
    input: { lineId?: string; threadIds?: string[]; after?: KeysetPosition; limit: number },
    labelId: string | undefined,
  ): Promise<ThreadListRow[]> {
    const ids = pageIds(caller, input, labelId !== undefined);
    return queryNamed(
      manager,
      `SELECT t.id, left(t.subject, :subjectChars) AS subject, t.last_message_at, t.message_count, t.channel, t.line_id,
              t.partner_value, t.identity_name, t.contact_id, t.contact_name,
              ARRAY(SELECT l.name FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = t.id ORDER BY l.name) AS labels,
              lm.id AS m_id, lm.thread_id AS m_thread_id, lm.channel AS m_channel, lm.direction AS m_direction, lm.status AS m_status,
              left(lm.body, :previewSource) AS m_body, char_length(lm.body) > :previewSource AS m_body_cut, lm.created_at AS m_created_at, lm.sent_at AS m_sent_at, lm.from_value AS m_from_value,
              lm.from_kind AS m_from_kind, lm.to_value AS m_to_value, lm.to_kind AS m_to_kind, lm.error AS m_error
         FROM (${ids.sql}) page
        CROSS JOIN LATERAL (
              SELECT t.id, t.subject, t.last_message_at, t.message_count, t.channel, t.line_id, i.value AS partner_value,
                     i.display_name AS identity_name, c.id AS contact_id, c.display_name AS contact_name
                FROM threads t
                JOIN identities i ON i.id = t.partner_identity_id
                LEFT JOIN contacts c ON c.id = i.contact_id
               WHERE t.id = page.id AND t.org_id = :scopeOrgId
              OFFSET 0) t
         LEFT JOIN LATERAL (SELECT ${MESSAGE_COLUMNS}, ${FAILURE_REASON} FROM messages m WHERE m.thread_id = t.id
                             ORDER BY m.created_at DESC, m.id DESC LIMIT 1) lm ON true
        ORDER BY t.last_message_at DESC, t.id DESC`,
      {
        ...ids.parameters,
        limit: input.limit,
        previewSource: PREVIEW_SOURCE_CHARS,
        subjectChars: RESULT_BOUNDS.subjectChars,
        ...(input.lineId !== undefined && { lineId: input.lineId }),
        ...(labelId !== undefined && { labelId }),
        ...(input.after && { afterKey: input.after.key, afterId: input.after.id }),
      },
    );
  }

  async summary(manager: EntityManager, thread: CallerThread): Promise<ThreadRow> {
    const [row] = await queryNamed<ThreadRow[]>(
      manager,
      `SELECT id, left(subject, :subjectChars) AS subject, last_message_at, message_count, channel, line_id FROM threads WHERE id = :threadId`,
      { threadId: thread.id, subjectChars: RESULT_BOUNDS.subjectChars },
    );
    return row;
  }

  /** The thread's labels with their confidence, by name. */
  labels(manager: EntityManager, thread: CallerThread): Promise<LabelRow[]> {
    return queryNamed(
      manager,
      `SELECT l.name, tl.confidence FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = :threadId ORDER BY l.name`,
      { threadId: thread.id },
    );
  }

  /** Up to `limit` of the thread's messages, newest first, after the keyset position `after` (created_at, id); bodies cut to `maxBodyChars`. */
  messages(
    manager: EntityManager,
    thread: CallerThread,
    page: { after: KeysetPosition | undefined; limit: number; maxBodyChars: number },
  ): Promise<BoundedMessageRow[]> {
    const { after, limit, maxBodyChars } = page;
    return queryNamed(
      manager,
      `SELECT ${BOUNDED_MESSAGE_COLUMNS} FROM messages m
          WHERE m.thread_id = :threadId ${after ? 'AND (m.created_at, m.id) < (:afterKey::timestamptz, :afterId::uuid)' : ''}
          ORDER BY m.created_at DESC, m.id DESC LIMIT :limit`,
      { threadId: thread.id, limit, maxBodyChars, ...(after && { afterKey: after.key, afterId: after.id }) },
    );
  }

  /** One message on a line the caller may see (callerLines), its body from `offset` for at most `maxChars` code points. */
  async messageForCaller(caller: Principal, messageId: string, window: { offset: number; maxChars: number }): Promise<MessageWindowRow | undefined> {
    const scope = callerLines(caller, 't.line_id', 't.org_id');
    const [row] = await queryNamed<MessageWindowRow[]>(
      this.dataSource.manager,
      `SELECT m.id, m.thread_id, m.channel, m.direction, m.status, substr(m.body, :offset + 1, :maxChars) AS body,
              char_length(m.body) AS body_length, left(m.subject, ${RESULT_BOUNDS.subjectChars}) AS subject, ${FAILURE_REASON},
              m.created_at, m.sent_at, m.send_at, m.from_value, m.from_kind, m.to_value, m.to_kind
         FROM messages m
         JOIN threads t ON t.id = m.thread_id
        WHERE m.id = :messageId AND m.org_id = :orgId AND ${scope.sql}`,
      { messageId, orgId: caller.orgId, ...scope.parameters, ...window },
    );
    return row;
  }

  /** The subjects of these messages (of a thread the caller may see, read with `manager`), cut as get_message cuts them. */
  subjects(manager: EntityManager, messageIds: string[]): Promise<Array<{ id: string; subject: string | null }>> {
    if (messageIds.length === 0) return Promise.resolve([]);
    return queryNamed(manager, `SELECT id, left(subject, :subjectChars) AS subject FROM messages WHERE id = ANY (:messageIds::uuid[])`, {
      messageIds,
      subjectChars: RESULT_BOUNDS.subjectChars,
    });
  }

  /**
   * Up to `perMessage` attachments of each message that messages() answered, oldest first, after
   * the first `skip`, with filename and MIME type cut to `nameChars` (code points), and each
   * message's count.
   */
  async attachmentsOf(
    manager: EntityManager,
    messages: Array<{ id: string }>,
    bound: { perMessage: number; nameChars: number; skip?: number },
  ): Promise<MessageAttachmentRow[]> {
    if (messages.length === 0) return [];
    return queryNamed(
      manager,
      `SELECT id, message_id, left(filename, :nameChars) AS filename, left(mime_type, :nameChars) AS mime_type, size_bytes, total
         FROM (SELECT id, message_id, filename, mime_type, size_bytes, created_at,
                      row_number() OVER (PARTITION BY message_id ORDER BY created_at, id) AS n,
                      count(*) OVER (PARTITION BY message_id)::int AS total
                 FROM attachments WHERE message_id = ANY (:messageIds::uuid[])) a
        WHERE n > :skip AND n <= :skip + :perMessage
        ORDER BY created_at, id`,
      { messageIds: messages.map((m) => m.id), skip: 0, ...bound },
    );
  }

  /** How many attachments a message has. */
  async attachmentCount(messageId: string): Promise<number> {
    const [row] = await queryNamed<Array<{ count: number }>>(
      this.dataSource.manager,
      `SELECT count(*)::int AS count FROM attachments WHERE message_id = :messageId`,
      { messageId },
    );
    return row.count;
  }

  /** Up to `limit` labels of the caller's org in view for it (labelInView), by name then id, after the keyset position `after`. */
  labelPage(caller: Principal, input: { after?: KeysetPosition; limit: number }): Promise<Array<{ id: string; name: string }>> {
    const inView = labelInView(caller);
    return inIndexOrder(this.dataSource, (manager) =>
      queryNamed(
        manager,
        `SELECT l.id, l.name FROM labels l
        WHERE l.org_id = :orgId AND ${inView.sql}
          AND (:afterKey::text IS NULL OR (l.name, l.id) > (:afterKey::text, :afterId::uuid))
        ORDER BY l.name, l.id
        LIMIT :limit`,
        { orgId: caller.orgId, ...inView.parameters, afterKey: input.after?.key ?? null, afterId: input.after?.id ?? null, limit: input.limit },
      ),
    );
  }

  /** The caller's org's labels of these names, created on first use. */
  upsertLabels(manager: EntityManager, caller: Principal, names: string[]): Promise<Array<{ id: string; name: string }>> {
    return queryNamed(
      manager,
      `INSERT INTO labels (org_id, name) SELECT :orgId, name FROM unnest(:names::text[]) AS n(name)
           ON CONFLICT (org_id, name) DO UPDATE SET name = EXCLUDED.name
           RETURNING id, name`,
      { orgId: caller.orgId, names },
    );
  }

  /** Puts labels (as upsertLabels answered them) on the thread; one already on it takes the new confidence. */
  async setLabels(manager: EntityManager, thread: CallerThread, labels: Array<{ labelId: string; confidence: number }>): Promise<void> {
    await queryNamed(
      manager,
      `INSERT INTO thread_labels (thread_id, label_id, confidence)
           SELECT :threadId, label_id, confidence FROM unnest(:labelIds::uuid[], :confidences::real[]) AS x(label_id, confidence)
           ON CONFLICT (thread_id, label_id) DO UPDATE SET confidence = EXCLUDED.confidence`,
      { threadId: thread.id, labelIds: labels.map((l) => l.labelId), confidences: labels.map((l) => l.confidence) },
    );
  }

  /** Takes the caller's org's labels of these names off the thread. */
  async removeLabels(manager: EntityManager, caller: Principal, thread: CallerThread, names: string[]): Promise<void> {
    await queryNamed(
      manager,
      `DELETE FROM thread_labels tl USING labels l
            WHERE tl.label_id = l.id AND tl.thread_id = :threadId AND l.org_id = :orgId AND l.name = ANY (:names::text[])`,
      { threadId: thread.id, orgId: caller.orgId, names },
    );
  }
}
