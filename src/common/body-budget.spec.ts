import { BodyBudget } from './body-budget';

describe('BodyBudget', () => {
  it('admits reservations while they fit, and refuses the one that does not', () => {
    const budget = new BodyBudget(100);
    const a = budget.tryReserve(60);
    const b = budget.tryReserve(40);
    expect(a).toBeInstanceOf(Function);
    expect(b).toBeInstanceOf(Function);
    expect(budget.reserved).toBe(100);
    expect(budget.tryReserve(1)).toBe('full');
    expect(budget.reserved).toBe(100);
  });

  it('gives bytes back on release, once however often it is called', () => {
    const budget = new BodyBudget(100);
    const a = budget.tryReserve(70) as () => void;
    expect(budget.tryReserve(70)).toBe('full');
    a();
    a();
    expect(budget.reserved).toBe(0);
    const b = budget.tryReserve(70) as () => void;
    expect(budget.tryReserve(30)).toBeInstanceOf(Function);
    b();
    expect(budget.reserved).toBe(30);
  });

  it('admits empty bodies even when full, and refuses impossible sizes', () => {
    const budget = new BodyBudget(10);
    budget.tryReserve(10);
    expect(budget.tryReserve(0)).toBeInstanceOf(Function);
    expect(() => budget.tryReserve(-1)).toThrow(RangeError);
    expect(() => budget.tryReserve(Number.NaN)).toThrow(RangeError);
  });

  describe('with a share per client', () => {
    it("refuses a client past its share ('client-share') while other clients are still served", () => {
      const budget = new BodyBudget(100, 30);
      const a1 = budget.tryReserve(20, 'a');
      expect(a1).toBeInstanceOf(Function);
      expect(budget.tryReserve(10, 'a')).toBeInstanceOf(Function);
      expect(budget.tryReserve(1, 'a')).toBe('client-share');
      expect(budget.reservedBy('a')).toBe(30);
      // Others still get theirs, up to the whole budget.
      expect(budget.tryReserve(30, 'b')).toBeInstanceOf(Function);
      expect(budget.tryReserve(30, 'c')).toBeInstanceOf(Function);
      expect(budget.tryReserve(10, 'd')).toBeInstanceOf(Function);
      expect(budget.reserved).toBe(100);
      expect(budget.tryReserve(1, 'e')).toBe('full');
      // A client over its share is told so even when the budget is full: the refusal is its own.
      expect(budget.tryReserve(1, 'a')).toBe('client-share');
    });

    it('gives the share back on release, once, and forgets a client that holds nothing', () => {
      const budget = new BodyBudget(100, 30);
      const a1 = budget.tryReserve(20, 'a') as () => void;
      const a2 = budget.tryReserve(10, 'a') as () => void;
      const b = budget.tryReserve(5, 'b') as () => void;
      expect(budget.clients).toBe(2);
      a1();
      a1();
      expect(budget.reservedBy('a')).toBe(10);
      expect(budget.tryReserve(20, 'a')).toBeInstanceOf(Function);
      expect(budget.tryReserve(1, 'a')).toBe('client-share');
      b();
      expect(budget.clients).toBe(1);
      expect(budget.reservedBy('b')).toBe(0);
      a2();
      expect(budget.reservedBy('a')).toBe(20);
    });

    it('keeps no entry for an empty body, and none once every reservation has ended', () => {
      const budget = new BodyBudget(1000, 30);
      const releases = Array.from({ length: 1000 }, (_, i) => budget.tryReserve(i % 2, `client-${i}`) as () => void);
      expect(budget.clients).toBe(500);
      for (const release of releases) release();
      expect(budget.clients).toBe(0);
      expect(budget.reserved).toBe(0);
    });

    it('a reservation without a client is limited by the whole budget only', () => {
      const budget = new BodyBudget(100, 30);
      expect(budget.tryReserve(80)).toBeInstanceOf(Function);
      expect(budget.clients).toBe(0);
      expect(budget.tryReserve(30, 'a')).toBe('full');
    });
  });
});
