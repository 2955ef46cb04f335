import type { EventKind } from '../events/event-kinds';

/**
 * The event kinds a page is told of live (docs/web.md, "Live updates"): what changes a conversation
 * list or a thread. Read by the server (LiveStreams) and by the browser script
 * (web/static/browser/app.ts), so this module imports nothing at run time: it is bundled into the
 * page's script as it is.
 */
export const LIVE_EVENT_KINDS = [
  'message.received',
  'message.sent',
  'message.status_changed',
  'thread.created',
  'attachment.extracted',
  'agent_turn.awaiting_approval',
  'agent_turn.sent',
  'agent_turn.rejected',
] as const satisfies readonly EventKind[];
export type LiveEventKind = (typeof LIVE_EVENT_KINDS)[number];

/** The stream's last event when the person's session ends (sign-out, revoked, expired): the page stops listening. */
export const SESSION_ENDED_EVENT = 'session_ended';
