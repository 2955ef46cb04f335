/** Notices after a 303, by the key in `?done=` (never free text from the URL). */
export const NOTICES = {
  approved: 'The reply was approved and is on its way.',
  edited: 'Your edited reply was approved and is on its way.',
  rejected: 'The draft was rejected: nothing was sent.',
} as const;

export type Notice = keyof typeof NOTICES;
