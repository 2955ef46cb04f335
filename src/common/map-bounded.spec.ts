import { mapBounded } from './map-bounded';

const tick = (ms = 1) => new Promise((resolve) => setTimeout(resolve, ms));

describe('mapBounded', () => {
  it('keeps the order of the items and never runs more than the limit at once', async () => {
    let running = 0;
    let most = 0;
    const run = await mapBounded([5, 1, 4, 2, 3, 0, 6], 3, async (ms, i) => {
      running += 1;
      most = Math.max(most, running);
      await tick(ms);
      running -= 1;
      return `${i}:${ms}`;
    });
    expect(run).toEqual({ results: ['0:5', '1:1', '2:4', '3:2', '4:3', '5:0', '6:6'], ran: 7, stopped: false });
    expect(most).toBe(3);
  });

  it('asks mayStart before every item but the first, and starts nothing once it says no', async () => {
    const started: number[] = [];
    let asked = 0;
    const run = await mapBounded(
      [0, 1, 2, 3, 4, 5],
      2,
      async (n) => {
        started.push(n);
        await tick();
        return n;
      },
      async () => ++asked < 3,
    );
    expect(run.stopped).toBe(true);
    expect(started).toEqual([0, 1, 2]);
    expect(run.ran).toBe(3);
    expect(run.results).toEqual([0, 1, 2, undefined, undefined, undefined]);
  });

  it('stops starting items after an error and rethrows it once the running ones are done', async () => {
    const finished: number[] = [];
    const started: number[] = [];
    await expect(
      mapBounded([0, 1, 2, 3, 4], 2, async (n) => {
        started.push(n);
        await tick(n === 0 ? 20 : 1);
        if (n === 1) throw new Error('boom');
        finished.push(n);
        return n;
      }),
    ).rejects.toThrow('boom');
    expect(started).toEqual([0, 1]);
    expect(finished).toEqual([0]);
  });

  it('runs one at a time with a limit of 1, and answers nothing for no items', async () => {
    const order: string[] = [];
    await mapBounded(['a', 'b'], 1, async (x) => {
      order.push(`start ${x}`);
      await tick();
      order.push(`end ${x}`);
    });
    expect(order).toEqual(['start a', 'end a', 'start b', 'end b']);
    expect(await mapBounded([], 4, async () => 1)).toEqual({ results: [], ran: 0, stopped: false });
  });
});
