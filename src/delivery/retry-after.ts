/**
 * A receiver that answers 429 (Too Many Requests) or 503 (Service Unavailable) may say when to
 * come back in `Retry-After` (RFC 9110, section 10.2.3): a number of seconds, or an HTTP date.
 * The delivery's next attempt then waits at least that long, but never longer than the retry
 * schedule's last step, so a receiver cannot push its deliveries out of the schedule's reach; the
 * attempt counts like any other failure (docs/webhooks.md, "Retries").
 */

/** The answers whose `Retry-After` is honoured. */
const HONOURED_STATUSES = new Set([429, 503]);

/** delta-seconds: one or more digits, nothing else. */
const DELTA_SECONDS = /^\d+$/;

/**
 * IMF-fixdate, the form RFC 9110 says senders must use (`Sun, 06 Nov 1994 08:49:37 GMT`), and
 * the two obsolete forms recipients must accept: RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`)
 * and asctime (`Sun Nov  6 08:49:37 1994`). Date.parse reads all three.
 */
const HTTP_DATE =
  /^(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT|(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \d{2}-(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-\d{2} \d{2}:\d{2}:\d{2} GMT|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:\d{2}:\d{2} \d{4})$/;

/**
 * How long the receiver asked to wait, in ms from `answeredAt`, if the answer's status honours
 * `Retry-After` and the header holds one well-formed value; undefined otherwise (a header sent
 * twice, or a value in neither form, is ignored). A date in the past asks for no wait.
 */
export function retryAfterMs(statusCode: number, header: string | string[] | undefined, answeredAt: Date): number | undefined {
  if (!HONOURED_STATUSES.has(statusCode) || typeof header !== 'string') return undefined;
  const value = header.trim();
  if (DELTA_SECONDS.test(value)) {
    const seconds = Number(value);
    return Number.isSafeInteger(seconds) ? seconds * 1000 : Number.MAX_SAFE_INTEGER;
  }
  if (!HTTP_DATE.test(value)) return undefined;
  const at = Date.parse(value.endsWith('GMT') ? value : `${value} GMT`);
  return Number.isNaN(at) ? undefined : Math.max(0, at - answeredAt.getTime());
}

/**
 * The wait before attempt `attempt + 1`, after attempt `attempt` failed: the schedule's step, or
 * the receiver's `Retry-After` if longer, up to the schedule's last step. Undefined when
 * `attempt` was the last one the schedule allows.
 */
export function nextRetryDelayMs(scheduleMs: readonly number[], attempt: number, askedMs?: number): number | undefined {
  const step = scheduleMs[attempt - 1];
  if (step === undefined) return undefined;
  if (askedMs === undefined) return step;
  return Math.max(step, Math.min(askedMs, scheduleMs[scheduleMs.length - 1]));
}
