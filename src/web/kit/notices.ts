/**
 * Notices: the sentence a page shows after an action went through ("Endpoint saved."), named in
 * the address the action redirects to (`?done=saved`), so a reload shows it again and nothing is
 * kept on the server. Each screen declares its table of sentences by kind once, in
 * `<screen>.notices.ts` (`export const NOTICES = { saved: '…' } as const satisfies NoticeTable`);
 * its controller writes the kind with withNotice and reads the sentence back with noticeText, and
 * its pages show it through the one banner, `Notice` (components/notice.tsx).
 */

/** The query key of a notice: `?done=<kind>`. */
export const NOTICE_KEY = 'done';
/**
 * Settings → API keys and Connected apps answer `?notice=<kind>` (their redirects are part of what
 * clients and tests rely on); new pages use NOTICE_KEY.
 */
export const SETTINGS_NOTICE_KEY = 'notice';

export type NoticeTable = Readonly<Record<string, string>>;

/** The kind a query value names, when the page's table has it (any other value: none). */
export function noticeKind<T extends NoticeTable>(table: T, value: unknown): (keyof T & string) | undefined {
  return typeof value === 'string' && Object.hasOwn(table, value) ? value : undefined;
}

/** The sentence of the kind a query value names, or undefined. */
export function noticeText(table: NoticeTable, value: unknown): string | undefined {
  const kind = noticeKind(table, value);
  return kind === undefined ? undefined : table[kind];
}

/** `path` with the notice `kind` in its query (`/settings/webhooks?done=deleted`). */
export function withNotice(path: string, kind: string, key: string = NOTICE_KEY): string {
  return `${path}${path.includes('?') ? '&' : '?'}${key}=${encodeURIComponent(kind)}`;
}
