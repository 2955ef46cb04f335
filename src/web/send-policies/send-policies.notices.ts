import { NoticeTable } from '../kit/notices';

/** Settings → Send policies: the notices after a change, by the kind in `?done=` (kit/notices.ts). */
export const NOTICES = {
  saved: "The org's send policy is saved: it binds the next send of every API key and connected app.",
  override: "The credential's override is saved: it binds its next send.",
  removed: "The override is removed: the credential is held to the org's policy.",
} as const satisfies NoticeTable;
