import { createHash } from 'node:crypto';
import { API_KEY_PATTERN, generateApiKey, hashApiKey } from './api-key-secret';

describe('generateApiKey', () => {
  it('makes csk_ followed by 48 lowercase hex characters', () => {
    for (let i = 0; i < 200; i += 1) {
      const key = generateApiKey();
      expect(key).toMatch(/^csk_[0-9a-f]{48}$/);
      expect(key).toHaveLength(52);
    }
  });

  it('never repeats itself', () => {
    const keys = new Set(Array.from({ length: 1000 }, generateApiKey));
    expect(keys.size).toBe(1000);
  });

  it('uses every hex digit (the randomness is spread over the whole key)', () => {
    const seen = new Set(Array.from({ length: 50 }, generateApiKey).join('').replace(/csk_/g, ''));
    expect([...seen].sort().join('')).toBe('0123456789abcdef');
  });
});

describe('hashApiKey', () => {
  it('is the lowercase hex SHA-256 of the raw key', () => {
    const key = 'csk_' + '0a'.repeat(24);
    expect(hashApiKey(key)).toBe(createHash('sha256').update(key, 'utf8').digest('hex'));
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('is deterministic and differs between keys', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(hashApiKey(a)).toBe(hashApiKey(a));
    expect(hashApiKey(a)).not.toBe(hashApiKey(b));
    expect(hashApiKey(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(a)).not.toContain(a.slice(4));
  });
});

describe('API_KEY_PATTERN', () => {
  const hex48 = '0123456789abcdef'.repeat(3);

  it('accepts csk_ and 48 lowercase hex', () => {
    expect(API_KEY_PATTERN.test(`csk_${hex48}`)).toBe(true);
  });

  it.each([
    ['47 hex', `csk_${hex48.slice(1)}`],
    ['49 hex', `csk_${hex48}0`],
    ['uppercase hex', `csk_${hex48.toUpperCase()}`],
    ['a non-hex letter', `csk_${hex48.slice(1)}g`],
    ['another prefix', `sk_${hex48}`],
    ['an uppercase prefix', `CSK_${hex48}`],
    ['no prefix', hex48],
    ['a leading space', ` csk_${hex48}`],
    ['a trailing newline', `csk_${hex48}\n`],
    ['the empty string', ''],
  ])('refuses %s', (_, value) => {
    expect(API_KEY_PATTERN.test(value)).toBe(false);
  });
});
