import { answerSignal, EndpointConcurrency, IDLE_FORGET_MS } from './endpoint-concurrency';

describe('EndpointConcurrency (the adaptive per-endpoint limit)', () => {
  function setup(options = { initial: 10, min: 1, max: 50 }) {
    let clock = 1_000_000;
    const limits = new EndpointConcurrency(options, () => clock);
    const advance = (ms: number) => (clock += ms);
    /** `count` answers of `durationMs` each, one after another, the endpoint using its whole limit. */
    const answer = (count: number, signal: 'good' | 'overload' | 'neutral', durationMs = 5, endpointId = 'e') => {
      for (let i = 0; i < count; i++) {
        advance(durationMs);
        limits.record(endpointId, { signal, durationMs, inFlight: limits.limit(endpointId) });
      }
    };
    return { limits, advance, answer };
  }

  it('starts every endpoint at the initial limit', () => {
    const { limits } = setup();
    expect(limits.limit('a')).toBe(10);
    expect(limits.limit('b')).toBe(10);
  });

  it('grows by about one per round of 2xx answers at a steady latency, up to the maximum', () => {
    const { limits, answer } = setup();
    answer(11, 'good');
    expect(limits.limit('e')).toBe(11);
    answer(12, 'good');
    expect(limits.limit('e')).toBe(12);
    answer(5000, 'good');
    expect(limits.limit('e')).toBe(50);
  });

  it('does not grow while the endpoint uses less than half its limit', () => {
    const { limits } = setup();
    for (let i = 0; i < 100; i++) limits.record('e', { signal: 'good', durationMs: 5, inFlight: 4 });
    expect(limits.limit('e')).toBe(10);
    for (let i = 0; i < 11; i++) limits.record('e', { signal: 'good', durationMs: 5, inFlight: 6 });
    expect(limits.limit('e')).toBe(11);
  });

  it('halves on overload (timeout, connection error, 5xx, 429), once for the requests of one round, down to the minimum', () => {
    const { limits, advance } = setup();
    // Ten requests sent together all time out 2 s later: one cut, not ten.
    advance(2000);
    for (let i = 0; i < 10; i++) limits.record('e', { signal: 'overload', durationMs: 2000, inFlight: 10 - i });
    expect(limits.limit('e')).toBe(5);
    // The next round, sent after that cut, cuts again.
    advance(2000);
    limits.record('e', { signal: 'overload', durationMs: 1999, inFlight: 5 });
    expect(limits.limit('e')).toBe(2);
    for (let round = 0; round < 5; round++) {
      advance(2000);
      limits.record('e', { signal: 'overload', durationMs: 1999, inFlight: 1 });
    }
    expect(limits.limit('e')).toBe(1);
  });

  it('takes back growth when the latency more than doubles over its baseline, down to the initial limit, and grows again once it is back', () => {
    const { limits, answer } = setup();
    answer(300, 'good', 10);
    const grown = limits.limit('e');
    expect(grown).toBeGreaterThan(20);
    answer(20, 'good', 400); // 10 ms → 400 ms: more than twice the baseline and 100 ms above it
    const slowed = limits.limit('e');
    expect(slowed).toBeLessThan(grown);
    answer(30, 'good', 400);
    expect(limits.limit('e')).toBe(10); // never below the initial limit on latency alone
    answer(200, 'good', 10);
    expect(limits.limit('e')).toBeGreaterThan(10);
  });

  it('ignores a rise of tens of milliseconds (the slack: the worker’s own delays are in the latency)', () => {
    const { limits, answer } = setup();
    answer(20, 'good', 1);
    answer(40, 'good', 90); // 90 times slower, but only 89 ms more: within the slack
    expect(limits.limit('e')).toBeGreaterThan(10);
  });

  it('takes a receiver that stays slower as its new normal within some tens of answers', () => {
    const { limits, answer } = setup();
    answer(300, 'good', 10);
    answer(30, 'good', 500);
    const cut = limits.limit('e');
    answer(100, 'good', 500);
    expect(limits.limit('e')).toBeGreaterThan(cut);
  });

  it('leaves the limit alone for other 4xx answers and refused URLs', () => {
    const { limits, answer } = setup();
    answer(100, 'neutral');
    expect(limits.limit('e')).toBe(10);
  });

  it('keeps endpoints apart, and forgets one not heard from for a while', () => {
    const { limits, answer, advance } = setup();
    answer(1, 'overload', 100, 'slow');
    answer(30, 'good', 5, 'fast');
    expect(limits.limit('slow')).toBe(5);
    expect(limits.limit('fast')).toBe(12); // 10 + about 1 ÷ limit per answer
    advance(IDLE_FORGET_MS + 1);
    expect(limits.limit('slow')).toBe(10);
  });

  it('keeps the bounds in order whatever the settings say (the floor wins)', () => {
    expect(new EndpointConcurrency({ initial: 10, min: 20, max: 5 }).limit('e')).toBe(20);
    expect(new EndpointConcurrency({ initial: 100, min: 1, max: 30 }).limit('e')).toBe(30);
    const fixed = new EndpointConcurrency({ initial: 10, min: 10, max: 10 });
    fixed.record('e', { signal: 'overload', durationMs: 10, inFlight: 10 });
    expect(fixed.limit('e')).toBe(10);
  });

  it('reads the signal of an answer', () => {
    expect(answerSignal({ statusCode: 200 })).toBe('good');
    expect(answerSignal({ statusCode: 204 })).toBe('good');
    expect(answerSignal({ statusCode: 503 })).toBe('overload');
    expect(answerSignal({ statusCode: 500 })).toBe('overload');
    expect(answerSignal({ statusCode: 429 })).toBe('overload');
    expect(answerSignal({ statusCode: 404 })).toBe('neutral');
    expect(answerSignal({ statusCode: null, errorKind: 'timeout' })).toBe('overload');
    expect(answerSignal({ statusCode: null, errorKind: 'connection_refused' })).toBe('overload');
    expect(answerSignal({ statusCode: null, errorKind: 'url_refused' })).toBe('neutral');
  });
});
