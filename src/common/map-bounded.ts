export interface BoundedRun<R> {
  /** One slot per item, in item order; an item that never ran has `undefined`. */
  results: Array<R | undefined>;
  /** How many items started. */
  ran: number;
  /** True when `mayStart` said no: the items after that point never ran. */
  stopped: boolean;
}

/**
 * Calls `task` for each item with at most `concurrency` calls running at once; the results keep
 * the items' order. `mayStart`, when given, is awaited before every item but the first: once it
 * answers false no further item starts and the running ones finish. The first error thrown by a
 * task (or by `mayStart`) also stops further starts, and is rethrown once the running tasks are done.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  concurrency: number,
  task: (item: T, index: number) => Promise<R>,
  mayStart?: () => Promise<boolean>,
): Promise<BoundedRun<R>> {
  const results = new Array<R | undefined>(items.length);
  let next = 0;
  let ran = 0;
  let stopped = false;
  let failure: { error: unknown } | undefined;
  const runner = async (): Promise<void> => {
    while (!stopped && !failure && next < items.length) {
      const index = next++;
      try {
        if (index > 0 && mayStart && !(await mayStart())) stopped = true;
        if (stopped || failure) return;
        ran += 1;
        results[index] = await task(items[index], index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, runner));
  if (failure) throw failure.error;
  return { results, ran, stopped };
}
