import { Body, Controller, Get, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { AgentTurnView } from '../../agents/agent.types';
import { AgentsService } from '../../agents/agents.service';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person, Principal } from '../../identity/principal';
import { httpStatusOf } from '../../common/error-status';
import { ConflictError, NotFoundError, ValidationError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { UuidParam } from '../../common/uuid-param';
import { BODY_MAX } from '../../conversations/outbound/reply-body';
import { ThreadsService } from '../../conversations/threads/threads.service';
import { AlreadyDecidedPage, ApprovalsPage, conversationHref, decidedFrom, Draft, EditDraftPage, Notice, NOTICES } from './approvals.pages';
import { PageErrorFilter } from './page-error.filter';
import { seeOther, sendPage } from './render';
import { FORM_LIMIT } from './sign-in.controller';

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
    const done = typeof query.done === 'string' && Object.hasOwn(NOTICES, query.done) ? NOTICES[query.done as Notice] : undefined;
    sendPage(response, 200, <ApprovalsPage person={person} drafts={drafts} nextCursor={page.nextCursor} paged={cursor !== undefined} notice={done} />);
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':turnId/approve')
  async approve(
    @CurrentPrincipal() person: Person,
    @Param('turnId', UuidParam('turnId')) turnId: string,
    @Body() form: Form,
    @Res() response: Response,
  ): Promise<void> {
    const caller = person;
    let turn: AgentTurnView;
    try {
      turn = await this.agents.approve(caller, turnId);
    } catch (error) {
      return this.refuse(error, caller, person, turnId, 'approve', response);
    }
    seeOther(response, decidedPath(turn, form?.back, 'approved'));
  }

  @Get(':turnId/edit')
  async editForm(
    @CurrentPrincipal() person: Person,
    @Param('turnId', UuidParam('turnId')) turnId: string,
    @Query('back') back: unknown,
    @Res() response: Response,
  ): Promise<void> {
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
  async edit(
    @CurrentPrincipal() person: Person,
    @Param('turnId', UuidParam('turnId')) turnId: string,
    @Body() form: Form,
    @Res() response: Response,
  ): Promise<void> {
    const caller = person;
    // Line breaks as typed (LF): the form reader undoes HTML's CRLF encoding (request-body.ts).
    const body = form?.body ?? '';
    let turn: AgentTurnView;
    try {
      turn = await this.agents.approve(caller, turnId, body);
    } catch (error) {
      if (!(error instanceof ValidationError && error.field === 'body')) return this.refuse(error, caller, person, turnId, 'edit', response);
      const draft = await this.draftOf(caller, person, await this.agents.getTurn(caller, turnId));
      return sendPage(
        response,
        httpStatusOf(error),
        <EditDraftPage person={person} draft={draft} body={body} error={error.message} from={decidedFrom(form?.back)} />,
      );
    }
    seeOther(response, decidedPath(turn, form?.back, 'edited'));
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':turnId/reject')
  async reject(
    @CurrentPrincipal() person: Person,
    @Param('turnId', UuidParam('turnId')) turnId: string,
    @Body() form: Form,
    @Res() response: Response,
  ): Promise<void> {
    const caller = person;
    let turn: AgentTurnView;
    try {
      turn = await this.agents.reject(caller, turnId);
    } catch (error) {
      return this.refuse(error, caller, person, turnId, 'reject', response);
    }
    seeOther(response, decidedPath(turn, form?.back, 'rejected'));
  }

  /** A turn decided before (by anyone, or by this very form sent twice): 409 with who decided it; any other error goes to the error page. */
  private async refuse(
    error: unknown,
    caller: Principal,
    person: Person,
    turnId: string,
    attempted: 'approve' | 'edit' | 'reject',
    response: Response,
  ): Promise<void> {
    if (!(error instanceof ConflictError)) throw error;
    const decision = await this.agents.decision(caller, turnId);
    sendPage(response, httpStatusOf(error), <AlreadyDecidedPage person={person} decision={decision} attempted={attempted} />);
  }

  /** The draft with its thread as get_thread gives it to the person: partner, line and the last messages, oldest of them first. */
  private async draftOf(caller: Principal, person: Person, turn: AgentTurnView): Promise<Draft> {
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
function decidedPath(turn: AgentTurnView, back: unknown, done: Notice): string {
  return decidedFrom(back) === 'thread' ? `${conversationHref(turn.threadId)}?done=${done}` : `${BASE}?done=${done}`;
}

/** A draft whose thread left the person's lines between the list and its thread's read is left out, as the next load would. */
function goneAsNull(error: unknown): null {
  if (error instanceof NotFoundError) return null;
  throw error;
}
