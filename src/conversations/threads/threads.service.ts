import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../../identity/principal';
import { NotFoundError, ValidationError } from '../../common/errors';
import { AttachmentRef, Channel, PersonData, SerializedMessage } from '../conversation-vocabulary';
import { MessageDataBuilder, serializeMessage } from '../message-data.builder';
import { ThreadAccessRepository } from './thread-access.repository';
import { MessageAttachmentRow, ThreadListRow, ThreadRow, ThreadsRepository } from './threads.repository';
import { charLength, nextOffsetOf, previewOf, RESULT_BOUNDS } from '../../common/result-bounds';
import { isIsoTimestamp, KeysetCursors } from '../../common/keyset-cursor';
import { OptOutsService, OptOutView } from '../../opt-outs/opt-outs.service';

export const THREADS_PAGE_SIZE = 25;
/** list_labels page size: a label is at most 100 characters, so a page stays far below the result bound. */
export const LABELS_PAGE_SIZE = 100;
export const MAX_THREADS_PAGE_SIZE = 100;

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
  lastMessage: MessagePreview | null;
}

/** list_threads' last message: its body as a bounded one-line preview. */
export type MessagePreview = Omit<SerializedMessage, 'body'> & { preview: string; truncated: boolean; error: string | null };

export interface LabelView {
  name: string;
  confidence: number;
}

/** get_thread's message: `body` cut to the call's maxBodyChars (`truncated` says so), and its attachments. */
export type ThreadMessage = SerializedMessage & { truncated: boolean; error: string | null; attachments: AttachmentRef[]; attachmentCount: number };

/** get_message's answer: the message with a window of its body, and where the next window starts. */
export interface MessageDetail {
  message: SerializedMessage & { subject: string | null; error: string | null; attachments: AttachmentRef[]; attachmentCount: number };
  bodyLength: number;
  nextOffset: number | null;
  /** Where the next page of attachments starts (attachmentOffset); null when this page reached the last. */
  nextAttachmentOffset: number | null;
}

/** A message's subject and its first page of attachments, as get_message answers them (ThreadsService.messageHeads). */
export type MessageHead = Pick<MessageDetail['message'], 'subject' | 'attachments' | 'attachmentCount'>;

/** get_thread's arguments. */
export interface ThreadPage {
  cursor?: string;
  limit?: number;
  maxBodyChars?: number;
}

export interface ThreadDetail {
  thread: ThreadSummary;
  person: PersonData | null;
  labels: LabelView[];
  messages: ThreadMessage[];
  nextCursor: string | null;
  /** An SMS thread whose partner texted STOP to its line (and not START since): SMS to them are refused (docs/opt-out.md). */
  optedOut: OptOutView | null;
}

export interface LabelChange {
  add?: Array<{ name: string; confidence?: number }>;
  remove?: string[];
}

/**
 * Reading threads and labelling them, always inside the caller's line scope: a thread on a line
 * the key may not use (or of another org) reads as not found (ThreadAccessRepository.threadForCaller).
 */
