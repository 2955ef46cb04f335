import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../identity/principal';
import { callerLines } from '../identity/line-access.sql';
import { KeysetPosition } from '../common/keyset-cursor';
import { inIndexOrder, queryNamed } from '../database/sql';
import { CallerThread } from '../conversations/threads/thread-access.repository';
import { QueuedMessage } from '../conversations/outbound/outbound.repository';
import { AgentMode, TURN_STATUSES, TurnStatus } from './agent.types';

export interface AgentRow {
  id: string;
  org_id: string;
  line_id: string;
  name: string;
  mode: AgentMode;
  created_at: Date;
}

/** A credential draft's author: an API key or an OAuth grant (an app a person connected). */
export type CredentialKind = 'API_KEY' | 'OAUTH_GRANT';

/** A turn with its agent, or, for a draft-only credential's draft, with no agent and the credential and proposal. */
export interface TurnRow {
  id: string;
  org_id: string;
  status: TurnStatus;
  thread_id: string;
  message_id: string | null;
  body: string;
  created_at: Date;
  decided_by: string | null;
  decided_at: Date | null;
  agent_id: string | null;
  agent_name: string | null;
  agent_mode: AgentMode | null;
  /** The agent's line, or a credential draft's own. */
  line_id: string;
  credential_id: string | null;
  credential_name: string | null;
  credential_kind: CredentialKind | null;
  /** A credential draft's message as proposed (QueuedMessage). */
  proposal: QueuedMessage | null;
  rejection_reason: string | null;
}

/** Which turns come first: list_agent_turns shows the newest, the Approvals page the oldest waiting. */
export type TurnOrder = 'newest' | 'oldest';

/** list_agent_turns' filters (undefined: any). */
export interface TurnListFilter {
  threadId?: string;
  agentId?: string;
  status?: TurnStatus;
}

/** A turn's columns, from `agent_turns t LEFT JOIN agents a` (TURN_FROM): a credential's draft has no agent. */
const TURN_COLUMNS = `t.id, t.org_id, t.status, t.thread_id, t.message_id, t.body, t.created_at, t.decided_by, t.decided_at,
  a.id AS agent_id, a.name AS agent_name, a.mode AS agent_mode, COALESCE(a.line_id, t.line_id) AS line_id,
  t.credential_id, t.credential_name, t.credential_kind, t.proposal, t.rejection_reason`;
const TURN_FROM = 'agent_turns t LEFT JOIN agents a ON a.id = t.agent_id';
/** The line a turn goes from: its agent's, or a credential draft's own. */
const TURN_LINE = 'COALESCE(a.line_id, t.line_id)';

/**
 * SQL of agents and their turns. A method for a caller takes the `Principal` and keeps to the lines
 * it may see (callerLines: the agent's line); one that writes a turn takes the agent, thread or turn
 * rows such a method answered in the same transaction. createAgent's two methods are the
 * administrator's, who acts on any line. Rules live in AgentsService.
 */
