import { AgentTurnData } from '../events/event-payloads';
import { UserRole } from '../identity/roles';
import { RESULT_BOUNDS, textWindow } from '../common/result-bounds';

/**
 * DRAFT: every reply waits for a human (agent_turn.awaiting_approval, then approve or reject).
 * AUTO and SUPERVISED: the reply is sent at once (agent_turn.sent); SUPERVISED only tells the
 * humans watching the thread that they are expected to follow along: the service treats it like AUTO.
 */
export const AGENT_MODES = ['DRAFT', 'AUTO', 'SUPERVISED'] as const;
export type AgentMode = (typeof AGENT_MODES)[number];

/** AWAITING_APPROVAL → SENT (approved) or REJECTED; AUTO and SUPERVISED turns are SENT at creation. */
export const TURN_STATUSES = ['AWAITING_APPROVAL', 'SENT', 'REJECTED'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

/** Approving a draft sends a message as the org, exactly like send_sms: every org role may send, so every role may approve. */
export const TURN_DECISION_ROLE: UserRole = 'MEMBER';

/** An agent reply's bounds are every reply's (outbound/reply-body.ts). */
export { BODY_MAX } from '../conversations/outbound/reply-body';

/** list_agent_turns page size. */
export const TURNS_PAGE_SIZE = 25;

/** list_agents page size. */
export const AGENTS_PAGE_SIZE = 25;

export interface AgentView {
  id: string;
  lineId: string;
  name: string;
  mode: AgentMode;
  createdAt: string;
}

/** The agentTurn object of the spec (what the events carry). */
export type AgentTurnRef = AgentTurnData['agentTurn'];

/** How long a rejection's reason may be (agent_turns_rejection_reason_check). */
export const REJECTION_REASON_MAX = 1000;

/** A turn as the REST routes and tools return it: the event's agentTurn plus the drafted body and the human decision. */
export interface AgentTurnView extends Omit<AgentTurnRef, 'rejectionReason'> {
  body: string;
  /** The user whose key approved or rejected the turn; null for AUTO/SUPERVISED turns and undecided drafts. */
  decidedByUserId: string | null;
  decidedAt: string | null;
  /** Why the person rejected the turn, if they said; null otherwise. */
  rejectionReason: string | null;
}

/** A turn as the tools show it: its body cut (docs/mcp.md, "Result sizes"); the REST routes give it whole. */
export type ToolTurn = Omit<AgentTurnView, 'body'> & { body: string; bodyLength: number; truncated: boolean };

export function toolTurn(turn: AgentTurnView, offset = 0, maxChars: number = RESULT_BOUNDS.bodyChars): ToolTurn {
  const { window, length } = textWindow(turn.body, offset, maxChars);
  return { ...turn, body: window, bodyLength: length, truncated: window.length < turn.body.length };
}
