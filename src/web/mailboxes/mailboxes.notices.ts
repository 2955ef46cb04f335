import { NoticeTable } from '../kit/notices';

/** Settings → Mailboxes: the notices of its list after a change, by the kind in `?done=` (kit/notices.ts). */
export const NOTICES = {
  connected: 'Both servers accepted the login and the mailbox is connected: its INBOX is synced from now on, and its email is sent through its SMTP server.',
  disconnected: 'The mailbox was disconnected and its stored passwords deleted.',
} as const satisfies NoticeTable;