@Injectable()
export class AgentsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** For the administrator: a new agent on a line LinesRepository.liveLine answered, in the line's org. */
  async insertAgent(line: { id: string; org_id: string }, agent: { name: string; mode: AgentMode }): Promise<AgentRow> {
    const [row] = await this.dataSource.transaction((manager) =>
      queryNamed<AgentRow[]>(manager, `INSERT INTO agents (org_id, line_id, name, mode) VALUES (:orgId, :lineId, :name, :mode) RETURNING *`, {
        orgId: line.org_id,
        lineId: line.id,
        name: agent.name,
        mode: agent.mode,
      }),
    );
    return row;
  }

  /** The agent if it is on a line the caller may see (callerLines); null otherwise. */
  async agentForCaller(manager: EntityManager, caller: Principal, agentId: string): Promise<AgentRow | null> {
    const scope = callerLines(caller, 'a.line_id', 'a.org_id');
    const [agent] = await queryNamed<AgentRow[]>(manager, `SELECT a.* FROM agents a WHERE a.id = :agentId AND ${scope.sql}`, { agentId, ...scope.parameters });
    return agent ?? null;
  }

  /** Up to `limit` agents on lines the caller may see (callerLines), by name then id, after the keyset position `after`. */
  agentsForCaller(caller: Principal, after: KeysetPosition | null, limit: number): Promise<AgentRow[]> {
    const scope = callerLines(caller, 'a.line_id', 'a.org_id');
    return queryNamed(
      this.dataSource.manager,
      `SELECT a.* FROM agents a
        WHERE ${scope.sql}
          AND (:afterKey::text IS NULL OR (a.name, a.id) > (:afterKey::text, :afterId::uuid))
        ORDER BY a.name, a.id LIMIT :limit`,
      { ...scope.parameters, afterKey: after?.key ?? null, afterId: after?.id ?? null, limit },
    );
  }

  /** A draft turn waiting for approval, of an agent and on a thread the caller's transaction checked (agentForCaller, threadForCaller); answers its id. */
  async insertAwaitingTurn(manager: EntityManager, agent: AgentRow, thread: CallerThread, body: string): Promise<string> {
    const [turn] = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO agent_turns (org_id, agent_id, thread_id, status, body) VALUES (:orgId, :agentId, :threadId, 'AWAITING_APPROVAL', :body) RETURNING id`,
      { orgId: agent.org_id, agentId: agent.id, threadId: thread.id, body },
    );
    return turn.id;
  }

  /** A sent turn, as insertAwaitingTurn, with the message queued for it; answers its id. */
  async insertSentTurn(manager: EntityManager, agent: AgentRow, thread: CallerThread, body: string, messageId: string): Promise<string> {
    const [turn] = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO agent_turns (org_id, agent_id, thread_id, status, body, message_id) VALUES (:orgId, :agentId, :threadId, 'SENT', :body, :messageId) RETURNING id`,
      { orgId: agent.org_id, agentId: agent.id, threadId: thread.id, body, messageId },
    );
    return turn.id;
  }

  /**
   * A draft-only credential's draft: the message as proposed (its thread, line and body among it),
   * held AWAITING_APPROVAL, with the credential named as it is now (an API key's name, an app's
   * client name); answers its id. The gate admitted the message in this transaction.
   */
  async insertCredentialDraft(manager: EntityManager, m: QueuedMessage & { origin: { keyId: string } }): Promise<string> {
    const [turn] = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO agent_turns (org_id, thread_id, line_id, status, body, credential_id, credential_name, credential_kind, proposal)
       SELECT :orgId, :threadId, :lineId, 'AWAITING_APPROVAL', :body, c.id, c.name, c.kind, :proposal::jsonb
         FROM (SELECT k.id, k.name, 'API_KEY' AS kind FROM api_keys k JOIN users ku ON ku.id = k.user_id WHERE k.id = :keyId AND ku.org_id = :orgId
               UNION ALL
               SELECT g.id, COALESCE(oc.client_name, g.client_id), 'OAUTH_GRANT' FROM oauth_grants g
                 JOIN oauth_clients oc ON oc.client_id = g.client_id JOIN users u ON u.id = g.user_id
                WHERE g.id = :keyId AND u.org_id = :orgId) c
       RETURNING id`,
      { orgId: m.orgId, threadId: m.threadId, lineId: m.lineId, body: m.body, keyId: m.origin.keyId, proposal: JSON.stringify(m) },
    );
    if (!turn) throw new Error(`credential ${m.origin.keyId} is neither an API key nor an OAuth grant of org ${m.orgId}`);
    return turn.id;
  }

  /** The turn, locked, if its agent is on a line the caller may see (callerLines); null otherwise. */
  lockTurnForCaller(manager: EntityManager, caller: Principal, turnId: string): Promise<TurnRow | null> {
    return this.turnForCaller(manager, caller, turnId, 'FOR UPDATE OF t');
  }

  /** The turn if its agent is on a line the caller may see (lockTurnForCaller's rule, not locked); null otherwise. */
  async turnForCaller(manager: EntityManager, caller: Principal, turnId: string, lock: 'FOR UPDATE OF t' | '' = ''): Promise<TurnRow | null> {
    const scope = callerLines(caller, TURN_LINE, 't.org_id');
    const [turn] = await queryNamed<TurnRow[]>(
      manager,
      `SELECT ${TURN_COLUMNS} FROM ${TURN_FROM}
        WHERE t.id = :turnId AND ${scope.sql}
        ${lock}`,
      { turnId, ...scope.parameters },
    );
    return turn ?? null;
  }

  /** The caller approved the turn (as lockTurnForCaller answered it, in this transaction): SENT with its message, whose text `body` is. */
  async markApproved(manager: EntityManager, caller: Principal, turn: TurnRow, messageId: string, body: string): Promise<void> {
    await queryNamed(
      manager,
      `UPDATE agent_turns SET status = 'SENT', body = :body, message_id = :messageId, decided_by = :userId, decided_at = now() WHERE id = :turnId`,
      { turnId: turn.id, body, messageId, userId: caller.userId },
    );
  }

  /** The caller rejected the turn (as lockTurnForCaller answered it, in this transaction), for `reason` if they gave one. */
  async markRejected(manager: EntityManager, caller: Principal, turn: TurnRow, reason: string | null): Promise<void> {
    await queryNamed(
      manager,
      `UPDATE agent_turns SET status = 'REJECTED', rejection_reason = :reason, decided_by = :userId, decided_at = now() WHERE id = :turnId`,
      { turnId: turn.id, userId: caller.userId, reason },
    );
  }

  /**
   * Up to `limit` turns whose agent is on a line the caller may see, newest first (or oldest first
   * with `order` 'oldest'), after the keyset position `after` (created_at, id). Of one thread: from the thread's turns
   * (agent_turns_thread_idx). Otherwise each of the caller's agents' newest `limit` turns are read
   * from an index and merged (agent_turns_agent_recent_idx, or agent_turns_awaiting_idx for the
   * drafts awaiting approval), so a page costs the page times the caller's agents, not the org's
   * turns. Each filter present gives its own fixed text (the status as a literal of
   * TURN_STATUSES, so a generic plan can use the partial index): every statement stays prepared.
   * A thread's turns are read with `manager` (a transaction of the caller's: the thread page's
   * snapshot); the merged page runs in a transaction of its own (inIndexOrder).
   */
  list(
    caller: Principal,
    filter: TurnListFilter,
    after: KeysetPosition | null,
    limit: number,
    order: TurnOrder = 'newest',
    manager: EntityManager = this.dataSource.manager,
  ): Promise<TurnRow[]> {
    const status = TURN_STATUSES.find((s) => s === filter.status);
    // Two fixed texts: newest first (the tools) or oldest first (the Approvals page), the same indexes read backwards.
    const [direction, past] = order === 'oldest' ? ['ASC', '>'] : ['DESC', '<'];
    const turnConditions = [
      ...(status ? [`t.status = '${status}'`] : []),
      ...(filter.agentId !== undefined ? ['t.agent_id = :agentId'] : []),
      ...(after ? [`(t.created_at, t.id) ${past} (:afterKey::timestamptz, :afterId::uuid)`] : []),
    ];
    const parameters = {
      limit,
      ...(filter.threadId !== undefined && { threadId: filter.threadId }),
      ...(filter.agentId !== undefined && { agentId: filter.agentId }),
      ...(after && { afterKey: after.key, afterId: after.id }),
    };
    if (filter.threadId !== undefined) {
      const scope = callerLines(caller, TURN_LINE, 't.org_id');
      return queryNamed(
        manager,
        `SELECT ${TURN_COLUMNS} FROM ${TURN_FROM}
          WHERE t.thread_id = :threadId AND ${[scope.sql, ...turnConditions].join(' AND ')}
          ORDER BY t.created_at ${direction}, t.id ${direction} LIMIT :limit`,
        { ...scope.parameters, ...parameters },
      );
    }
    const scope = callerLines(caller, 'a.line_id', 'a.org_id');
    const ofAgents = `SELECT t.* FROM agents a
        CROSS JOIN LATERAL (SELECT t.* FROM agent_turns t
                             WHERE ${['t.agent_id = a.id', ...turnConditions].join(' AND ')}
                             ORDER BY t.created_at ${direction}, t.id ${direction} LIMIT :limit) t
        WHERE ${scope.sql} ${filter.agentId !== undefined ? 'AND a.id = :agentId' : ''}
        ORDER BY t.created_at ${direction}, t.id ${direction} LIMIT :limit`;
    // Credential drafts (no agent), none when an agent is asked for: each of the caller's lines' newest
    // `limit` from agent_turns_credential_recent_idx, merged, as the agents' above. Read as one scan
    // of the org's turns filtered on agent_id IS NULL, a generic plan chose agent_turns_org_recent_idx
    // whenever the statistics made credential drafts look common, and then read every turn of the
    // org past the cursor to find none (test/mcp/read-plans). The lines are checked as the caller's
    // org's by callerLines' own subquery, so no org column is needed here.
    const credentialScope = callerLines(caller, 'cl.id');
    const ofCredentials = `SELECT t.* FROM unnest(CAST(:scopeLineIds AS uuid[])) AS cl(id)
        CROSS JOIN LATERAL (SELECT t.* FROM agent_turns t
                             WHERE ${['t.agent_id IS NULL', 't.line_id = cl.id', ...turnConditions].join(' AND ')}
                             ORDER BY t.created_at ${direction}, t.id ${direction} LIMIT :limit) t
        WHERE ${credentialScope.sql}
        ORDER BY t.created_at ${direction}, t.id ${direction} LIMIT :limit`;
    const union = filter.agentId !== undefined ? `(${ofAgents})` : `(${ofAgents}) UNION ALL (${ofCredentials})`;
    return inIndexOrder(this.dataSource, (manager) =>
      queryNamed(
        manager,
        `SELECT ${TURN_COLUMNS} FROM (${union}) t LEFT JOIN agents a ON a.id = t.agent_id
        ORDER BY t.created_at ${direction}, t.id ${direction} LIMIT :limit`,
        { ...scope.parameters, ...parameters },
      ),
    );
  }

  /** Who decided a turn (as turnForCaller answered it): a user of the turn's org, or null while undecided. */
  async deciderOf(manager: EntityManager, turn: TurnRow): Promise<{ email: string; displayName: string } | null> {
    if (turn.decided_by === null) return null;
    const [user] = await queryNamed<Array<{ email: string; displayName: string }>>(
      manager,
      `SELECT email, display_name AS "displayName" FROM users WHERE id = :userId AND org_id = :orgId`,
      { userId: turn.decided_by, orgId: turn.org_id },
    );
    return user ?? null;
  }

  /**
   * Which threads have a turn AWAITING_APPROVAL whose agent is on a line the caller may see
   * (callerLines). Among `threadIds` (a page of threads): from each thread's turns
   * (agent_turns_thread_idx). Without: the threads of the newest `limit` drafts, each agent's newest
   * merged (agent_turns_awaiting_idx, drafts only), so the read is the caller's agents × `limit`
   * entries at most, however many drafts wait.
   */
  async threadsAwaitingApproval(caller: Principal, threadIds: string[] | undefined, limit: number): Promise<string[]> {
    const scope = callerLines(caller, 'a.line_id', 'a.org_id');
    const credentialScope = callerLines(caller, 't.line_id', 't.org_id');
    // Among threadIds: an agent's drafts through their agent's line (as before credential drafts), a
    // credential's by their own line, each joined by thread id only, so each reads its threads' turns
    // and never the org's (no org column on agent_turns in either half: the lines are the caller's org's).
    const threadScope = callerLines(caller, 't.line_id');
    const rows = await queryNamed<Array<{ thread_id: string }>>(
      this.dataSource.manager,
      threadIds !== undefined
        ? `SELECT t.thread_id FROM unnest(:threadIds::uuid[]) AS x(id)
             JOIN agent_turns t ON t.thread_id = x.id AND t.status = 'AWAITING_APPROVAL'
             JOIN agents a ON a.id = t.agent_id
            WHERE ${scope.sql}
           UNION
           SELECT t.thread_id FROM unnest(:threadIds::uuid[]) AS x(id)
             JOIN agent_turns t ON t.thread_id = x.id AND t.status = 'AWAITING_APPROVAL' AND t.agent_id IS NULL
            WHERE ${threadScope.sql}`
        : `SELECT DISTINCT newest.thread_id FROM (
             (SELECT t.thread_id, t.created_at, t.id FROM agents a
              CROSS JOIN LATERAL (SELECT t.thread_id, t.created_at, t.id FROM agent_turns t
                                   WHERE t.agent_id = a.id AND t.status = 'AWAITING_APPROVAL'
                                   ORDER BY t.created_at DESC, t.id DESC LIMIT :limit) t
              WHERE ${scope.sql}
              ORDER BY t.created_at DESC, t.id DESC LIMIT :limit)
             UNION ALL
             (SELECT t.thread_id, t.created_at, t.id FROM agent_turns t
               WHERE t.agent_id IS NULL AND t.status = 'AWAITING_APPROVAL' AND ${credentialScope.sql}
               ORDER BY t.created_at DESC, t.id DESC LIMIT :limit)
             ORDER BY created_at DESC, id DESC LIMIT :limit) newest`,
      { ...scope.parameters, ...(threadIds !== undefined ? { threadIds } : { limit }) },
    );
    return rows.map((r) => r.thread_id);
  }

  /**
   * A turn by id alone, with no caller condition: for a turn this service has just written or
   * checked for the caller (its event, its view in the answer).
   */
  async turn(manager: EntityManager, turnId: string): Promise<TurnRow | null> {
    const [turn] = await queryNamed<TurnRow[]>(manager, `SELECT ${TURN_COLUMNS} FROM ${TURN_FROM} WHERE t.id = :turnId`, {
      turnId,
    });
    return turn ?? null;
  }
}
