import { NoticeTable } from '../kit/notices';

/** Approvals: the notices after a decision, by the kind in `?done=` (kit/notices.ts); the thread page shows them too. */
export const NOTICES = {
  approved: 'The reply was approved and is on its way.',
  edited: 'Your edited reply was approved and is on its way.',
  rejected: 'The draft was rejected: nothing was sent.',
} as const satisfies NoticeTable;

/** A kind of the Approvals notices: what a decision redirects with. */
export type ApprovalsNotice = keyof typeof NOTICES;
