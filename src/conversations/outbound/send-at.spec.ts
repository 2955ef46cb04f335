import { ValidationError } from '../../common/errors';
import { sendAtOf } from './send-at';

describe("sendAtOf: a send tool's sendAt", () => {
  const now = new Date('2026-11-29T12:00:00.000Z');
  const refusal = (value: unknown) => {
    try {
      sendAtOf(value, now);
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('sendAt');
      return (error as Error).message;
    }
    throw new Error(`${String(value)} was accepted`);
  };

  it('is null when not given', () => {
    expect(sendAtOf(undefined, now)).toBeNull();
  });

  it('takes an RFC 3339 time with its offset, in the future and at most 30 days ahead', () => {
    expect(sendAtOf('2026-11-29T12:00:01Z', now)).toEqual(new Date('2026-11-29T12:00:01Z'));
    expect(sendAtOf('2026-11-30T09:00:00-05:00', now)).toEqual(new Date('2026-11-30T14:00:00Z'));
    expect(sendAtOf('2026-12-29T12:00:00.000+00:00', now)).toEqual(new Date('2026-12-29T12:00:00Z'));
  });

  it('refuses a time without an offset, another shape, a past or present time and one more than 30 days ahead, naming sendAt', () => {
    expect(refusal('2026-11-30T09:00:00')).toMatch(/^sendAt must be an RFC 3339 date-time with its offset/);
    expect(refusal('tomorrow')).toMatch(/^sendAt must be an RFC 3339/);
    expect(refusal('2026-11-30')).toMatch(/^sendAt must be an RFC 3339/);
    expect(refusal('2026-02-30T09:00:00Z')).toMatch(/^sendAt must be an RFC 3339/);
    expect(refusal(1764417600000)).toMatch(/^sendAt must be an RFC 3339/);
    expect(refusal('2026-11-29T12:00:00Z')).toBe('sendAt 2026-11-29T12:00:00Z is not in the future (now is 2026-11-29T12:00:00.000Z)');
    expect(refusal('2026-11-28T12:00:00Z')).toMatch(/is not in the future/);
    expect(refusal('2026-12-29T12:00:00.001Z')).toBe(
      'sendAt 2026-12-29T12:00:00.001Z is more than 30 days ahead; a send can be scheduled at most 30 days ahead',
    );
  });
});
