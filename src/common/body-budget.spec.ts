import { BodyBudget } from './body-budget';

describe('BodyBudget', () => {
  it('admits reservations while they fit, and refuses the one that does not', () => {
    const budget = new BodyBudget(100);
    const a = budget.tryReserve(60);
    const b = budget.tryReserve(40);
    expect(a).toBeInstanceOf(Function);
    expect(b).toBeInstanceOf(Function);
    expect(budget.reserved).toBe(100);
    expect(budget.tryReserve(1)).toBeNull();
    expect(budget.reserved).toBe(100);
  });

  it('gives bytes back on release, once however often it is called', () => {
    const budget = new BodyBudget(100);
    const a = budget.tryReserve(70)!;
    expect(budget.tryReserve(70)).toBeNull();
    a();
    a();
    expect(budget.reserved).toBe(0);
    const b = budget.tryReserve(70)!;
    expect(budget.tryReserve(30)).not.toBeNull();
    b();
    expect(budget.reserved).toBe(30);
  });

  it('admits empty bodies even when full, and refuses impossible sizes', () => {
    const budget = new BodyBudget(10);
    budget.tryReserve(10);
    expect(budget.tryReserve(0)).not.toBeNull();
    expect(() => budget.tryReserve(-1)).toThrow(RangeError);
    expect(() => budget.tryReserve(Number.NaN)).toThrow(RangeError);
  });
});
