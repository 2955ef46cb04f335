import { Logger } from '@nestjs/common';
import { deleteInBatches, PeriodicTask } from './periodic-task';

describe('PeriodicTask', () => {
  it('never runs twice at once, and a failed run is logged, not thrown', async () => {
    const logger = { warn: jest.fn() } as unknown as Logger;
    let release!: () => void;
    let runs = 0;
    const task = new PeriodicTask('probe', logger, async () => {
      runs += 1;
      await new Promise<void>((resolve) => (release = resolve));
      throw new Error('database away');
    });
    const first = task.runOnce();
    const second = task.runOnce();
    expect(second).toBe(first);
    release();
    await first;
    expect(runs).toBe(1);
    expect(logger.warn).toHaveBeenCalledWith('probe failed, will retry: database away');
    const third = task.runOnce();
    release();
    await third;
    expect(runs).toBe(2);
  });
});

describe('deleteInBatches', () => {
  it('deletes batch after batch until one comes back short, the batch size as the last parameter', async () => {
    const left = [500, 500, 120];
    const calls: unknown[][] = [];
    const db = {
      query: async (_sql: string, params: unknown[]) => {
        calls.push(params);
        return [[], left.shift() ?? 0];
      },
    };
    const result = await deleteInBatches(db, 'DELETE ... LIMIT $2', ['cutoff'], { batchSize: 500, pauseMs: 1 });
    expect(result).toEqual({ rows: 1120, batches: 3 });
    expect(calls).toEqual([
      ['cutoff', 500],
      ['cutoff', 500],
      ['cutoff', 500],
    ]);
  });

  it('runs one batch when there is nothing to delete', async () => {
    const db = { query: async () => [[], 0] };
    expect(await deleteInBatches(db, 'DELETE ...', [], { batchSize: 500, pauseMs: 1000 })).toEqual({ rows: 0, batches: 1 });
  });
});
