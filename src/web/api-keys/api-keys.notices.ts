/** The notices the list shows after a change (the `notice` query parameter; nothing from it is echoed). */
export const NOTICES = {
  saved: 'Channel access and permissions saved. The next request with the key uses them.',
  revoked: 'The key was revoked. Requests with it are now refused.',
} as const;

export type NoticeKind = keyof typeof NOTICES;
