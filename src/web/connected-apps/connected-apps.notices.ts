import { NoticeTable } from '../kit/notices';

/** Settings → Connected apps: the notices of its list after a change, by the kind in `?notice=` (kit/notices.ts). */
export const NOTICES = {
  saved: "The app's channel access and permissions were saved. Its next request uses them.",
  revoked: 'The app was disconnected. Its next request is refused, and it cannot renew its access.',
} as const satisfies NoticeTable;
