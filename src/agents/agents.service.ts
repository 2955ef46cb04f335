import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { roleAtLeast } from '../identity/roles';
import { Principal } from '../identity/principal';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../common/errors';
import { isIsoTimestamp, KeysetCursors } from '../common/keyset-cursor';
import { EventBus } from '../events/event-bus';
import { MessageDataBuilder } from '../conversations/message-data.builder';
import { OutboundService } from '../conversations/outbound/outbound.service';
import { ThreadAccessRepository } from '../conversations/threads/thread-access.repository';
import {
  AgentMode,
  AGENTS_PAGE_SIZE,
  AgentTurnRef,
  AgentTurnView,
  AgentView,
  REJECTION_REASON_MAX,
  toolTurn,
  TURN_DECISION_ROLE,
  TURNS_PAGE_SIZE,
} from './agent.types';
import { DraftHolds, DraftKeeper } from '../conversations/outbound/draft-holds';
import { QueuedMessage } from '../conversations/outbound/outbound.repository';
import { checkReplyBody } from '../conversations/outbound/reply-body';
import { originOf } from '../conversations/outbound/send-origin';
import { AgentRow, AgentsRepository, TurnListFilter, TurnRow } from './agents.repository';
import { LinesRepository } from '../identity/lines.repository';

export interface TurnFilter extends TurnListFilter {
  cursor?: string;
}

const LIST_TOOL = 'list_agent_turns';
/** The cursors of awaitingOldestFirst: a list_agent_turns cursor runs the other way, so each refuses the other's. */
const AWAITING_LIST = 'awaiting_agent_turns';

/**
 * threadsAwaitingApproval without thread ids answers the threads of the newest this many drafts
 * (the Conversations page's "awaiting approval" filter; the Approvals page lists every draft).
 */
export const AWAITING_THREADS_LIMIT = 250;

/**
 * Agents (one line each) and their turns. The rules live here once, for the REST routes and the
 * tools alike: an agent, a thread or a turn off the caller's lines reads as not found; a DRAFT
 * turn waits for approval; sending is OutboundService's (the reply is QUEUED and handed off by
 * the same job as send_sms); each agent_turn event is published in the transaction that writes
 * the turn (and its message).
 */
