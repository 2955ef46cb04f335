/** The ten event kinds (spec: Events), declared once. */
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
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];
