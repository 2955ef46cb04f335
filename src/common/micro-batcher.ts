import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Runs many small requests as one: what callers submit while earlier batches are still running
 * (or within the same turn of the event loop) is handed to `run` together, so a hundred
 * concurrent jobs cost one database round trip and one commit instead of a hundred.
 *
 * Batching adapts to load with no timer: when the database is idle a lone item goes out on the
 * next turn of the event loop; while `maxInFlight` batches are running, new items wait and the
 * next batch grows (group commit). A failed batch rejects every item in it, with the same error.
 *
 * With `keyOf`, a batch holds at most one item per key: a second item with the key waits, in its
 * order, for a later batch (a statement that upserts one row per item must not meet a row twice).
 */
export class MicroBatcher<I, O> {
  private queued: Array<{ item: I; resolve: (value: O) => void; reject: (error: unknown) => void }> = [];
  private inFlight = 0;
  private scheduled = false;
  /**
   * Runs a function in the async context the batcher was made in (at start-up: none). A batch
   * holds items of many callers, so it runs as none of them: the first submitter's context (an
   * audited call, src/audit; a trace) must not follow the batch's statements and commits.
   */
  private readonly detached = AsyncLocalStorage.snapshot();

  /**
   * @param run answers each item of a batch, in order (the result array has one entry per item)
   * @param maxBatch most items in one call of `run`
   * @param maxInFlight most calls of `run` at once
   * @param keyOf an item's key, of which a batch holds one item at most
   */
  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 200,
    private readonly maxInFlight = 2,
    private readonly keyOf?: (item: I) => string,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queued.push({ item, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() =>
          this.detached(() => {
            this.scheduled = false;
            this.drain();
          }),
        );
      }
    });
  }

  private drain(): void {
    while (this.queued.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.takeBatch();
      this.inFlight += 1;
      void this.runBatch(batch).finally(() => {
        this.inFlight -= 1;
        this.drain();
      });
    }
  }

  /** The next batch: the first queued items, one per key when items have keys. */
  private takeBatch(): typeof this.queued {
    const keyOf = this.keyOf;
    if (!keyOf) return this.queued.splice(0, this.maxBatch);
    const keys = new Set<string>();
    const batch: typeof this.queued = [];
    const left: typeof this.queued = [];
    for (const entry of this.queued) {
      const key = keyOf(entry.item);
      if (batch.length < this.maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(entry);
      } else {
        left.push(entry);
      }
    }
    this.queued = left;
    return batch;
  }

  private async runBatch(batch: typeof this.queued): Promise<void> {
    try {
      const results = await this.run(batch.map((entry) => entry.item));
      if (results.length !== batch.length) throw new Error(`batch of ${batch.length} answered ${results.length} results`);
      batch.forEach((entry, i) => entry.resolve(results[i]));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}

/**
 * For a batch lookup by key: the rows of each key of `keys`, in the order of `keys` (an empty list
 * for a key no row has; a key given twice gets the same rows twice), rows in their given order.
 */
export function rowsPerKey<R>(keys: string[], rows: R[], keyOf: (row: R) => string): R[][] {
  const byKey = new Map<string, R[]>();
  for (const row of rows) {
    const key = keyOf(row);
    const keyRows = byKey.get(key);
    if (keyRows) keyRows.push(row);
    else byKey.set(key, [row]);
  }
  return keys.map((key) => byKey.get(key) ?? []);
}
