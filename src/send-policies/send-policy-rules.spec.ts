import { SendRefusedError, ValidationError } from '../common/errors';
import {
  checkedPolicy,
  effectivePolicy,
  EMPTY_POLICY,
  entryMatches,
  isQuiet,
  limitRefusal,
  quietEndsAt,
  quietHoursRefusal,
  recipientRefusal,
  SendPolicyFields,
} from './send-policy-rules';

const policy = (over: Partial<SendPolicyFields>): SendPolicyFields => ({ ...EMPTY_POLICY, ...over });

describe('send policy rules', () => {
  describe('quiet hours', () => {
    it('a window across midnight holds from its start to its end, in the zone', () => {
      // 21:00–08:00 in New York (EST, UTC−5 in January).
      const at = (iso: string) => isQuiet(new Date(iso), 'America/New_York', '21:00', '08:00');
      expect(at('2026-01-15T01:59:00Z')).toBe(false); // 20:59
      expect(at('2026-01-15T02:00:00Z')).toBe(true); // 21:00
      expect(at('2026-01-15T12:59:59Z')).toBe(true); // 07:59:59
      expect(at('2026-01-15T13:00:00Z')).toBe(false); // 08:00
      expect(quietEndsAt(new Date('2026-01-15T03:30:20Z'), 'America/New_York', '21:00', '08:00').toISOString()).toBe('2026-01-15T13:00:00.000Z');
    });

    it('a window within one day', () => {
      expect(isQuiet(new Date('2026-06-01T12:30:00Z'), 'UTC', '12:00', '13:00')).toBe(true);
      expect(isQuiet(new Date('2026-06-01T13:00:00Z'), 'UTC', '12:00', '13:00')).toBe(false);
      expect(quietEndsAt(new Date('2026-06-01T12:30:00Z'), 'UTC', '12:00', '13:00').toISOString()).toBe('2026-06-01T13:00:00.000Z');
    });

    it('ends at the local end time across a DST change (spring forward and fall back)', () => {
      // 2026-03-08 02:00 EST → 03:00 EDT. 22:00 EST on the 7th until 08:00 EDT on the 8th (12:00Z).
      expect(quietEndsAt(new Date('2026-03-08T03:00:00Z'), 'America/New_York', '21:00', '08:00').toISOString()).toBe('2026-03-08T12:00:00.000Z');
      // 2026-11-01 02:00 EDT → 01:00 EST. 22:00 EDT on Oct 31 until 08:00 EST (13:00Z).
      expect(quietEndsAt(new Date('2026-11-01T02:00:00Z'), 'America/New_York', '21:00', '08:00').toISOString()).toBe('2026-11-01T13:00:00.000Z');
    });

    it('an end time the spring-forward gap skips ends at the gap’s end', () => {
      // 01:00 EST on 2026-03-08 (06:00Z), quiet until 02:30, which does not exist: it ends at 03:00 EDT (07:00Z).
      expect(quietEndsAt(new Date('2026-03-08T06:00:00Z'), 'America/New_York', '00:00', '02:30').toISOString()).toBe('2026-03-08T07:00:00.000Z');
    });

    it('the refusal names the rule, when it passes, and suggests sendAt', () => {
      const error = quietHoursRefusal(new Date('2026-01-15T03:30:00Z'), 'America/New_York', '21:00', '08:00');
      expect(error).toBeInstanceOf(SendRefusedError);
      expect(error.rule).toBe('quiet_hours');
      expect(error.passesAt?.toISOString()).toBe('2026-01-15T13:00:00.000Z');
      expect(error.message).toMatch(/sendAt/);
      expect(error.message).toMatch(/\(rule quiet_hours\)$/);
    });
  });

  describe('recipients', () => {
    it('matches phone numbers by E.164 prefix and emails by domain (subdomains included) or whole address, case-insensitively', () => {
      expect(entryMatches('+1415', '+14155550100')).toBe(true);
      expect(entryMatches('+1415', '+14165550100')).toBe(false);
      expect(entryMatches('example.com', 'A@Example.com')).toBe(true);
      expect(entryMatches('example.com', 'a@sub.example.com')).toBe(true);
      expect(entryMatches('example.com', 'X@Mail.Deep.EXAMPLE.com')).toBe(true);
      expect(entryMatches('Example.COM', 'a@example.com')).toBe(true);
      expect(entryMatches('mail.example.com', 'a@example.com')).toBe(false);
      expect(entryMatches('a@example.com', 'A@Example.COM')).toBe(true);
      expect(entryMatches('a@example.com', 'a@sub.example.com')).toBe(false);
      expect(entryMatches('example.com', 'a@notexample.com')).toBe(false);
      expect(entryMatches('a@example.com', 'a@example.com')).toBe(true);
      expect(entryMatches('a@example.com', 'b@example.com')).toBe(false);
      expect(entryMatches('example.com', '+14155550100')).toBe(false);
    });

    it('deny wins over allow; a non-empty allow list admits only its entries', () => {
      const p = policy({ allowList: ['+1415', 'example.com'], denyList: ['+14155550100'] });
      expect(recipientRefusal(p, '+14155550100')?.rule).toBe('deny_list');
      expect(recipientRefusal(p, '+14155550101')).toBeNull();
      expect(recipientRefusal(p, 'x@example.com')).toBeNull();
      expect(recipientRefusal(p, '+12125550100')?.rule).toBe('allow_list');
      expect(recipientRefusal(policy({ allowList: [] }), '+12125550100')).toBeNull();
    });
  });

  it('an override replaces the org’s value field by field; null inherits', () => {
    const org = policy({ maxPerHour: 10, maxPerDay: 100, timeZone: 'Europe/Paris', denyList: ['+33'] });
    const override = policy({ maxPerHour: 2, denyList: [] });
    expect(effectivePolicy(org, override)).toEqual(policy({ maxPerHour: 2, maxPerDay: 100, timeZone: 'Europe/Paris', denyList: [] }));
    expect(effectivePolicy(null, null)).toEqual(EMPTY_POLICY);
  });

  it('passesAt is when the send that must leave the window does', () => {
    const now = new Date('2026-01-15T12:00:00Z');
    const error = limitRefusal('max_per_hour', 3, new Date('2026-01-15T11:20:00Z'), now);
    expect(error.passesAt?.toISOString()).toBe('2026-01-15T12:20:00.000Z');
    expect(error.message).toMatch(/\(rule max_per_hour\)$/);
    expect(limitRefusal('max_per_day', 0, null, now).passesAt).toBeNull();
  });

  describe('checkedPolicy names the bad field', () => {
    const bad = (over: Partial<SendPolicyFields>): string | undefined => {
      try {
        checkedPolicy(policy(over));
        return undefined;
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return (error as ValidationError).field;
      }
    };
    it.each<[Partial<SendPolicyFields>, string]>([
      [{ maxPerHour: -1 }, 'maxPerHour'],
      [{ maxPerDay: 1.5 }, 'maxPerDay'],
      [{ quietStart: '25:00', quietEnd: '08:00' }, 'quietStart'],
      [{ quietStart: '21:00' }, 'quietEnd'],
      [{ quietStart: '08:00', quietEnd: '08:00' }, 'quietEnd'],
      [{ timeZone: 'Mars/Olympus' }, 'timeZone'],
      [{ allowList: ['415'] }, 'allowList'],
      [{ denyList: ['not a domain'] }, 'denyList'],
    ])('%j → %s', (over, field) => expect(bad(over)).toBe(field));

    it('normalizes entries', () => {
      expect(checkedPolicy(policy({ denyList: [' Example.COM ', 'example.com', '+1415'] })).denyList).toEqual(['example.com', '+1415']);
      expect(bad({ timeZone: 'America/New_York', quietStart: '21:00', quietEnd: '08:00' })).toBeUndefined();
    });
  });
});
