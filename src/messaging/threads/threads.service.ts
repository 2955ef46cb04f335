import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Caller } from '../../auth/caller';
import { NotFoundError, ValidationError } from '../../common/errors';
import { AttachmentRef, Channel, PersonData, SerializedMessage } from '../../events/event-payloads';
import { MessageDataBuilder, serializeMessage } from '../message-data.builder';
import { OutboundService } from '../outbound/outbound.service';
import { isIsoTimestamp, KeysetCursors } from '../../common/keyset-cursor';

export const THREADS_PAGE_SIZE = 25;
export const MAX_THREADS_PAGE_SIZE = 100;
export const MESSAGES_PAGE_SIZE = 50;

export interface ThreadSummary {
  id: string;
  subject: string | null;
  lastMessageAt: string;
  messageCount: number;
  channel: Channel;
  lineId: string;
}

export interface ThreadListItem {
  thread: ThreadSummary;
  person: { id: string | null; displayName: string | null } | null;
  labels: string[];
  lastMessage: SerializedMessage | null;
}

export interface LabelView {
  name: string;
  confidence: number;
}

export type ThreadMessage = SerializedMessage & { attachments: AttachmentRef[] };

export interface ThreadDetail {
  thread: ThreadSummary;
  person: PersonData | null;
  labels: LabelView[];
  messages: ThreadMessage[];
  nextCursor: string | null;
}

export interface LabelChange {
  add?: Array<{ name: string; confidence?: number }>;
  remove?: string[];
}

interface ThreadRow {
  id: string;
  subject: string | null;
  last_message_at: Date;
  message_count: number;
  channel: Channel;
  line_id: string;
}

const MESSAGE_COLUMNS = `m.id, m.thread_id, m.channel, m.direction, m.status, m.body, m.created_at, m.sent_at,
  m.from_value, m.from_kind, m.to_value, m.to_kind`;

/**
 * Reading threads and labelling them, always inside the caller's line scope: a thread on a line
 * the key may not use (or of another org) reads as not found (OutboundService.threadForCaller).
 */
