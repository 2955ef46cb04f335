import { isEmailAddress } from '../common/email-address';
import { SendRefusedError, ValidationError } from '../common/errors';

/**
 * The pure parts of send policies (docs/send-policies.md): what a policy is made of, how a
 * credential's override lays over the org's, the checks of its values, recipient matching, the
 * quiet-hours window (in an IANA time zone, across midnight and DST) and the refusals' texts.
 */

/** The fields of a policy. In an org's policy null is "no such rule"; in an override, "the org's value". */
export interface SendPolicyFields {
  maxPerHour: number | null;
  maxPerDay: number | null;
  maxPerRecipientPerDay: number | null;
  /** Local "HH:MM" in timeZone: sends are refused from quietStart until quietEnd (may cross midnight). */
  quietStart: string | null;
  quietEnd: string | null;
  /** An IANA time zone; null: UTC for an org, the org's zone for an override. */
  timeZone: string | null;
  /** E.164 prefixes (+1415), email domains (example.com) and addresses (a@example.com). */
  allowList: string[] | null;
  denyList: string[] | null;
  repliesOnly: boolean | null;
}

export const POLICY_FIELDS: Array<keyof SendPolicyFields> = [
  'maxPerHour',
  'maxPerDay',
  'maxPerRecipientPerDay',
  'quietStart',
  'quietEnd',
  'timeZone',
  'allowList',
  'denyList',
  'repliesOnly',
];

export const EMPTY_POLICY: SendPolicyFields = {
  maxPerHour: null,
  maxPerDay: null,
  maxPerRecipientPerDay: null,
  quietStart: null,
  quietEnd: null,
  timeZone: null,
  allowList: null,
  denyList: null,
  repliesOnly: null,
};

export const LIMIT_MAX = 1_000_000;
export const LIST_MAX = 500;
export const HH_MM = /^([01][0-9]|2[0-3]):[0-5][0-9]$/;
const E164_PREFIX = /^\+[1-9][0-9]{0,14}$/;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** The policy a credential is held to: each field of its override that is set, else the org's. */
export function effectivePolicy(org: SendPolicyFields | null, override: SendPolicyFields | null): SendPolicyFields {
  const result = { ...EMPTY_POLICY };
  for (const field of POLICY_FIELDS) (result as Record<string, unknown>)[field] = override?.[field] ?? org?.[field] ?? null;
  return result;
}

/** True when the policy has no rule at all (nothing to check). */
export function isEmptyPolicy(p: SendPolicyFields): boolean {
  return (
    p.maxPerHour === null &&
    p.maxPerDay === null &&
    p.maxPerRecipientPerDay === null &&
    p.quietStart === null &&
    !p.allowList?.length &&
    !p.denyList?.length &&
    !p.repliesOnly
  );
}

/** Whether Intl knows the IANA time zone. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** A list entry in its stored form (lower case, trimmed), or null when it is none of the three kinds. */
export function normalizeEntry(entry: string): string | null {
  const value = entry.trim().toLowerCase();
  if (E164_PREFIX.test(value)) return value;
  if (value.includes('@')) return isEmailAddress(value) ? value : null;
  return DOMAIN.test(value) ? value : null;
}

/**
 * The policy's values checked and normalized (list entries lower-cased, duplicates dropped); a
 * ValidationError names the first bad field. Both the admin API and the settings page come here.
 */
export function checkedPolicy(input: SendPolicyFields): SendPolicyFields {
  for (const field of ['maxPerHour', 'maxPerDay', 'maxPerRecipientPerDay'] as const) {
    const value = input[field];
    if (value !== null && (!Number.isInteger(value) || value < 0 || value > LIMIT_MAX)) {
      throw new ValidationError(`${field} must be a whole number from 0 to ${LIMIT_MAX}, or empty for no limit`, field);
    }
  }
  for (const field of ['quietStart', 'quietEnd'] as const) {
    const value = input[field];
    if (value !== null && !HH_MM.test(value)) throw new ValidationError(`${field} must be a local time HH:MM (00:00 to 23:59)`, field);
  }
  if ((input.quietStart === null) !== (input.quietEnd === null)) {
    const missing = input.quietStart === null ? 'quietStart' : 'quietEnd';
    throw new ValidationError(`${missing} is needed too: quiet hours have a start and an end`, missing);
  }
  if (input.quietStart !== null && input.quietStart === input.quietEnd) {
    throw new ValidationError('quietEnd must differ from quietStart (quiet hours of no length)', 'quietEnd');
  }
  if (input.timeZone !== null && (input.timeZone.length > 64 || !isTimeZone(input.timeZone))) {
    throw new ValidationError(`timeZone must be an IANA time zone such as America/New_York; "${input.timeZone.slice(0, 64)}" is not one`, 'timeZone');
  }
  const lists: Pick<SendPolicyFields, 'allowList' | 'denyList'> = { allowList: null, denyList: null };
  for (const field of ['allowList', 'denyList'] as const) {
    const entries = input[field];
    if (entries === null) continue;
    if (entries.length > LIST_MAX) throw new ValidationError(`${field} may hold at most ${LIST_MAX} entries`, field);
    const normalized: string[] = [];
    for (const entry of entries) {
      const value = typeof entry === 'string' ? normalizeEntry(entry) : null;
      if (value === null) {
        throw new ValidationError(
          `${field}: "${String(entry).slice(0, 100)}" is not an E.164 prefix (+1415), an email domain (example.com) or an email address (a@example.com)`,
          field,
        );
      }
      if (!normalized.includes(value)) normalized.push(value);
    }
    lists[field] = normalized;
  }
  return { ...input, ...lists };
}

