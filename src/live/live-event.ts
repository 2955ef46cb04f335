import { PublishedEvent } from '../events/domain-event';
import { EventKind } from '../events/event-kinds';
import { AgentTurnData, MessageEventData, StatusChangedData } from '../events/event-payloads';
import { LIVE_EVENT_KINDS, LiveEventKind } from './live-event-kinds';

const LIVE_KINDS = new Set<EventKind>(LIVE_EVENT_KINDS);

/**
 * A committed event as a live stream tells it: ids only, never message content (the page fetches
 * what it shows through its own access checks). `orgId` and `lineId` scope it and are not sent.
 */
export interface LiveEvent {
  /** The outbox sequence number (the stream's `id:`). */
  id: string;
  type: LiveEventKind;
  orgId: string;
  lineId: string;
  threadId: string;
  messageId: string | null;
  agentTurnId: string | null;
  /** The message's status (message.status_changed: the new one). */
  status: string | null;
  /** When the event was committed (its outbox row's occurred_at), ISO 8601. */
  at: string;
}

/** The live form of a committed event, or null for a kind pages are not told of and for an org-wide event (no line). */
export function liveEventOf(event: PublishedEvent): LiveEvent | null {
  if (!LIVE_KINDS.has(event.type) || event.lineId === null) return null;
  const base = { id: event.id, type: event.type as LiveEventKind, orgId: event.orgId, lineId: event.lineId, at: new Date(event.occurredAt).toISOString() };
  if (event.type === 'agent_turn.awaiting_approval' || event.type === 'agent_turn.sent' || event.type === 'agent_turn.rejected') {
    const turn = (event.data as AgentTurnData).agentTurn;
    return { ...base, threadId: turn.threadId, messageId: turn.messageId, agentTurnId: turn.id, status: turn.status };
  }
  const data = event.data as MessageEventData;
  const status = event.type === 'message.status_changed' ? (event.data as StatusChangedData).currentStatus : data.message.status;
  return { ...base, threadId: data.thread.id, messageId: data.message.id, agentTurnId: null, status };
}

/** What the stream sends as an event's `data:` (JSON): the kind and ids, no content. */
export function liveEventData(event: LiveEvent): string {
  return JSON.stringify({
    type: event.type,
    threadId: event.threadId,
    messageId: event.messageId,
    agentTurnId: event.agentTurnId,
    lineId: event.lineId,
    status: event.status,
    at: event.at,
  });
}
