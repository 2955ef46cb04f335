import { nextRetryDelayMs, retryAfterMs } from './retry-after';

describe('retryAfterMs', () => {
  const answeredAt = new Date('2026-11-24T12:00:00.000Z');

  it('reads delta-seconds from a 429 or a 503', () => {
    expect(retryAfterMs(429, '120', answeredAt)).toBe(120_000);
    expect(retryAfterMs(503, ' 0 ', answeredAt)).toBe(0);
  });

  it('reads the three HTTP date forms as the time left from the answer, none if past', () => {
    expect(retryAfterMs(503, 'Tue, 24 Nov 2026 12:05:00 GMT', answeredAt)).toBe(300_000);
    expect(retryAfterMs(503, 'Tuesday, 24-Nov-26 12:00:30 GMT', answeredAt)).toBe(30_000);
    expect(retryAfterMs(503, 'Tue Nov 24 12:01:00 2026', answeredAt)).toBe(60_000);
    expect(retryAfterMs(429, 'Tue, 24 Nov 2026 11:00:00 GMT', answeredAt)).toBe(0);
  });

  it('ignores other statuses, a missing or repeated header, and values in neither form', () => {
    expect(retryAfterMs(500, '120', answeredAt)).toBeUndefined();
    expect(retryAfterMs(200, '120', answeredAt)).toBeUndefined();
    expect(retryAfterMs(429, undefined, answeredAt)).toBeUndefined();
    expect(retryAfterMs(429, ['1', '2'], answeredAt)).toBeUndefined();
    for (const value of ['', '-5', '1.5', '10s', '0x10', 'soon', '2026-11-24T12:05:00Z', 'Tue, 24 Nov 2026 12:05:00 UTC']) {
      expect(retryAfterMs(503, value, answeredAt)).toBeUndefined();
    }
  });

  it('a number of seconds too large to count is as long as can be', () => {
    expect(retryAfterMs(503, '9'.repeat(40), answeredAt)).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('nextRetryDelayMs', () => {
  const schedule = [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000];

  it("is the schedule's step without Retry-After, and none after the last attempt", () => {
    expect(nextRetryDelayMs(schedule, 1)).toBe(60_000);
    expect(nextRetryDelayMs(schedule, 5)).toBe(43_200_000);
    expect(nextRetryDelayMs(schedule, 6)).toBeUndefined();
    expect(nextRetryDelayMs(schedule, 6, 1000)).toBeUndefined();
  });

  it("waits for Retry-After when it is longer than the step, up to the schedule's last step", () => {
    expect(nextRetryDelayMs(schedule, 1, 120_000)).toBe(120_000);
    expect(nextRetryDelayMs(schedule, 1, 5_000)).toBe(60_000); // never sooner than the schedule
    expect(nextRetryDelayMs(schedule, 2, Number.MAX_SAFE_INTEGER)).toBe(43_200_000);
  });
});