/**
 * Whether the entry matches the recipient: a phone number by prefix; an email address exactly, or
 * by domain, which covers its subdomains too (`example.com` matches `x@mail.example.com`, not
 * `x@notexample.com`), as mail admins expect. Emails compare case-insensitively.
 */
export function entryMatches(entry: string, to: string): boolean {
  const recipient = to.toLowerCase();
  const e = entry.toLowerCase();
  if (e.startsWith('+')) return recipient.startsWith(e);
  if (!recipient.includes('@')) return false;
  if (e.includes('@')) return recipient === e;
  const domain = recipient.slice(recipient.lastIndexOf('@') + 1);
  return domain === e || domain.endsWith(`.${e}`);
}

/** The recipient rule that refuses `to` (deny wins over allow; a non-empty allow list admits only its entries), or null. */
export function recipientRefusal(p: SendPolicyFields, to: string): SendRefusedError | null {
  const denied = p.denyList?.find((entry) => entryMatches(entry, to));
  if (denied !== undefined) {
    return new SendRefusedError(`${to} matches "${denied}" on this credential's deny list, so it is not sent (rule deny_list)`, 'deny_list', null, 'to');
  }
  if (p.allowList?.length && !p.allowList.some((entry) => entryMatches(entry, to))) {
    return new SendRefusedError(
      `${to} is not on this credential's allow list (${p.allowList.length} entr${p.allowList.length === 1 ? 'y' : 'ies'}), so it is not sent (rule allow_list)`,
      'allow_list',
      null,
      'to',
    );
  }
  return null;
}

export function repliesOnlyRefusal(to: string): SendRefusedError {
  return new SendRefusedError(
    `${to} has not written to this line: this credential may only answer people who wrote first, so it is not sent (rule replies_only)`,
    'replies_only',
    null,
    'to',
  );
}

// ── time ─────────────────────────────────────────────────────────────────────────────────────────

const MINUTE = 60_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (formatters.size < 1000) formatters.set(zone, f);
  }
  return f;
}

/** The wall clock of `at` in `zone`, and the zone's offset from UTC then (ms). */
function wallClock(at: Date, zone: string): { minuteOfDay: number; offsetMs: number } {
  const parts: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(at)) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const wallAsUtc = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  return { minuteOfDay: parts.hour * 60 + parts.minute, offsetMs: wallAsUtc - Math.floor(at.getTime() / 1000) * 1000 };
}

const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Whether `at` is inside the quiet hours [start, end) of `zone` (a window may cross midnight). */
export function isQuiet(at: Date, zone: string, start: string, end: string): boolean {
  const t = wallClock(at, zone).minuteOfDay;
  const s = minutesOf(start);
  const e = minutesOf(end);
  return s < e ? t >= s && t < e : t >= s || t < e;
}

/**
 * When the quiet hours that hold at `now` end: the first instant at or after the next local `end`
 * that is not quiet. The wall-clock distance is corrected by the change of offset between now and
 * then (DST); an `end` that a spring-forward gap skips is the gap's end.
 */
export function quietEndsAt(now: Date, zone: string, start: string, end: string): Date {
  const here = wallClock(now, zone);
  const secondsIntoMinute = now.getTime() - Math.floor(now.getTime() / MINUTE) * MINUTE;
  let delta = ((minutesOf(end) - here.minuteOfDay + 1440) % 1440) * MINUTE - secondsIntoMinute;
  if (delta <= 0) delta += 1440 * MINUTE;
  let candidate = new Date(now.getTime() + delta);
  candidate = new Date(candidate.getTime() + here.offsetMs - wallClock(candidate, zone).offsetMs);
  for (let i = 0; i < 1440 && isQuiet(candidate, zone, start, end); i++) candidate = new Date(candidate.getTime() + MINUTE);
  return candidate;
}

export function quietHoursRefusal(now: Date, zone: string, start: string, end: string): SendRefusedError {
  const passesAt = quietEndsAt(now, zone, start, end);
  return new SendRefusedError(
    `quiet hours (${start} to ${end}, ${zone}): nothing is sent until ${passesAt.toISOString()}; to have it go then, send again with sendAt (rule quiet_hours)`,
    'quiet_hours',
    passesAt,
  );
}

/** The three counted limits. */
export type LimitRule = 'max_per_hour' | 'max_per_day' | 'max_per_recipient_per_day';

export const LIMIT_WINDOWS: Record<LimitRule, { ms: number; words: string }> = {
  max_per_hour: { ms: 3600_000, words: 'in the last hour' },
  max_per_day: { ms: 86_400_000, words: 'in the last 24 hours' },
  max_per_recipient_per_day: { ms: 86_400_000, words: 'to this recipient in the last 24 hours' },
};

/**
 * The refusal of a full window: `max` sends counted, and passesAt when enough of them leave the
 * window for one more (the (count − max + 1)-th oldest counted send's time plus the window).
 */
export function limitRefusal(rule: LimitRule, max: number, oldestToLeave: Date | null, now: Date): SendRefusedError {
  const window = LIMIT_WINDOWS[rule];
  const passesAt = max === 0 || oldestToLeave === null ? null : new Date(Math.max(oldestToLeave.getTime() + window.ms, now.getTime() + 1000));
  return new SendRefusedError(
    max === 0
      ? `this credential may send no messages (${rule} is 0), so it is not sent (rule ${rule})`
      : `this credential has sent its ${max} message${max === 1 ? '' : 's'} ${window.words}; the next may go at ${passesAt?.toISOString()} (rule ${rule})`,
    rule,
    passesAt,
  );
}
