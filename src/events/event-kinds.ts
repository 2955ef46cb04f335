/** The ten event kinds of the spec (Events), and issue 45's: the SMS opt-out kinds and agent_turn.rejected; declared once. */
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
  'sms.opted_out',
  'sms.opted_in',
  'agent_turn.rejected',
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];