@Injectable()
export class AgentsService implements OnModuleInit, DraftKeeper {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly agents: AgentsRepository,
    private readonly lines: LinesRepository,
    private readonly outbound: OutboundService,
    private readonly threadAccess: ThreadAccessRepository,
    private readonly data: MessageDataBuilder,
    private readonly bus: EventBus,
    private readonly cursors: KeysetCursors,
    private readonly drafts: DraftHolds,
  ) {}

  /** A draft-only credential's sends are held here (OutboundService.insertQueued asks DraftHolds). */
  onModuleInit(): void {
    this.drafts.register(this);
  }

  /**
   * A draft-only credential's send (issue 45), admitted by the send gate in this transaction: held
   * as a turn AWAITING_APPROVAL with the whole message as proposed, agent_turn.awaiting_approval
   * published. The credential cannot decide it (approving needs `send`).
   */
  async hold(tx: EntityManager, m: QueuedMessage): Promise<string> {
    const keyId = m.origin.keyId;
    if (keyId === null) throw new Error("only a credential's send is held as a draft");
    const turnId = await this.agents.insertCredentialDraft(tx, { ...m, origin: { ...m.origin, keyId } });
    await this.publish(tx, 'agent_turn.awaiting_approval', turnId);
    return turnId;
  }

  /** The held draft as the send tools answer it: get_agent_turn's turn, its body cut as list_agent_turns cuts it. */
  async view(turnId: string): Promise<object> {
    return toolTurn(toTurnView(await this.turnRow(this.dataSource.manager, turnId)));
  }

  /** Admin: a new agent on a live line. */
  async createAgent(lineId: string, input: { name: string; mode: AgentMode }): Promise<AgentView> {
    const line = await this.lines.liveLine(lineId);
    if (!line) throw NotFoundError.of('line', lineId, 'lineId');
    return toAgentView(await this.agents.insertAgent(line, { name: input.name.trim(), mode: input.mode }));
  }

  /** The agents on the caller's lines (an agent on another line reads as not there), by name, AGENTS_PAGE_SIZE a page. */
  async listAgents(caller: Principal, input: { cursor?: string }): Promise<{ agents: AgentView[]; nextCursor: string | null }> {
    const after = input.cursor === undefined ? null : this.cursors.decode('list_agents', input.cursor, (key) => key.length > 0 && key.length <= 400);
    const rows = await this.agents.agentsForCaller(caller, after, AGENTS_PAGE_SIZE + 1);
    const page = rows.slice(0, AGENTS_PAGE_SIZE);
    const last = page[page.length - 1];
    return {
      agents: page.map(toAgentView),
      nextCursor: rows.length > AGENTS_PAGE_SIZE && last ? this.cursors.encode('list_agents', { key: last.name, id: last.id }) : null,
    };
  }

  /**
   * The agent runtime proposes a reply. DRAFT: the turn waits (agent_turn.awaiting_approval).
   * AUTO, SUPERVISED: the reply is queued now and the turn is SENT (agent_turn.sent).
   */
  async createTurn(caller: Principal, agentId: string, input: { threadId: string; body: string }): Promise<AgentTurnView> {
    const { turnId, messageId } = await this.dataSource.transaction(async (tx) => {
      const agent = await this.agentForCaller(tx, caller, agentId);
      const thread = await this.threadAccess.threadForCaller(tx, caller, input.threadId);
      if (thread.line_id !== agent.line_id) {
        throw new NotFoundError(`thread ${input.threadId} not found on the line of agent ${agentId}`, 'threadId');
      }
      checkReplyBody(thread.channel, input.body);
      if (agent.mode === 'DRAFT') {
        const turnId = await this.agents.insertAwaitingTurn(tx, agent, thread, input.body);
        await this.publish(tx, 'agent_turn.awaiting_approval', turnId);
        return { turnId, messageId: null };
      }
      const sent = await this.outbound.queueReply(tx, originOf(caller), agent.org_id, thread, input.body);
      const turnId = await this.agents.insertSentTurn(tx, agent, thread, input.body, sent);
      await this.publish(tx, 'agent_turn.sent', turnId);
      return { turnId, messageId: sent };
    });
    if (messageId) await this.outbound.enqueue(messageId);
    return this.turnView(turnId);
  }

  /**
   * A human approves a draft: it is sent like an AUTO reply (agent_turn.sent). With `editedBody`,
   * that text (checked by the rule of every reply) is sent instead and replaces the draft on the turn.
   * A credential's draft sends its proposal as it was proposed (channel, to, subject, headers),
   * for the approver (the send gate is asked again, with the approver's origin).
   */
  async approve(caller: Principal, turnId: string, editedBody?: string): Promise<AgentTurnView> {
    this.checkDecisionRole(caller);
    const sent = await this.dataSource.transaction(async (tx) => {
      const turn = await this.awaitingTurn(tx, caller, turnId, 'approved');
      const thread = await this.threadAccess.threadForCaller(tx, caller, turn.thread_id);
      if (editedBody !== undefined) checkReplyBody(thread.channel, editedBody);
      const body = editedBody ?? turn.body;
      const sent = turn.proposal
        ? await this.outbound.sendProposal(tx, editedProposal(turn.proposal, editedBody), originOf(caller))
        : { id: await this.outbound.queueReply(tx, originOf(caller), turn.org_id, thread, body), sendAt: null };
      await this.agents.markApproved(tx, caller, turn, sent.id, body);
      await this.publish(tx, 'agent_turn.sent', turn.id);
      return sent;
    });
    await this.outbound.dispatch(sent.id, sent.sendAt);
    return this.turnView(turnId);
  }

  /**
   * A human rejects a draft, for `reason` if they give one (at most REJECTION_REASON_MAX characters,
   * kept on the turn): nothing is sent, and agent_turn.rejected tells the webhook and the agent.
   */
  async reject(caller: Principal, turnId: string, reason?: string): Promise<AgentTurnView> {
    this.checkDecisionRole(caller);
    const given = reason?.trim() ? reason.trim() : null;
    if (given !== null && given.length > REJECTION_REASON_MAX) {
      throw new ValidationError(`reason must be at most ${REJECTION_REASON_MAX} characters (it has ${given.length})`, 'reason');
    }
    await this.dataSource.transaction(async (tx) => {
      const turn = await this.awaitingTurn(tx, caller, turnId, 'rejected');
      await this.agents.markRejected(tx, caller, turn, given);
      await this.publish(tx, 'agent_turn.rejected', turn.id);
    });
    return this.turnView(turnId);
  }

  /** One turn on the caller's lines, with its drafted (or sent) body; list_agent_turns' rule: any other reads as not found. */
  async getTurn(caller: Principal, turnId: string): Promise<AgentTurnView> {
    const turn = await this.agents.turnForCaller(this.dataSource.manager, caller, turnId);
    if (!turn) throw NotFoundError.of('agent turn', turnId, 'turnId');
    return toTurnView(turn);
  }

  /** Turns on the caller's lines, newest first, TURNS_PAGE_SIZE a page; nextCursor pages on. A thread's are read with `manager` when given. */
  async list(caller: Principal, filter: TurnFilter, manager?: EntityManager): Promise<{ turns: AgentTurnView[]; nextCursor: string | null }> {
    const after = filter.cursor === undefined ? null : this.cursors.decode(LIST_TOOL, filter.cursor, isIsoTimestamp);
    const rows = await this.agents.list(caller, filter, after, TURNS_PAGE_SIZE + 1, 'newest', manager);
    const page = rows.slice(0, TURNS_PAGE_SIZE);
    const last = page[page.length - 1];
    return {
      turns: page.map(toTurnView),
      nextCursor: rows.length > TURNS_PAGE_SIZE && last ? this.cursors.encode(LIST_TOOL, { key: last.created_at.toISOString(), id: last.id }) : null,
    };
  }

  /**
   * The threads with a draft awaiting a human (a turn AWAITING_APPROVAL on the caller's lines, the
   * rule of list_agent_turns): among `threadIds` when given, else those of the newest
   * AWAITING_THREADS_LIMIT drafts (the web app's marker and filter on Conversations).
   */
  threadsAwaitingApproval(caller: Principal, threadIds?: string[]): Promise<string[]> {
    if (threadIds !== undefined && threadIds.length === 0) return Promise.resolve([]);
    return this.agents.threadsAwaitingApproval(caller, threadIds, AWAITING_THREADS_LIMIT);
  }

  /**
   * The drafts awaiting a human on the caller's lines, oldest first (the Approvals page: the one
   * waiting longest comes first), `limit` a page; nextCursor pages on. list's rule of which turns a
   * caller sees, in the other order.
   */
  async awaitingOldestFirst(caller: Principal, input: { cursor?: string; limit: number }): Promise<{ turns: AgentTurnView[]; nextCursor: string | null }> {
    const after = input.cursor === undefined ? null : this.cursors.decode(AWAITING_LIST, input.cursor, isIsoTimestamp);
    const rows = await this.agents.list(caller, { status: 'AWAITING_APPROVAL' }, after, input.limit + 1, 'oldest');
    const page = rows.slice(0, input.limit);
    const last = page[page.length - 1];
    return {
      turns: page.map(toTurnView),
      nextCursor: rows.length > input.limit && last ? this.cursors.encode(AWAITING_LIST, { key: last.created_at.toISOString(), id: last.id }) : null,
    };
  }

  /** A turn on the caller's lines (getTurn's rule) with who decided it, by name and email: what a refused second decision tells the person. */
  async decision(caller: Principal, turnId: string): Promise<{ turn: AgentTurnView; decidedBy: { email: string; displayName: string } | null }> {
    const turn = await this.agents.turnForCaller(this.dataSource.manager, caller, turnId);
    if (!turn) throw NotFoundError.of('agent turn', turnId, 'turnId');
    return { turn: toTurnView(turn), decidedBy: await this.agents.deciderOf(this.dataSource.manager, turn) };
  }

  /** The agent if its line is one the caller may use; anything else reads as not found. */
  private async agentForCaller(tx: EntityManager, caller: Principal, agentId: string): Promise<AgentRow> {
    const agent = await this.agents.agentForCaller(tx, caller, agentId);
    if (!agent) throw NotFoundError.of('agent', agentId, 'agentId');
    return agent;
  }

  /** The turn, locked, if it is on the caller's lines and still awaiting approval. */
  private async awaitingTurn(tx: EntityManager, caller: Principal, turnId: string, decision: 'approved' | 'rejected'): Promise<TurnRow> {
    const turn = await this.agents.lockTurnForCaller(tx, caller, turnId);
    if (!turn) throw NotFoundError.of('agent turn', turnId, 'turnId');
    if (turn.status !== 'AWAITING_APPROVAL') {
      throw new ConflictError(`agent turn ${turnId} is ${turn.status}; only a turn AWAITING_APPROVAL can be ${decision}`, 'turnId');
    }
    return turn;
  }

  private checkDecisionRole(caller: Principal): void {
    if (!roleAtLeast(caller.role, TURN_DECISION_ROLE)) {
      throw new ForbiddenError(`approving or rejecting an agent turn needs the ${TURN_DECISION_ROLE} role or higher`);
    }
  }

  /**
   * agent_turn.* with the thread envelope (no message block), in the transaction of the change. A
   * credential's draft has agent null and its `credential`; agent_turn.rejected carries `rejectionReason`.
   */
  private async publish(tx: EntityManager, type: 'agent_turn.awaiting_approval' | 'agent_turn.sent' | 'agent_turn.rejected', turnId: string): Promise<void> {
    const turn = await this.turnRow(tx, turnId);
    const envelope = await this.data.buildThreadEnvelope(turn.thread_id, tx);
    const { id, status, threadId, messageId, createdAt, agent, credential, rejectionReason } = toTurnView(turn);
    const agentTurn: AgentTurnRef = { id, status, threadId, messageId, createdAt, agent, ...(credential && { credential }) };
    if (type === 'agent_turn.rejected') agentTurn.rejectionReason = rejectionReason;
    await this.bus.publish({ type, orgId: turn.org_id, lineId: turn.line_id, data: { ...envelope, agentTurn } }, tx);
  }

  private async turnRow(manager: EntityManager, turnId: string): Promise<TurnRow> {
    const turn = await this.agents.turn(manager, turnId);
    if (!turn) throw new Error(`agent turn ${turnId} does not exist`);
    return turn;
  }

  private async turnView(turnId: string): Promise<AgentTurnView> {
    return toTurnView(await this.turnRow(this.dataSource.manager, turnId));
  }
}

