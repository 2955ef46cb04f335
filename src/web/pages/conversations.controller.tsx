import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { AgentsService } from '../../agents/agents.service';
import { AttachmentsService } from '../../attachments/attachments.service';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person, Principal } from '../../identity/principal';
import { httpStatusOf } from '../../common/error-status';
import { DomainError, ValidationError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { RESULT_BOUNDS } from '../../common/result-bounds';
import { ContactsService } from '../../conversations/contacts/contacts.service';
import { contactArguments } from '../../conversations/contacts/contacts.tools';
import { outboundArguments } from '../../conversations/outbound/outbound.tools';
import { OutboundService } from '../../conversations/outbound/outbound.service';
import { SearchService } from '../../conversations/search/search.service';
import { searchArguments } from '../../conversations/search/search.tools';
import { ThreadsService } from '../../conversations/threads/threads.service';
import { threadArguments } from '../../conversations/threads/threads.tools';
import {
  AttachmentBlock,
  ConversationsPage,
  ConversationsQuery,
  MessageExtras,
  SNIPPET_MARKS,
  THREAD_NOTICES,
  ThreadErrors,
  ThreadField,
  ThreadNotice,
  ThreadPage,
} from './conversations.pages';
import { PageErrorFilter } from './page-error.filter';
import { seeOther, sendPage } from './render';
import { FORM_LIMIT } from './sign-in.controller';

type Form = Record<string, string | undefined> | undefined;

/** The Conversations page's fields by the tool argument they are (list_threads, search_messages), as a refusal names them. */
const FILTER_NAMES: Record<string, string> = { query: 'Search', cursor: 'Page (Older link)', lineId: 'Line', label: 'Label' };

const BASE = '/conversations';
/** A reply of up to 100,000 characters, each up to 4 bytes and percent-encoded (×3), with the other fields. */
const REPLY_FORM_LIMIT = 1_300_000;
/** Notes of up to 10,000 characters, encoded as above. */
const NOTES_FORM_LIMIT = 130_000;
/** Characters of a message body the thread page shows (the rest: "The message is longer"). */
const PAGE_BODY_CHARS = RESULT_BOUNDS.messageChars;
/** Characters of an attachment's extracted text the thread page shows. */
const PAGE_ATTACHMENT_CHARS = 5_000;

/**
 * Conversations and a thread (docs/web.md): the person's threads, search, a thread's messages,
 * replies, labels and the partner's contact. Every read and action goes through the services the
 * MCP tools call (ThreadsService, SearchService, OutboundService, ContactsService,
 * AttachmentsService, AgentsService), with the person as principal and the arguments
 * judged by the tools' own input schemas: a thread on a line the person may not see is the same
 * 404 page as one that never existed. A refusal of a form is shown next to its field.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('conversations')
export class ConversationsController {
  constructor(
    private readonly threads: ThreadsService,
    private readonly search: SearchService,
    private readonly outbound: OutboundService,
    private readonly contacts: ContactsService,
    private readonly agents: AgentsService,
    private readonly attachments: AttachmentsService,
  ) {}

  /** The list (line, label, awaiting-approval filters) or, with `q`, the search_messages hits; keyset pages either way. */
  @Get()
  async list(@CurrentPrincipal() person: Person, @Query() raw: Record<string, unknown>, @Res() response: Response): Promise<void> {
    const caller = person;
    const query = conversationsQuery(raw);
    const labels = (await this.threads.listLabels(caller, {})).labels.map((l) => l.name);
    const page = { person, labels, query, threads: [], awaiting: new Set<string>(), hits: null, nextCursor: null };
    try {
      if (query.q.trim() !== '') {
        const args = searchArguments.find({ query: query.q, ...(query.cursor !== undefined && { cursor: query.cursor }) });
        const found = await this.search.find(caller, args, SNIPPET_MARKS);
        return sendPage(response, 200, <ConversationsPage {...page} hits={found.hits} nextCursor={found.nextCursor} />);
      }
      const args = threadArguments.list({
        ...(query.line !== '' && { lineId: query.line }),
        ...(query.label !== '' && { label: query.label }),
        ...(query.cursor !== undefined && { cursor: query.cursor }),
      });
      const threadIds = query.awaiting ? await this.agents.threadsAwaitingApproval(caller) : undefined;
      const listed = await this.threads.list(caller, { ...args, threadIds });
      const awaiting = await this.agents.threadsAwaitingApproval(
        caller,
        listed.threads.map((t) => t.thread.id),
      );
      sendPage(response, 200, <ConversationsPage {...page} threads={listed.threads} awaiting={new Set(awaiting)} nextCursor={listed.nextCursor} />);
    } catch (error) {
      const refusal = refusalOf(error, Object.keys(FILTER_NAMES));
      const named = refusal.field ? `${FILTER_NAMES[refusal.field]}: ${refusal.message}` : refusal.message;
      sendPage(response, refusal.status, <ConversationsPage {...page} error={{ field: refusal.field, message: named }} />);
    }
  }

  @Get(':threadId')
  async thread(
    @CurrentPrincipal() person: Person,
    @Param('threadId') threadId: string,
    @Query() raw: Record<string, unknown>,
    @Res() response: Response,
  ): Promise<void> {
    const cursor = typeof raw.cursor === 'string' && raw.cursor !== '' ? raw.cursor : undefined;
    await this.sendThread(response, person, threadId, { status: 200, cursor, notice: notice(raw.done) });
  }

  /** A reply on the thread's own line, sent once per form: the form's idempotencyKey is reply_to_thread's. */
  @ReadsBody({ as: 'form', limit: REPLY_FORM_LIMIT })
  @Post(':threadId/reply')
  async reply(@CurrentPrincipal() person: Person, @Param('threadId') threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    const text = body?.body ?? '';
    const key = body?.idempotencyKey ?? '';
    try {
      const args = outboundArguments.reply({ threadId, body: text, ...(key !== '' && { idempotencyKey: key }) });
      await this.outbound.queueThreadReply(person, { tool: 'reply_to_thread', args });
    } catch (error) {
      const refusal = refusalOf(error, ['body', 'idempotencyKey']);
      const field: ThreadField = refusal.field === 'body' ? 'body' : 'form';
      // A refused key (used for another text) gets a new one with the form, so the person can send what they typed.
      return this.sendThread(response, person, threadId, { status: refusal.status, errors: { [field]: refusal.message }, replyBody: text });
    }
    seeOther(response, `${BASE}/${threadId}?done=sent`);
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':threadId/labels')
  async addLabel(@CurrentPrincipal() person: Person, @Param('threadId') threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    await this.label(response, person, threadId, { add: [{ name: body?.label ?? '' }] });
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':threadId/labels/remove')
  async removeLabel(@CurrentPrincipal() person: Person, @Param('threadId') threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    await this.label(response, person, threadId, { remove: [body?.label ?? ''] });
  }

  /** The partner's notes (update_contact); the contact is the thread's partner, never one named by the form. */
  @ReadsBody({ as: 'form', limit: NOTES_FORM_LIMIT })
  @Post(':threadId/contact/notes')
  async notes(@CurrentPrincipal() person: Person, @Param('threadId') threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    const caller = person;
    const { person: partner } = await this.threads.get(caller, this.threadId(threadId), { limit: 1, maxBodyChars: 1 });
    try {
      if (!partner?.id) throw new ValidationError('the partner of this thread is not a contact yet: save them as a contact first', 'notes');
      const args = contactArguments.update({ contactId: partner.id, notes: body?.notes ?? '' });
      await this.contacts.update(caller, args);
    } catch (error) {
      const refusal = refusalOf(error, ['notes']);
      return this.sendThread(response, person, threadId, { status: refusal.status, errors: { notes: refusal.message } });
    }
    seeOther(response, `${BASE}/${threadId}?done=notes`);
  }

  /** Saves the thread's partner (an unknown identity) as a contact (create_contact with that identity). */
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':threadId/contact')
  async createContact(@CurrentPrincipal() person: Person, @Param('threadId') threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    const caller = person;
    const { person: partner } = await this.threads.get(caller, this.threadId(threadId), { limit: 1, maxBodyChars: 1 });
    try {
      const identity = partner?.identities[0];
      if (partner?.id || !identity) throw new ValidationError('the partner of this thread is already a contact', 'displayName');
      const args = contactArguments.create({ displayName: body?.displayName ?? '', identities: [{ kind: identity.kind, value: identity.value }] });
      await this.contacts.create(caller, args);
    } catch (error) {
      const refusal = refusalOf(error, ['displayName', 'identities']);
      return this.sendThread(response, person, threadId, { status: refusal.status, errors: { displayName: refusal.message } });
    }
    seeOther(response, `${BASE}/${threadId}?done=contact`);
  }

  private async label(response: Response, person: Person, threadId: string, change: { add?: Array<{ name: string }>; remove?: string[] }): Promise<void> {
    try {
      const { threadId: id, ...args } = threadArguments.label({ threadId, ...change });
      await this.threads.label(person, id, args);
    } catch (error) {
      const refusal = refusalOf(error, ['add', 'remove']);
      return this.sendThread(response, person, threadId, {
        status: refusal.status,
        errors: { label: refusal.message.replace(/^(add\[0\]\.name|remove\[0\])/, 'label') },
      });
    }
    seeOther(response, `${BASE}/${threadId}?done=labelled`);
  }

  /** The thread page: get_thread's page of messages, each email's subject and every attachment read as read_attachment reads it. */
  private async sendThread(
    response: Response,
    person: Person,
    threadId: string,
    view: { status: number; cursor?: string; notice?: string; errors?: ThreadErrors; replyBody?: string },
  ): Promise<void> {
    const caller = person;
    const args = threadArguments.get({ threadId, ...(view.cursor !== undefined && { cursor: view.cursor }) });
    const detail = await this.threads.get(caller, args.threadId, { cursor: args.cursor, maxBodyChars: PAGE_BODY_CHARS });
    const [extras, contact, drafts] = await Promise.all([
      this.extrasOf(caller, detail.messages),
      detail.person?.id ? this.contacts.get(caller, detail.person.id).then((c) => c.contact) : Promise.resolve(null),
      this.agents.list(caller, { threadId: detail.thread.id, status: 'AWAITING_APPROVAL' }),
    ]);
    sendPage(
      response,
      view.status,
      <ThreadPage
        person={person}
        detail={detail}
        extras={extras}
        contact={contact}
        drafts={drafts.turns}
        replyKey={`web-reply:${randomUUID()}`}
        replyBody={view.replyBody ?? ''}
        errors={view.errors ?? {}}
        notice={view.notice}
        cursor={args.cursor}
      />,
    );
  }

  /** Each email's subject and each message's attachments (get_message's page of them), read as read_attachment reads them. */
  private async extrasOf(caller: Principal, messages: Array<{ id: string; channel: string; attachmentCount: number }>): Promise<Map<string, MessageExtras>> {
    const extras = new Map<string, MessageExtras>();
    for (const m of messages.filter((x) => x.channel === 'EMAIL' || x.attachmentCount > 0)) {
      const { message } = await this.threads.message(caller, m.id, { maxChars: 1 });
      const attachments: AttachmentBlock[] = [];
      for (const a of message.attachments) {
        try {
          attachments.push({ ...a, read: await this.attachments.read(caller, a.id, { maxChars: PAGE_ATTACHMENT_CHARS }) });
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          attachments.push({ ...a, problem: error.message });
        }
      }
      extras.set(m.id, { subject: message.subject, attachments, attachmentCount: message.attachmentCount });
    }
    return extras;
  }

  /** A path id checked as get_thread checks it (a UUID); anything else is a 400 page. */
  private threadId(id: string): string {
    return threadArguments.get({ threadId: id }).threadId;
  }
}