@Injectable()
export class ThreadsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly outbound: OutboundService,
    private readonly data: MessageDataBuilder,
    private readonly cursors: KeysetCursors,
  ) {}

  /** Newest activity first (last_message_at DESC, id DESC), keyset paged. */
  async list(
    caller: Caller,
    filter: { lineId?: string; label?: string; cursor?: string; limit?: number },
  ): Promise<{ threads: ThreadListItem[]; nextCursor: string | null }> {
    const limit = filter.limit ?? THREADS_PAGE_SIZE;
    const after = filter.cursor === undefined ? undefined : this.cursors.decode('list_threads', filter.cursor, isIsoTimestamp);
    let lineIds = caller.lines.map((l) => l.id);
    if (filter.lineId !== undefined) {
      if (!lineIds.includes(filter.lineId)) throw NotFoundError.of('line', filter.lineId, 'lineId');
      lineIds = [filter.lineId];
    }
    const params: unknown[] = [caller.orgId, lineIds, limit + 1];
    const where = [`t.org_id = $1`, `t.line_id = ANY ($2::uuid[])`];
    if (filter.label !== undefined) {
      params.push(filter.label.trim());
      where.push(`EXISTS (SELECT 1 FROM thread_labels tl JOIN labels l ON l.id = tl.label_id
                           WHERE tl.thread_id = t.id AND l.org_id = t.org_id AND l.name = $${params.length})`);
    }
    if (after) {
      params.push(after.key, after.id);
      where.push(`(t.last_message_at, t.id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    const rows: Array<
      ThreadRow & {
        partner_value: string;
        identity_name: string | null;
        contact_id: string | null;
        contact_name: string | null;
        labels: string[];
        m_id: string | null;
        m_thread_id: string;
        m_channel: Channel;
        m_direction: 'INBOUND' | 'OUTBOUND';
        m_status: string;
        m_body: string;
        m_created_at: Date;
        m_sent_at: Date | null;
        m_from_value: string;
        m_from_kind: 'PHONE' | 'EMAIL';
        m_to_value: string;
        m_to_kind: 'PHONE' | 'EMAIL';
      }
    > = await this.dataSource.query(
      `SELECT t.id, t.subject, t.last_message_at, t.message_count, t.channel, t.line_id,
              i.value AS partner_value, i.display_name AS identity_name, c.id AS contact_id, c.display_name AS contact_name,
              ARRAY(SELECT l.name FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = t.id ORDER BY l.name) AS labels,
              lm.id AS m_id, lm.thread_id AS m_thread_id, lm.channel AS m_channel, lm.direction AS m_direction, lm.status AS m_status,
              lm.body AS m_body, lm.created_at AS m_created_at, lm.sent_at AS m_sent_at, lm.from_value AS m_from_value,
              lm.from_kind AS m_from_kind, lm.to_value AS m_to_value, lm.to_kind AS m_to_kind
         FROM threads t
         JOIN identities i ON i.id = t.partner_identity_id
         LEFT JOIN contacts c ON c.id = i.contact_id
         LEFT JOIN LATERAL (SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.thread_id = t.id
                             ORDER BY m.created_at DESC, m.id DESC LIMIT 1) lm ON true
        WHERE ${where.join(' AND ')}
        ORDER BY t.last_message_at DESC, t.id DESC
        LIMIT $3`,
      params,
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      threads: page.map((r) => ({
        thread: summary(r),
        person: r.contact_id
          ? { id: r.contact_id, displayName: r.contact_name ?? r.identity_name ?? r.partner_value }
          : { id: null, displayName: r.identity_name ?? r.partner_value },
        labels: r.labels,
        lastMessage: r.m_id
          ? serializeMessage({
              id: r.m_id,
              thread_id: r.m_thread_id,
              channel: r.m_channel,
              direction: r.m_direction,
              status: r.m_status,
              body: r.m_body,
              created_at: r.m_created_at,
              sent_at: r.m_sent_at,
              from_value: r.m_from_value,
              from_kind: r.m_from_kind,
              to_value: r.m_to_value,
              to_kind: r.m_to_kind,
            })
          : null,
      })),
      nextCursor: rows.length > limit && last ? this.cursors.encode('list_threads', { key: last.last_message_at.toISOString(), id: last.id }) : null,
    };
  }

  /** One thread with its partner (every identity), labels with confidence, and a page of messages, newest first. */
  async get(caller: Caller, threadId: string, cursor?: string): Promise<ThreadDetail> {
    const after = cursor === undefined ? undefined : this.cursors.decode('get_thread', cursor, isIsoTimestamp);
    // One snapshot for the thread, its partner, labels and messages.
    return this.dataSource.transaction('REPEATABLE READ', async (tx) => {
      await this.outbound.threadForCaller(tx, caller, threadId);
      const thread = await this.summary(tx, threadId);
      const person = await this.data.person(threadId, tx);
      const labels = await this.labels(tx, threadId);
      const params: unknown[] = [threadId, MESSAGES_PAGE_SIZE + 1];
      if (after) params.push(after.key, after.id);
      const rows: Array<Parameters<typeof serializeMessage>[0]> = await tx.query(
        `SELECT ${MESSAGE_COLUMNS} FROM messages m
          WHERE m.thread_id = $1 ${after ? 'AND (m.created_at, m.id) < ($3::timestamptz, $4::uuid)' : ''}
          ORDER BY m.created_at DESC, m.id DESC LIMIT $2`,
        params,
      );
      const page = rows.slice(0, MESSAGES_PAGE_SIZE);
      const attachments: Array<{ id: string; message_id: string; filename: string; mime_type: string; size_bytes: number }> = page.length
        ? await tx.query(
            `SELECT id, message_id, filename, mime_type, size_bytes FROM attachments WHERE message_id = ANY ($1::uuid[]) ORDER BY created_at, id`,
            [page.map((m) => m.id)],
          )
        : [];
      const last = page[page.length - 1];
      return {
        thread,
        person,
        labels,
        messages: page.map((m) => ({
          ...serializeMessage(m),
          attachments: attachments
            .filter((a) => a.message_id === m.id)
            .map((a) => ({ id: a.id, filename: a.filename, mimeType: a.mime_type, sizeBytes: a.size_bytes })),
        })),
        nextCursor: rows.length > MESSAGES_PAGE_SIZE && last ? this.cursors.encode('get_thread', { key: last.created_at.toISOString(), id: last.id }) : null,
      };
    });
  }

  /**
   * Adds labels (created in the org on first use; an existing one on the thread takes the new
   * confidence) and removes labels, in one transaction. Returns the thread's labels after it.
   */
  async label(caller: Caller, threadId: string, change: LabelChange): Promise<{ threadId: string; labels: LabelView[] }> {
    const add = (change.add ?? []).map((l, i) => ({ name: labelName(l.name, `add[${i}].name`), confidence: l.confidence ?? 1 }));
    const remove = (change.remove ?? []).map((name, i) => labelName(name, `remove[${i}]`));
    if (add.length === 0 && remove.length === 0) throw new ValidationError('give at least one label to add or remove', 'add');
    const seen = new Map<string, string>();
    add.forEach((l, i) => {
      const where = `add[${i}].name`;
      if (seen.has(l.name)) throw new ValidationError(`${where} repeats ${seen.get(l.name)} (${l.name})`, where);
      seen.set(l.name, where);
    });
    remove.forEach((name, i) => {
      const where = `remove[${i}]`;
      if (seen.has(name)) throw new ValidationError(`${where} (${name}) is also in ${seen.get(name)}`, where);
      seen.set(name, where);
    });
    return this.dataSource.transaction(async (tx) => {
      await this.outbound.threadForCaller(tx, caller, threadId);
      if (add.length) {
        const labels: Array<{ id: string; name: string }> = await tx.query(
          `INSERT INTO labels (org_id, name) SELECT $1, name FROM unnest($2::text[]) AS n(name)
           ON CONFLICT (org_id, name) DO UPDATE SET name = EXCLUDED.name
           RETURNING id, name`,
          [caller.orgId, add.map((l) => l.name)],
        );
        const idOf = new Map(labels.map((l) => [l.name, l.id]));
        await tx.query(
          `INSERT INTO thread_labels (thread_id, label_id, confidence)
           SELECT $1, label_id, confidence FROM unnest($2::uuid[], $3::real[]) AS x(label_id, confidence)
           ON CONFLICT (thread_id, label_id) DO UPDATE SET confidence = EXCLUDED.confidence`,
          [threadId, add.map((l) => idOf.get(l.name)), add.map((l) => l.confidence)],
        );
      }
      if (remove.length) {
        await tx.query(
          `DELETE FROM thread_labels tl USING labels l
            WHERE tl.label_id = l.id AND tl.thread_id = $1 AND l.org_id = $2 AND l.name = ANY ($3::text[])`,
          [threadId, caller.orgId, remove],
        );
      }
      return { threadId, labels: await this.labels(tx, threadId) };
    });
  }

  private async summary(tx: EntityManager, threadId: string): Promise<ThreadSummary> {
    const [row]: ThreadRow[] = await tx.query(`SELECT id, subject, last_message_at, message_count, channel, line_id FROM threads WHERE id = $1`, [threadId]);
    return summary(row);
  }

  private labels(tx: EntityManager, threadId: string): Promise<LabelView[]> {
    return tx.query(`SELECT l.name, tl.confidence FROM thread_labels tl JOIN labels l ON l.id = tl.label_id WHERE tl.thread_id = $1 ORDER BY l.name`, [
      threadId,
    ]);
  }
}

function summary(r: ThreadRow): ThreadSummary {
  return {
    id: r.id,
    subject: r.subject,
    lastMessageAt: r.last_message_at.toISOString(),
    messageCount: r.message_count,
    channel: r.channel,
    lineId: r.line_id,
  };
}

/** Label names are kept as given, without surrounding spaces; 1 to 100 characters. */
function labelName(raw: string, field: string): string {
  const name = raw.trim();
  if (name.length === 0 || name.length > 100) throw new ValidationError(`${field} must be 1 to 100 characters (not only spaces)`, field);
  return name;
}
