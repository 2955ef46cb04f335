import { Body, Controller, Get, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import type { VNode } from 'preact';
import { AgentTurnView } from '../../agents/agent.types';
import { AgentsService } from '../../agents/agents.service';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Principal as Caller } from '../../identity/principal';
import { Person } from '../../identity/principal';
import { ConflictError, NotFoundError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { BODY_MAX } from '../../conversations/outbound/reply-body';
import { ThreadsService } from '../../conversations/threads/threads.service';
import { FORM_LIMIT, formAction, Outcome } from '../kit/form-action';
import { NOTICE_KEY, noticeText, withNotice } from '../kit/notices';
import { PathId } from '../kit/path-id';
import { FieldTable, Refusal } from '../kit/refusal';
import { AlreadyDecidedPage } from './already-decided.page';
import { ApprovalsPage } from './approvals-list.page';
import { conversationHref, decidedFrom, Draft } from './draft-parts';
import { EditDraftPage } from './draft-edit.page';
import { ApprovalsNotice, NOTICES } from './approvals.notices';
import { PageErrorFilter } from '../kit/page-error.filter';
import { sendPage } from '../kit/render';

const BASE = '/approvals';
/** Drafts a page: each brings its thread's last messages, so a page stays short. */
const DRAFTS_PAGE_SIZE = 10;
/** The thread context of a draft: its last messages, each cut to a few lines. */
const CONTEXT_MESSAGES = 3;
const CONTEXT_BODY_CHARS = 600;
/**
 * The edit form's body limit: the longest reply (BODY_MAX characters, on an email thread), each
 * character (a code point: up to 4 UTF-8 bytes) percent-encoded as up to 12 bytes, and the CSRF
 * field. A longer reply is then refused by the reply rule next to its field, not by a 413 page.
 */
export const EDIT_FORM_LIMIT = BODY_MAX * 12 + FORM_LIMIT;

type Form = Record<string, string | undefined> | undefined;
/** A decision's refusals: the turn decided before (CONFLICT on turnId), or the edited reply's text (body). */
const FIELDS: FieldTable<'turnId' | 'body'> = { fields: { turnId: 'turnId', body: 'body' } };

/**
 * Approvals (docs/web.md): the drafts of DRAFT agents waiting for a human on the person's lines,
 * and Approve, Edit and approve, Reject. Every rule is AgentsService's, the one the
 * approve_agent_turn / reject_agent_turn tools and the REST routes call (which turns the person
 * sees, that a turn is decided once, under a row lock, the reply's bounds, the agent_turn.sent
 * event); the thread around a draft is ThreadsService's (get_thread). A decision that comes second
 * is a 409 page saying who decided first; nothing is sent again.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('approvals')
export class ApprovalsController {
  constructor(
    private readonly agents: AgentsService,
    private readonly threads: ThreadsService,
  ) {}

  @Get()
  async list(@CurrentPrincipal() person: Person, @Query() query: Record<string, unknown>, @Res() response: Response): Promise<void> {
    const caller = person;
    const cursor = typeof query.cursor === 'string' && query.cursor !== '' ? query.cursor : undefined;
    const page = await this.agents.awaitingOldestFirst(caller, { cursor, limit: DRAFTS_PAGE_SIZE });
    const drafts = (await Promise.all(page.turns.map((turn) => this.draftOf(caller, person, turn).catch(goneAsNull)))).filter((d) => d !== null);
    sendPage(
      response,
      200,
      <ApprovalsPage
        person={person}
        drafts={drafts}
        nextCursor={page.nextCursor}
        paged={cursor !== undefined}
        notice={noticeText(NOTICES, query[NOTICE_KEY])}
      />,
    );
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':turnId/approve')
  async approve(@CurrentPrincipal() person: Person, @PathId('turnId') turnId: string, @Body() form: Form, @Res() response: Response): Promise<void> {
    const caller = person;
    await this.decide(response, caller, person, turnId, 'approve', async () => decided(await this.agents.approve(caller, turnId), form?.back, 'approved'));
  }

  @Get(':turnId/edit')
  async editForm(@CurrentPrincipal() person: Person, @PathId('turnId') turnId: string, @Query('back') back: unknown, @Res() response: Response): Promise<void> {
    const caller = person;
    const decision = await this.agents.decision(caller, turnId);
    if (decision.turn.status !== 'AWAITING_APPROVAL')
      return sendPage(response, 409, <AlreadyDecidedPage person={person} decision={decision} attempted="edit" />);
    const draft = await this.draftOf(caller, person, decision.turn);
    sendPage(response, 200, <EditDraftPage person={person} draft={draft} body={draft.turn.body} from={decidedFrom(back)} />);
  }

  /** Edit and approve: the text of the form is what is sent (approve_agent_turn's `body`). */
  @ReadsBody({ as: 'form', limit: EDIT_FORM_LIMIT })
  @Post(':turnId/edit')
  async edit(@CurrentPrincipal() person: Person, @PathId('turnId') turnId: string, @Body() form: Form, @Res() response: Response): Promise<void> {
    const caller = person;
    // Line breaks as typed (LF): the form reader undoes HTML's CRLF encoding (request-body.ts).
    const body = form?.body ?? '';
    await this.decide(
      response,
      caller,
      person,
      turnId,
      'edit',
      async () => decided(await this.agents.approve(caller, turnId, body), form?.back, 'edited'),
      async (refusal) => {
        const draft = await this.draftOf(caller, person, await this.agents.getTurn(caller, turnId));
        return <EditDraftPage person={person} draft={draft} body={body} error={refusal.message} from={decidedFrom(form?.back)} />;
      },
    );
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':turnId/reject')
  async reject(@CurrentPrincipal() person: Person, @PathId('turnId') turnId: string, @Body() form: Form, @Res() response: Response): Promise<void> {
    const caller = person;
    await this.decide(response, caller, person, turnId, 'reject', async () =>
      decided(await this.agents.reject(caller, turnId, reasonOf(form)), form?.back, 'rejected'),
    );
  }

  /**
   * A decision as a form action: a turn decided before (by anyone, or by this very form sent twice)
   * is 409 with who decided it; a refused edited text is the edit form again (`editAgain`); any
   * other error goes to the error page.
   */
  private async decide(
    response: Response,
    caller: Caller,
    person: Person,
    turnId: string,
    attempted: 'approve' | 'edit' | 'reject',
    run: () => Promise<Outcome>,
    editAgain?: (refusal: Refusal<'turnId' | 'body'>) => Promise<VNode>,
  ): Promise<void> {
    await formAction(response, {
      read: () => turnId,
      run,
      fields: FIELDS,
      again: async (_turnId, refusal) => {
        if (refusal.error instanceof ConflictError) {
          return <AlreadyDecidedPage person={person} decision={await this.agents.decision(caller, turnId)} attempted={attempted} />;
        }
        if (refusal.field === 'body' && editAgain) return editAgain(refusal);
        throw refusal.error;
      },
    });
  }

  /** The draft with its thread as get_thread gives it to the person: partner, line and the last messages, oldest of them first. */
  private async draftOf(caller: Caller, person: Person, turn: AgentTurnView): Promise<Draft> {
    const detail = await this.threads.get(caller, turn.threadId, { limit: CONTEXT_MESSAGES, maxBodyChars: CONTEXT_BODY_CHARS });
    const inbound = detail.messages.find((m) => m.direction === 'INBOUND');
    return {
      turn,
      thread: detail.thread,
      partner: detail.person?.displayName ?? inbound?.fromIdentity.value ?? 'Unknown partner',
      lineAddress: person.lines.find((l) => l.id === detail.thread.lineId)?.address ?? '',
      recent: [...detail.messages].reverse(),
    };
  }
}

/** Where a decision sends the person: back to the draft's own conversation when decided there, else the Approvals list; with the notice. */
function decided(turn: AgentTurnView, back: unknown, done: ApprovalsNotice): Outcome {
  return { redirect: withNotice(decidedFrom(back) === 'thread' ? conversationHref(turn.threadId) : BASE, done) };
}

/** A draft whose thread left the person's lines between the list and its thread's read is left out, as the next load would. */
function goneAsNull(error: unknown): null {
  if (error instanceof NotFoundError) return null;
  throw error;
}

/** The Reject form's optional reason (reject_agent_turn's `reason`; AgentsService bounds it). */
function reasonOf(form: Form | undefined): string | undefined {
  const reason = form?.reason;
  return typeof reason === 'string' ? reason : undefined;
}