/**
 * A refusal of a form's or filter's content naming one of `fields`, with the status of its code
 * (error-status.ts); anything else (a thread not found, a failure) goes to the error page.
 */
function refusalOf(error: unknown, fields: string[]): { status: number; field?: string; message: string } {
  if (!(error instanceof DomainError) || !['VALIDATION', 'CONFLICT', 'NOT_FOUND'].includes(error.code)) throw error;
  const field = error.field?.split(/[.[]/)[0];
  if (error.code === 'NOT_FOUND' && field !== 'lineId' && field !== 'idempotencyKey') throw error;
  if (field !== undefined && !fields.includes(field)) throw error;
  return { status: httpStatusOf(error), field, message: error.message };
}

function conversationsQuery(raw: Record<string, unknown>): ConversationsQuery {
  const text = (name: string) => (typeof raw[name] === 'string' ? (raw[name] as string) : '');
  const cursor = text('cursor');
  return { line: text('line'), label: text('label'), awaiting: text('awaiting') !== '', q: text('q'), ...(cursor !== '' && { cursor }) };
}

function notice(done: unknown): string | undefined {
  return typeof done === 'string' && Object.prototype.hasOwnProperty.call(THREAD_NOTICES, done) ? THREAD_NOTICES[done as ThreadNotice] : undefined;
}
