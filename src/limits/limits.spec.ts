import { ConcurrencyGate } from './concurrency-gate';
import { clientKey } from './ip-rate-limit.guard';

describe('ConcurrencyGate', () => {
  it('gives each key at most its limit of slots, partly when only some are free, and takes them back', () => {
    const gate = new ConcurrencyGate(3);
    expect(gate.tryTake('a', 2)).toBe(2);
    expect(gate.tryTake('a', 4)).toBe(1);
    expect(gate.tryTake('a', 1)).toBe(0);
    expect(gate.tryTake('b', 3)).toBe(3);
    gate.give('a', 2);
    expect(gate.heldBy('a')).toBe(1);
    expect(gate.tryTake('a', 4)).toBe(2);
    gate.give('a', 3);
    expect(gate.heldBy('a')).toBe(0);
    expect(gate.tryTake('a', 0)).toBe(0);
  });
});

describe('clientKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['::1', '0:0:0:0::/64'],
    [undefined, 'unknown'],
    ['not an ip', 'unknown'],
  ])('puts %j in the bucket %j', (ip, key) => {
    expect(clientKey(ip)).toBe(key);
  });
});
