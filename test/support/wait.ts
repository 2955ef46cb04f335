/** A value `waitUntil` accepts as "done". */
export type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

export interface WaitOptions {
  /** Gives up after this long (15 s unless told). */
  timeoutMs?: number;
  /** Pause between two probes (50 ms unless told). */
  intervalMs?: number;
}

/**
 * Polls `probe` until it returns a truthy value, and returns that value. On timeout it throws
 * naming what was awaited (`what`, or what `what()` says at that moment) and the probe's last answer.
 * An error the probe throws ends the wait at once.
 */
export async function waitUntil<T>(probe: () => T | Promise<T>, what: string | (() => string), options: WaitOptions = {}): Promise<Truthy<T>> {
  const { timeoutMs = 15_000, intervalMs = 50 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const last = await probe();
    if (last) return last as Truthy<T>;
    if (Date.now() > deadline) {
      const awaited = typeof what === 'function' ? what() : what;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${awaited} (last answer: ${describe(last)})`);
    }
    await sleep(intervalMs);
  }
}

/**
 * Waits `ms` milliseconds. Only for a time window a test waits out on purpose (a scanner window,
 * a dedup window, a retry delay): to wait for something to happen, use `waitUntil`; to show that
 * something did not happen, wait for a later event that proves it (a sentinel).
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function describe(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return String(value);
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}
