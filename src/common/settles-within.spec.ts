import { settlesWithin } from './settles-within';

describe('settlesWithin', () => {
  it('answers true for work that resolves or rejects in time, false for work that does not', async () => {
    await expect(settlesWithin(Promise.resolve('done'), 1_000)).resolves.toBe(true);
    await expect(settlesWithin(Promise.reject(new Error('refused')), 1_000)).resolves.toBe(true);
    await expect(settlesWithin(new Promise(() => undefined), 20)).resolves.toBe(false);
  });
});
