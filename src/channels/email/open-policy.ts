/**
 * Which pixel fetches are opens (spec, event rule 3). Pure: the tracking service feeds it the
 * message's times and the request's user agent; docs/email-opens.md explains every choice.
 */

/**
 * Lower-case substrings of User-Agent values that are never a person reading the mail: security
 * gateways that fetch every image of a message while scanning it, link-preview and crawler bots,
 * and HTTP libraries. Deliberately absent: image proxies of mailbox providers that fetch on a real
 * open (Gmail's `GoogleImageProxy`, `YahooMailProxy`) and mail clients themselves (Outlook sends
 * `Microsoft Office/16.0 ... Microsoft Outlook`, so a bare `microsoft office` would drop real opens).
 * Operators replace the list with EMAIL_OPEN_IGNORED_USER_AGENTS.
 */
export const DEFAULT_IGNORED_USER_AGENTS: readonly string[] = [
  // Secure email gateways and sandboxes
  'mimecast',
  'proofpoint',
  'barracuda',
  'microsoft office protection',
  'existence discovery',
  'google-safety',
  'ironport',
  'symantec',
  'messagelabs',
  'forcepoint',
  'fortigate',
  'fortiguard',
  'sophos',
  'trend micro',
  'trendmicro',
  'mcafee',
  'trellix',
  'fireeye',
  'zscaler',
  'hornetsecurity',
  'spamtitan',
  'mailscanner',
  'spamassassin',
  'cloudmark',
  'bitdefender',
  // Headless browsers and link-preview bots
  'headlesschrome',
  'phantomjs',
  'googlebot',
  'bingbot',
  'slackbot',
  'facebookexternalhit',
  'twitterbot',
  'linkedinbot',
  'discordbot',
  'telegrambot',
  'skypeuripreview',
  // HTTP libraries and command-line tools
  'python-requests',
  'python-urllib',
  'aiohttp',
  'go-http-client',
  'okhttp',
  'apache-httpclient',
  'java/',
  'libwww-perl',
  'curl/',
  'wget/',
  'axios/',
  'node-fetch',
  'ahc/',
];

export interface OpenPolicy {
  scannerWindowSeconds: number;
  dedupSeconds: number;
  ignoredUserAgents: readonly string[];
}

/** The policy from its configuration: no list configured means the default list above. */
export function openPolicyFrom(config: { scannerWindowSeconds: number; dedupSeconds: number; ignoredUserAgents: readonly string[] | null }): OpenPolicy {
  return { ...config, ignoredUserAgents: config.ignoredUserAgents ?? DEFAULT_IGNORED_USER_AGENTS };
}

export interface OpenFacts {
  /** When the fetch happened (database time, after the message row was locked). */
  at: Date;
  /** When the mail server took the message; null while it is QUEUED or when it FAILED. */
  sentAt: Date | null;
  /** The last counted open, if any. */
  lastOpenedAt: Date | null;
  userAgent: string | null;
}

export type NotCountedReason = 'not-sent' | 'scanner-window' | 'ignored-user-agent' | 'same-view';

export type OpenVerdict = { counted: true } | { counted: false; reason: NotCountedReason };

/** Counts a fetch as a distinct open, or says why it is not one. */
export function judgeOpen(facts: OpenFacts, policy: OpenPolicy): OpenVerdict {
  if (!facts.sentAt) return { counted: false, reason: 'not-sent' };
  if (facts.at.getTime() - facts.sentAt.getTime() < policy.scannerWindowSeconds * 1000) {
    return { counted: false, reason: 'scanner-window' };
  }
  if (ignoredUserAgent(facts.userAgent, policy.ignoredUserAgents)) return { counted: false, reason: 'ignored-user-agent' };
  if (facts.lastOpenedAt && facts.at.getTime() - facts.lastOpenedAt.getTime() < policy.dedupSeconds * 1000) {
    return { counted: false, reason: 'same-view' };
  }
  return { counted: true };
}

export function ignoredUserAgent(userAgent: string | null, ignored: readonly string[]): boolean {
  if (!userAgent) return false;
  const ua = userAgent.toLowerCase();
  return ignored.some((needle) => needle.length > 0 && ua.includes(needle));
}
