/** Notices after a 303, by the key in `?done=` (never free text from the URL). */
export const NOTICES = {
  connected: 'Both servers accepted the login and the mailbox is connected: its INBOX is synced from now on, and its email is sent through its SMTP server.',
  disconnected: 'The mailbox was disconnected and its stored passwords deleted.',
} as const;

export type Notice = keyof typeof NOTICES;
