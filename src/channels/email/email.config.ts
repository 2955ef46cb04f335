import { list } from '../../config/parsers';
import { defineSlice, integer, text } from '../../config/settings';

/** Outgoing email (docs/email.md) and open tracking (docs/email-opens.md). */
export const emailConfig = defineSlice({
  smtpUrl: text('SMTP_URL', { pattern: /^smtps?:\/\/\S+$/, message: 'must be an smtp:// or smtps:// URL' }).to((url) => url ?? null),
  emailOpens: {
    /** Fetches this soon after sending are scanner prefetches, not opens. */
    scannerWindowSeconds: integer('EMAIL_OPEN_SCANNER_WINDOW_SECONDS', { min: 0, max: 3600, default: 5 }),
    /** A refetch this soon after the last counted open is the same view. */
    dedupSeconds: integer('EMAIL_OPEN_DEDUP_SECONDS', { min: 0, max: 86_400, default: 60 }),
    /**
     * Lower-case substrings of User-Agent values that are never opens (security gateways, bots);
     * null (unset): the maintained default list, which lives with the open rule (open-policy.ts);
     * `none`: no user agent is ignored.
     */
    ignoredUserAgents: text('EMAIL_OPEN_IGNORED_USER_AGENTS').to((value) => {
      if (value === undefined) return null;
      if (value.trim().toLowerCase() === 'none') return [];
      return list(value).map((item) => item.toLowerCase());
    }),
  },
});
