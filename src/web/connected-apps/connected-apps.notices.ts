/** The notices the list shows after a change (the `notice` query parameter; nothing from it is echoed). */
export const NOTICES = {
  saved: "The app's channel access and permissions were saved. Its next request uses them.",
  revoked: 'The app was disconnected. Its next request is refused, and it cannot renew its access.',
} as const;

export type NoticeKind = keyof typeof NOTICES;
