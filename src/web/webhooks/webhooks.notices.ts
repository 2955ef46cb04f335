/** Notices after a 303, by the key in `?done=` (never free text from the URL). */
export const NOTICES = {
  saved: 'The endpoint was saved.',
  disabled: 'The endpoint is disabled: nothing is delivered to it until you enable it.',
  enabled: 'The endpoint is enabled again.',
  deleted: 'The endpoint was deleted.',
  resent: 'The delivery was sent again as this new delivery.',
} as const;

export type Notice = keyof typeof NOTICES;
