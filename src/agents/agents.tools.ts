import { Principal } from '../identity/principal';
import { McpTool, McpToolHandler, ToolArgs } from '../tools/tool.decorator';
import {
  AGENT_MODES,
  AGENTS_PAGE_SIZE,
  BODY_MAX,
  REJECTION_REASON_MAX,
  toolTurn,
  ToolTurn,
  TURN_DECISION_ROLE,
  TURN_STATUSES,
  TURNS_PAGE_SIZE,
} from './agent.types';
import { AgentsService } from './agents.service';
import { SMS_BODY_MAX } from '../conversations/outbound/reply-body';
import { cursorArgument, nextCursorResult, nullable, nullableString } from '../tools/tool-schemas';
import { nextOffsetOf, RESULT_BOUNDS, textWindowArguments } from '../common/result-bounds';

const agentModeSchema = { type: 'string', enum: [...AGENT_MODES] } as const;

export const agentTurnSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    status: { type: 'string', enum: [...TURN_STATUSES] },
    threadId: { type: 'string' },
    messageId: nullableString,
    createdAt: { type: 'string' },
    agent: {
      type: 'object',
      description: "The agent that took the turn; on a draft-only credential's draft, the credential as a DRAFT agent (its id and name; see credential).",
      properties: { id: { type: 'string' }, name: { type: 'string' }, mode: agentModeSchema },
      required: ['id', 'name', 'mode'],
    },
    credential: {
      type: 'object',
      description: "Only on a draft-only credential's draft: the API key or app (OAUTH_GRANT) whose send_sms, send_email or reply_to_thread it holds.",
      properties: { id: { type: 'string' }, name: { type: 'string' }, kind: { type: 'string', enum: ['API_KEY', 'OAUTH_GRANT'] } },
      required: ['id', 'name', 'kind'],
    },
    body: {
      type: 'string',
      description: `The reply's text: at most ${RESULT_BOUNDS.bodyChars.toLocaleString('en-US')} characters here (truncated says when cut); get_agent_turn reads it whole, a window at a time.`,
    },
    bodyLength: { type: 'integer', description: "The whole body's length in characters." },
    truncated: { type: 'boolean', description: 'True when body is not the whole text.' },
    decidedByUserId: nullableString,
    decidedAt: nullableString,
    rejectionReason: { ...nullableString, description: 'Why the person rejected the turn (REJECTED), if they said; null otherwise.' },
  },
  required: [
    'id',
    'status',
    'threadId',
    'messageId',
    'createdAt',
    'agent',
    'body',
    'bodyLength',
    'truncated',
    'decidedByUserId',
    'decidedAt',
    'rejectionReason',
  ],
} as const;

const turnResult = { type: 'object', properties: { turn: agentTurnSchema }, required: ['turn'] } as const;
const byTurnId = {
  type: 'object',
  properties: { turnId: { type: 'string', format: 'uuid', description: 'An agent turn id from list_agent_turns or an agent_turn.* event.' } },
  required: ['turnId'],
  additionalProperties: false,
} as const;

const listAgentsInput = { type: 'object', properties: { cursor: cursorArgument }, additionalProperties: false } as const;

@McpTool({
  name: 'list_agents',
  title: 'List agents',
  description:
    `The org's agents on the lines this key may use, by name, ${AGENTS_PAGE_SIZE} per page; pass nextCursor as cursor for the next page. ` +
    'Each agent answers the threads of one line (lineId) in a mode: DRAFT (its replies wait for approve_agent_turn), AUTO or ' +
    'SUPERVISED (sent at once). Agents are created by an operator; their ids go to create_agent_turn and list_agent_turns.',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: listAgentsInput,
  outputSchema: {
    type: 'object',
    properties: {
      agents: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            lineId: { type: 'string', description: 'The line whose threads the agent answers (list_email_accounts, list_phone_numbers).' },
            name: { type: 'string' },
            mode: agentModeSchema,
            createdAt: { type: 'string' },
          },
          required: ['id', 'lineId', 'name', 'mode', 'createdAt'],
        },
      },
      nextCursor: nextCursorResult,
    },
    required: ['agents', 'nextCursor'],
  },
})
export class ListAgentsTool implements McpToolHandler<ToolArgs<typeof listAgentsInput>> {
  constructor(private readonly agents: AgentsService) {}

