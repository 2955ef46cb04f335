import { allowedCidrs } from '../../../config/parsers';
import { constant, defineSlice, integer, text } from '../../../config/settings';

/** Mailboxes connected over IMAP and SMTP (docs/mailboxes.md). */
export const mailboxesConfig = defineSlice({
  mail: {
    /** Mail servers on these CIDRs may be private addresses; unset: loopback in development, nothing in production; `none`: nothing. */
    allowedCidrs: text('MAIL_ALLOWED_CIDRS').to(allowedCidrs),
    /** Plain-text connections (`tls: none`) are refused outside development. */
    allowPlaintext: constant(({ isDevelopment }) => isDevelopment),
    /** How long connecting and logging in to a mailbox's IMAP or SMTP server may take. */
    connectTimeoutMs: integer('MAIL_CONNECT_TIMEOUT_MS', { min: 1000, max: 120_000, default: 15_000 }),
    /** How often a mailbox whose server has no IMAP IDLE is checked for new mail. */
    pollSeconds: integer('MAIL_SYNC_POLL_SECONDS', { min: 5, max: 3600, default: 60 }),
    /** On a mailbox's first sync, mail received this many days back is imported (older mail is not). */
    initialDays: integer('MAIL_SYNC_INITIAL_DAYS', { min: 0, max: 3650, default: 7 }),
    /** Logins refused in a row before a mailbox is reported unhealthy (AUTH) and stops retrying. */
    authFailuresBeforeUnhealthy: integer('MAIL_AUTH_FAILURES_BEFORE_UNHEALTHY', { min: 1, max: 100, default: 3 }),
    /** How long a mailbox's server may be unreachable before the mailbox is reported unhealthy (NETWORK). */
    networkGraceSeconds: integer('MAIL_NETWORK_GRACE_SECONDS', { min: 0, max: 86_400, default: 300 }),
    /** The longest wait between a mailbox's reconnection attempts (they back off 1 s, 5 s, 15 s, 30 s, 60 s). */
    retryMaxSeconds: integer('MAIL_SYNC_RETRY_MAX_SECONDS', { min: 1, max: 3600, default: 60 }),
    /** Mailboxes one worker process syncs at most at once. */
    syncsPerWorker: integer('MAIL_SYNCS_PER_WORKER', { min: 0, max: 10_000, default: 100 }),
  },
});
