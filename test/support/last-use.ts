import { Clock } from '../../src/common/clock';

/** The real time moved by `offsetMs`. */
export class MovableClock extends Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

/**
 * Watches a repository's last-use write (`touchLastUsed`, `touchGrant`): each write the app starts
 * still runs; `rowsWritten` waits for those started since `clear` and counts the ones that changed the row.
 */
export function watchLastUseWrites<M extends string>(target: Record<M, (...args: never[]) => Promise<boolean>>, method: M) {
  type Write = (...args: unknown[]) => Promise<boolean>;
  const subject = target as unknown as { write: Write };
  let writes: Array<Promise<boolean>> = [];
  const original = (target[method] as unknown as Write).bind(target);
  const spy: jest.SpyInstance = jest.spyOn(subject, method as unknown as 'write').mockImplementation((...args: unknown[]) => {
    const write = original(...args);
    writes.push(write);
    return write;
  });
  return {
    spy,
    rowsWritten: async () => (await Promise.all(writes)).filter(Boolean).length,
    clear: () => {
      writes = [];
      spy.mockClear();
    },
  };
}