@Injectable()
export class ThreadsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly threads: ThreadsRepository,
    private readonly threadAccess: ThreadAccessRepository,
    private readonly data: MessageDataBuilder,
    private readonly cursors: KeysetCursors,
    private readonly optOuts: OptOutsService,
  ) {}

  /**
   * Newest activity first (last_message_at DESC, id DESC), keyset paged. `threadIds` (not a tool
   * argument: the web app's "awaiting approval" filter) keeps to those threads; an empty list
   * answers no thread.
   */
  async list(
    caller: Principal,
    filter: { lineId?: string; label?: string; threadIds?: string[]; cursor?: string; limit?: number },
  ): Promise<{ threads: ThreadListItem[]; nextCursor: string | null }> {
    const limit = filter.limit ?? THREADS_PAGE_SIZE;
    const after = filter.cursor === undefined ? undefined : this.cursors.decode('list_threads', filter.cursor, isIsoTimestamp);
    if (filter.lineId !== undefined && !caller.lines.some((l) => l.id === filter.lineId)) throw NotFoundError.of('line', filter.lineId, 'lineId');
    if (filter.threadIds !== undefined && filter.threadIds.length === 0) return { threads: [], nextCursor: null };
    const rows = await this.threads.page(caller, { lineId: filter.lineId, label: filter.label?.trim(), threadIds: filter.threadIds, after, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      threads: page.map(threadListItem),
      nextCursor: rows.length > limit && last ? this.cursors.encode('list_threads', { key: last.last_message_at.toISOString(), id: last.id }) : null,
    };
  }

  /** One thread with its partner (every identity), labels with confidence, and a page of messages, newest first. */
  get(caller: Principal, threadId: string, page: ThreadPage = {}): Promise<ThreadDetail> {
    // One snapshot for the thread, its partner, labels and messages.
    return this.dataSource.transaction('REPEATABLE READ', (tx) => this.read(tx, caller, threadId, page));
  }

  /**
   * get's answer, read with `manager`: a transaction of the caller's, so that what it reads with
   * it (the thread page: its messages' attachments, the partner's contact) is of the same snapshot.
   */
  async read(
    manager: EntityManager,
    caller: Principal,
    threadId: string,
    { cursor, limit = RESULT_BOUNDS.threadMessages, maxBodyChars = RESULT_BOUNDS.bodyChars }: ThreadPage = {},
  ): Promise<ThreadDetail> {
    const after = cursor === undefined ? undefined : this.cursors.decode('get_thread', cursor, isIsoTimestamp);
    const access = await this.threadAccess.threadForCaller(manager, caller, threadId);
    const thread = summary(await this.threads.summary(manager, access));
    const person = await this.data.person(threadId, manager);
    const labels = await this.threads.labels(manager, access);
    const rows = await this.threads.messages(manager, access, { after, limit: limit + 1, maxBodyChars });
    const page = rows.slice(0, limit);
    const attachments = await this.threads.attachmentsOf(manager, page, {
      perMessage: RESULT_BOUNDS.threadAttachments,
      nameChars: RESULT_BOUNDS.threadAttachmentNameChars,
    });
    const last = page[page.length - 1];
    return {
      thread,
      person,
      labels,
      messages: page.map((m) => ({
        ...serializeMessage(m),
        truncated: m.body_truncated,
        error: m.error,
        ...attachmentsOfMessage(attachments, m.id),
      })),
      nextCursor: rows.length > limit && last ? this.cursors.encode('get_thread', { key: last.created_at.toISOString(), id: last.id }) : null,
      optedOut: access.channel === 'SMS' ? await this.optOuts.threadOptOut(manager, access.line_id, access.partner_identity_id) : null,
    };
  }

  /**
   * What get_message tells of each of `messages` (read() answered them with `manager`) beyond
   * get_thread: its subject and its first page of attachments with their count; two statements
   * for all of them, whatever their number.
   */
  async messageHeads(manager: EntityManager, messages: Array<{ id: string }>): Promise<Map<string, MessageHead>> {
    const ids = messages.map((m) => m.id);
    const subjects = await this.threads.subjects(manager, ids);
    const attachments = await this.threads.attachmentsOf(manager, messages, {
      perMessage: RESULT_BOUNDS.messageAttachments,
      nameChars: RESULT_BOUNDS.messageAttachmentNameChars,
    });
    const subjectOf = new Map(subjects.map((r) => [r.id, r.subject]));
    return new Map(ids.map((id) => [id, { subject: subjectOf.get(id) ?? null, ...attachmentsOfMessage(attachments, id) }]));
  }

  /**
   * One message with its body from `offset` (code points), at most `maxChars` of it, a page of its
   * attachments from `attachmentOffset` (messageHeads' page when 0), and the failure reason when FAILED.
   */
  async message(
    caller: Principal,
    messageId: string,
    { offset = 0, maxChars = RESULT_BOUNDS.messageChars, attachmentOffset = 0 }: { offset?: number; maxChars?: number; attachmentOffset?: number } = {},
  ): Promise<MessageDetail> {
    const row = await this.threads.messageForCaller(caller, messageId, { offset, maxChars });
    if (!row) throw NotFoundError.of('message', messageId, 'messageId');
    const nextOffset = nextOffsetOf({ offset, maxChars }, { of: 'body', name: 'bodyLength', value: row.body_length });
    const perPage = RESULT_BOUNDS.messageAttachments;
    const rows = await this.threads.attachmentsOf(this.dataSource.manager, [row], {
      perMessage: perPage,
      nameChars: RESULT_BOUNDS.messageAttachmentNameChars,
      skip: attachmentOffset,
    });
    const { attachments } = attachmentsOfMessage(rows, row.id);
    // A page past the last attachment has no row to carry the count.
    const attachmentCount = rows[0]?.total ?? (attachmentOffset > 0 ? await this.threads.attachmentCount(row.id) : 0);
    if (attachmentOffset > attachmentCount) {
      throw new ValidationError(
        `attachmentOffset ${attachmentOffset} is past the end of the attachments (attachmentCount ${attachmentCount})`,
        'attachmentOffset',
      );
    }
    return {
      message: { ...serializeMessage(row), subject: row.subject, error: row.error, attachments, attachmentCount },
      bodyLength: row.body_length,
      nextOffset,
      nextAttachmentOffset: attachmentOffset + perPage < attachmentCount ? attachmentOffset + perPage : null,
    };
  }

  /** The org's labels in view for the caller (on a thread it may read, or on none), by name, LABELS_PAGE_SIZE a page. */
  async listLabels(caller: Principal, input: { cursor?: string }): Promise<{ labels: Array<{ id: string; name: string }>; nextCursor: string | null }> {
    const after = input.cursor === undefined ? undefined : this.cursors.decode('list_labels', input.cursor, (key) => key.length > 0 && key.length <= 200);
    const rows = await this.threads.labelPage(caller, { after, limit: LABELS_PAGE_SIZE + 1 });
    const page = rows.slice(0, LABELS_PAGE_SIZE);
    const last = page[page.length - 1];
    return {
      labels: page.map((l) => ({ id: l.id, name: l.name })),
      nextCursor: rows.length > LABELS_PAGE_SIZE && last ? this.cursors.encode('list_labels', { key: last.name, id: last.id }) : null,
    };
  }

  /**
   * Adds labels (created in the org on first use; an existing one on the thread takes the new
   * confidence) and removes labels, in one transaction. Returns the thread's labels after it.
   */
  async label(caller: Principal, threadId: string, change: LabelChange): Promise<{ threadId: string; labels: LabelView[] }> {
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
      const thread = await this.threadAccess.threadForCaller(tx, caller, threadId);
      if (add.length) {
        const labels = await this.threads.upsertLabels(
          tx,
          caller,
          add.map((l) => l.name),
        );
        const idOf = new Map(labels.map((l) => [l.name, l.id]));
        await this.threads.setLabels(
          tx,
          thread,
          add.map((l) => ({ labelId: idOf.get(l.name)!, confidence: l.confidence })),
        );
      }
      if (remove.length) await this.threads.removeLabels(tx, caller, thread, remove);
      return { threadId, labels: await this.threads.labels(tx, thread) };
    });
  }
}

