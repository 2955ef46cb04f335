import { NOTICES } from '../approvals/approvals.notices';
import { NoticeTable } from '../kit/notices';

/** A thread: the notices after an action on the thread page, by the kind in `?done=` (kit/notices.ts). */
export const THREAD_NOTICES = {
  sent: 'Your reply is queued; its status below follows the carrier or mail server.',
  labelled: 'The labels were saved.',
  notes: 'The notes were saved.',
  contact: 'The contact was saved.',
  canceled: 'The scheduled message was canceled; it will not be sent.',
  // A draft decided on the thread page returns here with the Approvals page's notice.
  ...NOTICES,
} as const satisfies NoticeTable;