  execute(args: ToolArgs<typeof listAgentsInput>, caller: Principal) {
    return this.agents.listAgents(caller, args);
  }
}

const listAgentTurnsInput = {
  type: 'object',
  properties: {
    threadId: { type: 'string', format: 'uuid', description: 'Only turns on this thread.' },
    agentId: { type: 'string', format: 'uuid', description: 'Only turns of this agent.' },
    status: {
      type: 'string',
      enum: [...TURN_STATUSES],
      description: 'Only turns in this status: AWAITING_APPROVAL (drafts waiting for a human), SENT or REJECTED.',
    },
    cursor: cursorArgument,
  },
  additionalProperties: false,
} as const;

@McpTool({
  name: 'list_agent_turns',
  title: 'List agent turns',
  description:
    `Agent turns on the lines this key may use, newest first, ${TURNS_PAGE_SIZE} per page; pass nextCursor as cursor for the next page. ` +
    'Filter by threadId, agentId or status (AWAITING_APPROVAL lists the drafts waiting for a human).',
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: listAgentTurnsInput,
  outputSchema: {
    type: 'object',
    properties: { turns: { type: 'array', items: agentTurnSchema }, nextCursor: nextCursorResult },
    required: ['turns', 'nextCursor'],
  },
})
export class ListAgentTurnsTool implements McpToolHandler<ToolArgs<typeof listAgentTurnsInput>> {
  constructor(private readonly agents: AgentsService) {}

  async execute(args: ToolArgs<typeof listAgentTurnsInput>, caller: Principal) {
    const { turns, nextCursor } = await this.agents.list(caller, args);
    return { turns: turns.map((turn) => toolTurn(turn)), nextCursor };
  }
}

/** A reply's text: checkReplyBody holds the rule (not blank, the channel's length); the schema bounds it by the longest channel. */
const replyBodySchema = { type: 'string', minLength: 1, maxLength: BODY_MAX } as const;

/** The body of POST /api/agents/:agentId/turns (CreateTurnDto), with the agent from the path. */
const createAgentTurnInput = {
  type: 'object',
  properties: {
    agentId: { type: 'string', format: 'uuid', description: 'The agent proposing the reply (from list_agents).' },
    threadId: { type: 'string', format: 'uuid', description: "A thread on the agent's line (from list_threads or an event)." },
    body: { ...replyBodySchema, description: `The reply: not blank; at most ${SMS_BODY_MAX} characters on an SMS thread and ${BODY_MAX} on an email thread.` },
  },
  required: ['agentId', 'threadId', 'body'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'create_agent_turn',
  title: 'Create an agent turn',
  description:
    "An agent proposes a reply on a thread of its line (the twin of POST /api/agents/:agentId/turns). By the agent's mode: DRAFT, the " +
    'turn is AWAITING_APPROVAL and nothing is sent (agent_turn.awaiting_approval; a person approves or rejects it); AUTO or SUPERVISED, ' +
    'the reply is sent at once on the thread (SENT, agent_turn.sent, then message.sent). Each call makes a new turn.',
  kind: 'write',
  openWorld: true,
  minRole: 'MEMBER',
  inputSchema: createAgentTurnInput,
  outputSchema: turnResult,
})
export class CreateAgentTurnTool implements McpToolHandler<ToolArgs<typeof createAgentTurnInput>, { turn: ToolTurn }> {
  constructor(private readonly agents: AgentsService) {}

  async execute({ agentId, ...input }: ToolArgs<typeof createAgentTurnInput>, caller: Principal) {
    return { turn: toolTurn(await this.agents.createTurn(caller, agentId, input)) };
  }
}

