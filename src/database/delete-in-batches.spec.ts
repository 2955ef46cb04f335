import { deleteInBatches } from './delete-in-batches';

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
