/**
 * The bytes of request bodies one process may hold in memory at once. A request reserves its
 * declared Content-Length (or its route's limit when it sends no length) before a byte is read,
 * and gives it back when its answer is done; a reservation that does not fit now is refused, and
 * the caller answers 503 with Retry-After. So a burst of large uploads, or slow senders that hold
 * their reservation while they trickle, can never take more memory than this budget.
 */
export class BodyBudget {
  private used = 0;

  constructor(readonly capacity: number) {}

  /** Bytes reserved right now. */
  get reserved(): number {
    return this.used;
  }

  /** Reserves `bytes`; returns the function that gives them back (once), or null when they do not fit now. */
  tryReserve(bytes: number): (() => void) | null {
    if (bytes < 0 || !Number.isFinite(bytes)) throw new RangeError(`cannot reserve ${bytes} bytes`);
    if (this.used + bytes > this.capacity) return null;
    this.used += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= bytes;
    };
  }
}
