/** The ten event kinds of the spec (Events), and agent_turn.rejected (issue 45), declared once. */
export const EVENT_KINDS = [
  'message.received',
  'message.sent',
  'message.status_changed',
  'thread.created',
  'email.opened',
  'attachment.extracted',
  'contact.merged',
  'email_account.health_changed',
  'agent_turn.awaiting_approval',
  'agent_turn.sent',
  'agent_turn.rejected',
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];