/**
 * A credential draft's proposal as approved: as proposed, or with the approver's edited text. An
 * email whose HTML part carries a read receipt's pixel is sent as written or not at all (its HTML
 * is the proposed text's).
 */
function editedProposal(proposal: QueuedMessage, editedBody: string | undefined): QueuedMessage {
  if (editedBody === undefined || editedBody === proposal.body) return proposal;
  if (proposal.html) {
    throw new ValidationError(
      'body: this draft is an email with a read receipt (its HTML part is the proposed text): approve it as written or reject it',
      'body',
    );
  }
  return { ...proposal, body: editedBody };
}

function toAgentView(a: AgentRow): AgentView {
  return { id: a.id, lineId: a.line_id, name: a.name, mode: a.mode, createdAt: a.created_at.toISOString() };
}

function toTurnView(t: TurnRow): AgentTurnView {
  return {
    id: t.id,
    status: t.status,
    threadId: t.thread_id,
    messageId: t.message_id,
    createdAt: t.created_at.toISOString(),
    // A credential's draft: the credential acting as a DRAFT-mode agent (the spec's agentTurn needs an agent; `credential` says which it is).
    agent:
      t.agent_id !== null ? { id: t.agent_id, name: t.agent_name!, mode: t.agent_mode! } : { id: t.credential_id!, name: t.credential_name!, mode: 'DRAFT' },
    ...(t.credential_id !== null && { credential: { id: t.credential_id, name: t.credential_name!, kind: t.credential_kind! } }),
    body: t.body,
    decidedByUserId: t.decided_by,
    decidedAt: t.decided_at?.toISOString() ?? null,
    rejectionReason: t.rejection_reason,
  };
}
