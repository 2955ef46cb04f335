import { AsyncLocalStorage } from 'node:async_hooks';
import { MicroBatcher, rowsPerKey } from './micro-batcher';

describe('MicroBatcher', () => {
  it("runs a batch in the context it was made in, never a submitter's (an audited call, a trace), and the submitters resume in theirs", async () => {
    const storage = new AsyncLocalStorage<string>();
    const seen: Array<string | undefined> = [];
    const batcher = new MicroBatcher<number, number>(async (items) => {
      seen.push(storage.getStore());
      await Promise.resolve();
      seen.push(storage.getStore());
      return items;
    });
    const after = await Promise.all(['a', 'b'].map((name, i) => storage.run(name, async () => [await batcher.submit(i), storage.getStore()])));
    await batcher.submit(9); // a later batch, started from the first one's end, runs outside too
    expect(seen).toEqual([undefined, undefined, undefined, undefined]);
    expect(after).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
  });

  it('hands items submitted in the same turn to one call, and answers each with its own result', async () => {
    const calls: number[][] = [];
    const batcher = new MicroBatcher<number, string>(async (items) => {
      calls.push(items);
      return items.map((n) => `#${n}`);
    });
    const answers = await Promise.all([1, 2, 3].map((n) => batcher.submit(n)));
    expect(answers).toEqual(['#1', '#2', '#3']);
    expect(calls).toEqual([[1, 2, 3]]);
  });

  it('splits at maxBatch and runs at most maxInFlight batches at once; the rest wait and grow', async () => {
    const calls: number[][] = [];
    const release: Array<() => void> = [];
    const batcher = new MicroBatcher<number, number>(
      async (items) => {
        calls.push(items);
        await new Promise<void>((resolve) => release.push(resolve));
        return items;
      },
      2,
      1,
    );
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const answers = [1, 2, 3].map((n) => batcher.submit(n));
    await turn();
    answers.push(batcher.submit(4)); // the first batch is still running: 4 waits with 3
    await turn();
    expect(calls).toEqual([[1, 2]]);
    release.shift()!();
    await turn();
    expect(calls).toEqual([
      [1, 2],
      [3, 4],
    ]);
    release.shift()!();
    expect(await Promise.all(answers)).toEqual([1, 2, 3, 4]);
  });

  it('rejects every item of a failed batch with its error, and later batches still run', async () => {
    let fail = true;
    const batcher = new MicroBatcher<number, number>(async (items) => {
      if (fail) throw new Error('database unavailable');
      return items;
    });
    const failed = await Promise.allSettled([batcher.submit(1), batcher.submit(2)]);
    expect(failed.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'ok'))).toEqual(['database unavailable', 'database unavailable']);
    fail = false;
    await expect(batcher.submit(3)).resolves.toBe(3);
  });

  it('rejects a batch whose runner answers the wrong number of results', async () => {
    const batcher = new MicroBatcher<number, number>(async () => [1]);
    await expect(Promise.all([batcher.submit(1), batcher.submit(2)])).rejects.toThrow('batch of 2 answered 1 results');
  });

  it('with keyOf, puts one item per key in a batch; the others keep their order for the next batches', async () => {
    const calls: string[][] = [];
    const batcher = new MicroBatcher<string, string>(
      async (items) => {
        calls.push(items);
        return items.map((item) => item.toUpperCase());
      },
      10,
      1,
      (item) => item[0],
    );
    const answers = await Promise.all(['a1', 'b1', 'a2', 'c1', 'a3', 'b2'].map((item) => batcher.submit(item)));
    expect(answers).toEqual(['A1', 'B1', 'A2', 'C1', 'A3', 'B2']);
    expect(calls).toEqual([['a1', 'b1', 'c1'], ['a2', 'b2'], ['a3']]);
  });
});

describe('rowsPerKey', () => {
  it('answers each key with its rows in order, a repeated key alike, an unknown key with none', () => {
    const rows = [
      { k: 'b', n: 1 },
      { k: 'a', n: 2 },
      { k: 'b', n: 3 },
    ];
    expect(rowsPerKey(['a', 'x', 'b', 'a'], rows, (row) => row.k)).toEqual([[rows[1]], [], [rows[0], rows[2]], [rows[1]]]);
  });
});
