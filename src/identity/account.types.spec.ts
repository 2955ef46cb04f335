import { E164, normalizeAddress, TIER_ENDPOINT_CAP } from './account.types';

describe('normalizeAddress', () => {
  it('lowercases and trims email addresses', () => {
    expect(normalizeAddress('  Ops.Team@Example.COM ')).toBe('ops.team@example.com');
  });

  it('keeps phone numbers as given, only trimmed', () => {
    expect(normalizeAddress(' +15551230001\n')).toBe('+15551230001');
  });

  it('is idempotent', () => {
    for (const a of ['A@B.C', '+4930123456', ' x@Y.z ']) expect(normalizeAddress(normalizeAddress(a))).toBe(normalizeAddress(a));
  });
});

describe('E164 and tier caps', () => {
  it.each(['+15551230001', '+12', '+491701234567', '+123456789012345'])('accepts %s', (n) => expect(E164.test(n)).toBe(true));
  it.each(['15551230001', '+0123', '+1', '+1234567890123456', '+1 555 123', '+1555123000a', ''])('refuses %s', (n) => expect(E164.test(n)).toBe(false));

  it('gives 1, 3 and 10 endpoints per user for STARTER, PRO and POWER', () => {
    expect(TIER_ENDPOINT_CAP).toEqual({ STARTER: 1, PRO: 3, POWER: 10 });
  });
});
