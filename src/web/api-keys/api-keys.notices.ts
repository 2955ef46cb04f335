import { NoticeTable } from '../kit/notices';

/** Settings → API keys: the notices of its list after a change, by the kind in `?notice=` (kit/notices.ts). */
export const NOTICES = {
  saved: 'Channel access and permissions saved. The next request with the key uses them.',
  revoked: 'The key was revoked. Requests with it are now refused.',
} as const satisfies NoticeTable;