/** The last message of a list_threads row, with a preview in place of its body. */
/** One row of page() as list_threads lists it (exported for bench/bare-app.ts, whose limit answers the same). */
export function threadListItem(r: ThreadListRow): ThreadListItem {
  return {
    thread: summary(r),
    person: r.contact_id
      ? { id: r.contact_id, displayName: r.contact_name ?? r.identity_name ?? r.partner_value }
      : { id: null, displayName: r.identity_name ?? r.partner_value },
    labels: r.labels,
    lastMessage: r.m_id ? lastMessageOf(r) : null,
  };
}

function lastMessageOf(r: ThreadListRow): MessagePreview {
  // serializeMessage's fields (MessagePreview's type holds them to it), written out: a page builds 25
  // of these, and building a row for serializeMessage, then spreading the body out and the preview
  // in, was 4 % of list_threads' CPU.
  const { preview, truncated } = previewOf(r.m_body, r.m_body_cut);
  return {
    id: r.m_id!,
    threadId: r.m_thread_id,
    channel: r.m_channel,
    direction: r.m_direction,
    status: r.m_status,
    createdAt: r.m_created_at.toISOString(),
    sentAt: r.m_sent_at?.toISOString() ?? null,
    fromIdentity: { value: r.m_from_value, kind: r.m_from_kind },
    toIdentity: { value: r.m_to_value, kind: r.m_to_kind },
    preview,
    truncated,
    error: r.m_error,
  };
}

/** A message's listed attachments (attachmentsOf answered at most its bound) and how many it has. */
function attachmentsOfMessage(rows: MessageAttachmentRow[], messageId: string): { attachments: AttachmentRef[]; attachmentCount: number } {
  const own = rows.filter((a) => a.message_id === messageId);
  return {
    attachments: own.map((a) => ({ id: a.id, filename: a.filename, mimeType: a.mime_type, sizeBytes: a.size_bytes })),
    attachmentCount: own[0]?.total ?? 0,
  };
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

/** Label names are kept as given, without surrounding spaces; 1 to 100 characters (code points). */
function labelName(raw: string, field: string): string {
  const name = raw.trim();
  if (name.length === 0 || charLength(name) > 100) throw new ValidationError(`${field} must be 1 to 100 characters (not only spaces)`, field);
  return name;
}
