import { NOTICES } from '../approvals/approvals.notices';

/** Notices after a 303 on the thread page, by the key in `?done=` (never free text from the URL). */
export const THREAD_NOTICES = {
  sent: 'Your reply is queued; its status below follows the carrier or mail server.',
  labelled: 'The labels were saved.',
  notes: 'The notes were saved.',
  contact: 'The contact was saved.',
  // A draft decided on the thread page returns here with the Approvals page's notice.
  ...NOTICES,
} as const;

export type ThreadNotice = keyof typeof THREAD_NOTICES;
