/**
 * The SMS keywords carriers require a sender to obey (docs/opt-out.md), the one list of them.
 * A keyword counts only as the whole message: trimmed, in any case ("stop" counts, "please stop"
 * does not), as carriers and Twilio read them.
 */
export const STOP_KEYWORDS = ['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT'] as const;
export const START_KEYWORDS = ['START', 'UNSTOP', 'YES'] as const;
export const HELP_KEYWORDS = ['HELP', 'INFO'] as const;

/** A keyword that changes whether a number is opted out: what sms_opt_outs.keyword holds. */
export type OptKeyword = (typeof STOP_KEYWORDS)[number] | (typeof START_KEYWORDS)[number];
export type HelpKeyword = (typeof HELP_KEYWORDS)[number];

export type SmsKeyword = { action: 'stop'; keyword: OptKeyword } | { action: 'start'; keyword: OptKeyword } | { action: 'help'; keyword: HelpKeyword };

/** The keyword `body` is, or null when it is an ordinary message. */
export function smsKeywordOf(body: string): SmsKeyword | null {
  const word = body.trim().toUpperCase();
  if (word.length > 11) return null;
  if ((STOP_KEYWORDS as readonly string[]).includes(word)) return { action: 'stop', keyword: word as OptKeyword };
  if ((START_KEYWORDS as readonly string[]).includes(word)) return { action: 'start', keyword: word as OptKeyword };
  if ((HELP_KEYWORDS as readonly string[]).includes(word)) return { action: 'help', keyword: word as HelpKeyword };
  return null;
}
