import { ValidationError } from '../../common/errors';

/** How far ahead a send may be scheduled (docs/decisions.md, "Scheduled sends"). */
export const SEND_AT_MAX_AHEAD_DAYS = 30;
const MAX_AHEAD_MS = SEND_AT_MAX_AHEAD_DAYS * 24 * 60 * 60 * 1000;

/** RFC 3339 date-time with its offset (Z or ±hh:mm): a time without one would be read in the server's zone. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** The sendAt property of the send tools. */
export const sendAtProperty = {
  type: 'string',
  format: 'date-time',
  description:
    'Optional: send later, at this time (RFC 3339 with its offset, such as 2026-12-01T09:00:00-05:00), in the future and at most ' +
    `${SEND_AT_MAX_AHEAD_DAYS} days ahead. The message is SCHEDULED until then (cancel_scheduled_message cancels it), then goes ` +
    'QUEUED as any other; the send rules are checked now and again then (refused then, it is FAILED with the reason as error).',
} as const;

/** A send's `sendAt`, checked: null when not given; in the future and at most SEND_AT_MAX_AHEAD_DAYS ahead of `now`. */
export function sendAtOf(value: unknown, now: Date = new Date()): Date | null {
  if (value === undefined || value === null) return null;
  const at = typeof value === 'string' && RFC3339.test(value) && realDay(value) ? new Date(value) : null;
  if (!at || Number.isNaN(at.getTime())) {
    throw new ValidationError('sendAt must be an RFC 3339 date-time with its offset, such as 2026-12-01T09:00:00Z or 2026-12-01T09:00:00-05:00', 'sendAt');
  }
  if (at.getTime() <= now.getTime()) throw new ValidationError(`sendAt ${value} is not in the future (now is ${now.toISOString()})`, 'sendAt');
  if (at.getTime() > now.getTime() + MAX_AHEAD_MS) {
    throw new ValidationError(
      `sendAt ${value} is more than ${SEND_AT_MAX_AHEAD_DAYS} days ahead; a send can be scheduled at most ${SEND_AT_MAX_AHEAD_DAYS} days ahead`,
      'sendAt',
    );
  }
  return at;
}

/** Whether the date part names a day of the calendar (Date would take 2026-02-30 as 2 March). */
function realDay(value: string): boolean {
  const [year, month, day] = value.slice(0, 10).split('-').map(Number);
  return month >= 1 && month <= 12 && day >= 1 && new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day;
}
