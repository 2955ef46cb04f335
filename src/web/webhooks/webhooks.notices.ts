import { NoticeTable } from '../kit/notices';

/** Settings → Webhooks: the notices of its pages after an action, by the kind in `?done=` (kit/notices.ts). */
export const NOTICES = {
  saved: 'The endpoint was saved.',
  disabled: 'The endpoint is disabled: nothing is delivered to it until you enable it.',
  enabled: 'The endpoint is enabled again.',
  deleted: 'The endpoint was deleted.',
  resent: 'The delivery was sent again as this new delivery.',
} as const satisfies NoticeTable;
