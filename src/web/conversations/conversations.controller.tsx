import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import type { VNode } from 'preact';
import { AgentsService } from '../../agents/agents.service';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { ValidationError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { ContactsService } from '../../conversations/contacts/contacts.service';
import { contactArguments } from '../../conversations/contacts/contacts.tools';
import { outboundArguments } from '../../conversations/outbound/outbound.tools';
import { OutboundService } from '../../conversations/outbound/outbound.service';
import { ScheduledSends } from '../../conversations/outbound/scheduled-sends';
import { scheduledArguments } from '../../conversations/outbound/scheduled-sends.tools';
import { SearchService } from '../../conversations/search/search.service';
import { searchArguments } from '../../conversations/search/search.tools';
import { ThreadsService } from '../../conversations/threads/threads.service';
import { threadArguments } from '../../conversations/threads/threads.tools';
import { FORM_LIMIT, formAction } from '../kit/form-action';
import { NOTICE_KEY, noticeText, withNotice } from '../kit/notices';
import { PathId } from '../kit/path-id';
import { FieldTable, refusalOf } from '../kit/refusal';
import { ConversationsPage, ConversationsQuery, SNIPPET_MARKS } from './conversations-list.page';
import { THREAD_NOTICES } from './thread.notices';
import { ThreadErrors } from './thread-forms';
import { ThreadPage } from './thread.page';
import { PageErrorFilter } from '../kit/page-error.filter';
import { sendPage } from '../kit/render';
import { ThreadViewService } from './thread-view.service';

type Form = Record<string, string | undefined> | undefined;
/** What the thread page shows besides the thread: its page of messages, a notice, refusals next to their fields, the reply as typed. */
type ThreadView = { cursor?: string; notice?: string; errors?: ThreadErrors; replyBody?: string };

/** The Conversations page's fields by the tool argument they are (list_threads, search_messages), as a refusal names them. */
const FILTER_NAMES: Record<string, string> = { query: 'Search', cursor: 'Page (Older link)', lineId: 'Line', label: 'Label' };
/** The filters as refusals name them; a line that is gone is a refusal of the Line filter. */
const FILTER_FIELDS: FieldTable<string> = {
  fields: { query: 'query', cursor: 'cursor', lineId: 'lineId', label: 'label' },
  notFound: ['lineId'],
  say: (error, field) => (field ? `${FILTER_NAMES[field]}: ${error.message}` : error.message),
};
/** The reply form: its text, and its idempotency key (used for another text: above the form). */
const REPLY_FIELDS: FieldTable<'body' | 'form'> = { fields: { body: 'body', idempotencyKey: 'form' }, notFound: ['idempotencyKey'] };
const NOTES_FIELDS: FieldTable<'notes'> = { fields: { notes: 'notes' } };
/** A scheduled message's Cancel: its refusal (not SCHEDULED any more, not found) above the page's forms. */
const CANCEL_FIELDS: FieldTable<'form'> = { fields: { messageId: 'form' }, notFound: ['messageId'] };
const CONTACT_FIELDS: FieldTable<'displayName'> = { fields: { displayName: 'displayName', identities: 'displayName' } };
/** A label added or removed; the refusal names it as the tool's argument (`add[0].name`), the form as `label`. */
const LABEL_FIELDS: FieldTable<'label'> = {
  fields: { add: 'label', remove: 'label' },
  say: (error) => error.message.replace(/^(add\[0\]\.name|remove\[0\])/, 'label'),
};
/** A thread's id in the path, checked as get_thread checks it (a UUID); anything else is a 400 page. */
const ThreadId = () => PathId('threadId', (id) => threadArguments.get({ threadId: id }).threadId);
/** A message's id in the path, checked as cancel_scheduled_message checks it. */
const MessageId = () => PathId('messageId', (id) => scheduledArguments.cancel({ messageId: id }).messageId);

const BASE = '/conversations';
/** A reply of up to 100,000 characters, each up to 4 bytes and percent-encoded (×3), with the other fields. */
const REPLY_FORM_LIMIT = 1_300_000;
/** Notes of up to 10,000 characters, encoded as above. */
const NOTES_FORM_LIMIT = 130_000;

/**
 * Conversations and a thread (docs/web.md): the person's threads, search, a thread's messages,
 * replies, labels and the partner's contact. Every read and action goes through the services the
 * MCP tools call (ThreadsService, SearchService, OutboundService, ContactsService, AgentsService;
 * the thread page reads through them in one snapshot: ThreadViewService), with the person as the principal and the arguments
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
    private readonly scheduled: ScheduledSends,
    private readonly contacts: ContactsService,
    private readonly agents: AgentsService,
    private readonly threadView: ThreadViewService,
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
      const refusal = refusalOf(error, FILTER_FIELDS);
      sendPage(response, refusal.status, <ConversationsPage {...page} error={{ field: refusal.field, message: refusal.message }} />);
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
    await this.sendThread(response, person, threadId, { status: 200, cursor, notice: noticeText(THREAD_NOTICES, raw[NOTICE_KEY]) });
  }

  /** A reply on the thread's own line, sent once per form: the form's idempotencyKey is reply_to_thread's. */
  @ReadsBody({ as: 'form', limit: REPLY_FORM_LIMIT })
  @Post(':threadId/reply')
  async reply(@CurrentPrincipal() person: Person, @ThreadId() threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    await formAction(response, {
      read: () => ({ text: body?.body ?? '', key: body?.idempotencyKey ?? '' }),
      run: async ({ text, key }) => {
        const args = outboundArguments.reply({ threadId, body: text, ...(key !== '' && { idempotencyKey: key }) });
        await this.outbound.queueThreadReply(person, { tool: 'reply_to_thread', args });
        return { redirect: withNotice(`${BASE}/${threadId}`, 'sent') };
      },
      fields: REPLY_FIELDS,
      // A refused key (used for another text) gets a new one with the form, so the person can send what they typed.
      again: ({ text }, refusal) => this.threadPage(person, threadId, { errors: { [refusal.field ?? 'form']: refusal.message }, replyBody: text }),
    });
  }

  /** Cancels a scheduled message of the thread (cancel_scheduled_message, with the person as the caller). */
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':threadId/messages/:messageId/cancel')
  async cancelScheduled(
    @CurrentPrincipal() person: Person,
    @ThreadId() threadId: string,
    @MessageId() messageId: string,
    @Res() response: Response,
  ): Promise<void> {
    await formAction(response, {
      read: () => messageId,
      run: async (id) => {
        await this.scheduled.cancel(person, id);
        return { redirect: withNotice(`${BASE}/${threadId}`, 'canceled') };
      },
      fields: CANCEL_FIELDS,
      again: (_id, refusal) => this.threadPage(person, threadId, { errors: { form: refusal.message } }),
    });
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':threadId/labels')
  async addLabel(@CurrentPrincipal() person: Person, @ThreadId() threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    await this.label(response, person, threadId, { add: [{ name: body?.label ?? '' }] });
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':threadId/labels/remove')
  async removeLabel(@CurrentPrincipal() person: Person, @ThreadId() threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    await this.label(response, person, threadId, { remove: [body?.label ?? ''] });
  }

  /** The partner's notes (update_contact); the contact is the thread's partner, never one named by the form. */
  @ReadsBody({ as: 'form', limit: NOTES_FORM_LIMIT })
  @Post(':threadId/contact/notes')
  async notes(@CurrentPrincipal() person: Person, @ThreadId() threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    const caller = person;
    const { person: partner } = await this.threads.get(caller, threadId, { limit: 1, maxBodyChars: 1 });
    await formAction(response, {
      read: () => body?.notes ?? '',
      run: async (notes) => {
        if (!partner?.id) throw new ValidationError('the partner of this thread is not a contact yet: save them as a contact first', 'notes');
        await this.contacts.update(caller, contactArguments.update({ contactId: partner.id, notes }));
        return { redirect: withNotice(`${BASE}/${threadId}`, 'notes') };
      },
      fields: NOTES_FIELDS,
      again: (_notes, refusal) => this.threadPage(person, threadId, { errors: { notes: refusal.message } }),
    });
  }

  /** Saves the thread's partner (an unknown identity) as a contact (create_contact with that identity). */
  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':threadId/contact')
  async createContact(@CurrentPrincipal() person: Person, @ThreadId() threadId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    const caller = person;
    const { person: partner } = await this.threads.get(caller, threadId, { limit: 1, maxBodyChars: 1 });
    await formAction(response, {
      read: () => body?.displayName ?? '',
      run: async (displayName) => {
        const identity = partner?.identities[0];
        if (partner?.id || !identity) throw new ValidationError('the partner of this thread is already a contact', 'displayName');
        await this.contacts.create(caller, contactArguments.create({ displayName, identities: [{ kind: identity.kind, value: identity.value }] }));
        return { redirect: withNotice(`${BASE}/${threadId}`, 'contact') };
      },
      fields: CONTACT_FIELDS,
      again: (_name, refusal) => this.threadPage(person, threadId, { errors: { displayName: refusal.message } }),
    });
  }

  private async label(response: Response, person: Person, threadId: string, change: { add?: Array<{ name: string }>; remove?: string[] }): Promise<void> {
    await formAction(response, {
      read: () => change,
      run: async (asked) => {
        const { threadId: id, ...args } = threadArguments.label({ threadId, ...asked });
        await this.threads.label(person, id, args);
        return { redirect: withNotice(`${BASE}/${threadId}`, 'labelled') };
      },
      fields: LABEL_FIELDS,
      again: (_asked, refusal) => this.threadPage(person, threadId, { errors: { label: refusal.message } }),
    });
  }

  private async sendThread(response: Response, person: Person, threadId: string, view: ThreadView & { status: number }): Promise<void> {
    sendPage(response, view.status, await this.threadPage(person, threadId, view));
  }

  /** The thread page: its view (ThreadViewService: get_thread's page of messages, each email's subject, every attachment read, the contact, the drafts), one snapshot. */
  private async threadPage(person: Person, threadId: string, view: ThreadView): Promise<VNode> {
    const args = threadArguments.get({ threadId, ...(view.cursor !== undefined && { cursor: view.cursor }) });
    const { detail, extras, contact, drafts } = await this.threadView.view(person, args.threadId, { cursor: args.cursor });
    return (
      <ThreadPage
        person={person}
        detail={detail}
        extras={extras}
        contact={contact}
        drafts={drafts}
        replyKey={`web-reply:${randomUUID()}`}
        replyBody={view.replyBody ?? ''}
        errors={view.errors ?? {}}
        notice={view.notice}
        cursor={args.cursor}
      />
    );
  }
}

function conversationsQuery(raw: Record<string, unknown>): ConversationsQuery {
  const text = (name: string) => (typeof raw[name] === 'string' ? (raw[name] as string) : '');
  const cursor = text('cursor');
  return { line: text('line'), label: text('label'), awaiting: text('awaiting') !== '', q: text('q'), ...(cursor !== '' && { cursor }) };
}
