import { deferralDelayMs, ExtractionFairness } from './extraction-fairness';

describe('ExtractionFairness', () => {
  it('lets one org hold its share of the threads, and another org take the rest', () => {
    const fairness = new ExtractionFairness(1);
    expect(fairness.tryTake('org-a', 'a1')).toBe(true);
    expect(fairness.tryTake('org-a', 'a2')).toBe(false);
    expect(fairness.tryTake('org-a', 'a3')).toBe(false);
    expect(fairness.tryTake('org-b', 'b1')).toBe(true);
    expect({ a: fairness.heldBy('org-a'), b: fairness.heldBy('org-b') }).toEqual({ a: 1, b: 1 });
  });

  it("answers the org's attachments that stepped aside, oldest first, when its slot is given back", () => {
    const fairness = new ExtractionFairness(1);
    fairness.tryTake('org-a', 'a1');
    fairness.tryTake('org-a', 'a2');
    fairness.tryTake('org-a', 'a3');
    fairness.tryTake('org-a', 'a2'); // stepped aside twice: still one entry, in its first place
    fairness.tryTake('org-b', 'b1');
    expect(fairness.release('org-a')).toEqual(['a2', 'a3']);
    expect(fairness.heldBy('org-a')).toBe(0);
    expect(fairness.tryTake('org-a', 'a2')).toBe(true); // taken: no longer waits
    expect(fairness.release('org-a')).toEqual(['a3']);
    fairness.forget('org-a', 'a3');
    expect(fairness.release('org-b')).toEqual([]);
    expect(fairness.release('org-a')).toEqual([]);
  });

  it('never lets an org hold more than its share, however many jobs arrive', () => {
    const fairness = new ExtractionFairness(3);
    const taken = Array.from({ length: 10 }, (_, i) => fairness.tryTake('org-a', `a${i}`)).filter(Boolean).length;
    expect(taken).toBe(3);
    fairness.release('org-a');
    expect(fairness.tryTake('org-a', 'a3')).toBe(true);
    expect(fairness.tryTake('org-a', 'a4')).toBe(false);
  });

  it('waits 1 s after the first deferral, doubling to 30 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 50, 10_000].map(deferralDelayMs)).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000, 30_000]);
  });
});
