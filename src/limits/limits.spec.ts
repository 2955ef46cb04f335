import { ConcurrencyGate } from './concurrency-gate';

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