const getAgentTurnInput = {
  type: 'object',
  properties: {
    ...byTurnId.properties,
    ...textWindowArguments('body', RESULT_BOUNDS.messageChars, RESULT_BOUNDS.maxMessageChars),
  },
  required: ['turnId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'get_agent_turn',
  title: 'Get an agent turn',
  description:
    'One agent turn on the lines this key may use, with its body: the drafted reply while AWAITING_APPROVAL, the text sent once SENT ' +
    '(as approved), or the discarded draft when REJECTED; who decided it and when, and the reason given for a rejection (rejectionReason). ' +
    "A draft-only credential's draft has agent null and its credential. An agent_turn.* event carries the turn without " +
    'its body: read it here. A turn on another line or of another org reads as not found. The body comes a window at a time: ' +
    `${RESULT_BOUNDS.messageChars.toLocaleString('en-US')} characters by default; pass nextOffset as offset for the rest.`,
  kind: 'read',
  idempotent: true,
  minRole: 'MEMBER',
  inputSchema: getAgentTurnInput,
  outputSchema: {
    type: 'object',
    properties: {
      turn: agentTurnSchema,
      nextOffset: nullable({ type: 'integer' } as const, 'Pass as offset to read the body on; null when the window reaches its end.'),
    },
    required: ['turn', 'nextOffset'],
  },
})
export class GetAgentTurnTool implements McpToolHandler<ToolArgs<typeof getAgentTurnInput>, { turn: ToolTurn; nextOffset: number | null }> {
  constructor(private readonly agents: AgentsService) {}

  async execute(args: ToolArgs<typeof getAgentTurnInput>, caller: Principal) {
    const window = { offset: args.offset ?? 0, maxChars: args.maxChars ?? RESULT_BOUNDS.messageChars };
    const turn = toolTurn(await this.agents.getTurn(caller, args.turnId), window.offset, window.maxChars);
    return { turn, nextOffset: nextOffsetOf(window, { of: 'body', name: 'bodyLength', value: turn.bodyLength }) };
  }
}

const approveAgentTurnInput = {
  type: 'object',
  properties: {
    ...byTurnId.properties,
    body: {
      ...replyBodySchema,
      description:
        `Optional: the reply as edited by the approver, sent instead of the draft and stored on the turn in its place (the draft is not kept). ` +
        `Not blank; at most ${SMS_BODY_MAX} characters on an SMS thread and ${BODY_MAX} on an email thread. Without it the draft is sent as written.`,
    },
  },
  required: ['turnId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'approve_agent_turn',
  title: 'Approve an agent turn',
  description:
    "Approves a draft AWAITING_APPROVAL (a DRAFT agent's reply, or a draft-only credential's send): the drafted body, or the edited body when given, is sent on the thread " +
    '(status SENT, agent_turn.sent, then message.sent when the carrier or mail server takes it). An edited body replaces the draft on ' +
    'the turn for good. A turn in any other status is refused.',
  kind: 'write',
  openWorld: true,
  overwrites: true,
  idempotent: true,
  minRole: TURN_DECISION_ROLE,
  inputSchema: approveAgentTurnInput,
  outputSchema: turnResult,
})
export class ApproveAgentTurnTool implements McpToolHandler<ToolArgs<typeof approveAgentTurnInput>, { turn: ToolTurn }> {
  constructor(private readonly agents: AgentsService) {}

  async execute(args: ToolArgs<typeof approveAgentTurnInput>, caller: Principal) {
    return { turn: toolTurn(await this.agents.approve(caller, args.turnId, args.body)) };
  }
}

const rejectAgentTurnInput = {
  type: 'object',
  properties: {
    ...byTurnId.properties,
    reason: {
      type: 'string',
      maxLength: REJECTION_REASON_MAX,
      description: `Optional: why, at most ${REJECTION_REASON_MAX} characters. Kept on the turn (rejectionReason) and carried by agent_turn.rejected, so the agent learns it.`,
    },
  },
  required: ['turnId'],
  additionalProperties: false,
} as const;

@McpTool({
  name: 'reject_agent_turn',
  title: 'Reject an agent turn',
  description:
    "Rejects a draft AWAITING_APPROVAL (a DRAFT agent's reply, or a draft-only credential's send), for an optional reason: nothing is sent, " +
    'the turn becomes REJECTED for good and agent_turn.rejected carries the reason.',
  kind: 'write',
  overwrites: true,
  idempotent: true,
  minRole: TURN_DECISION_ROLE,
  inputSchema: rejectAgentTurnInput,
  outputSchema: turnResult,
})
export class RejectAgentTurnTool implements McpToolHandler<ToolArgs<typeof rejectAgentTurnInput>, { turn: ToolTurn }> {
  constructor(private readonly agents: AgentsService) {}

  async execute(args: ToolArgs<typeof rejectAgentTurnInput>, caller: Principal) {
    return { turn: toolTurn(await this.agents.reject(caller, args.turnId, args.reason)) };
  }
}
