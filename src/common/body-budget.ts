/** Why a reservation was refused: the process holds its whole budget, or the client holds its share. */
export type BodyBudgetRefusal = 'full' | 'client-share';

/**
 * The bytes of request bodies one process may hold in memory at once. A request reserves its
 * declared Content-Length (or its route's limit when it sends no length) before a byte is read,
 * and gives it back when its answer is done; a reservation that does not fit now is refused, and
 * the caller answers 503 with Retry-After. So a burst of large uploads, or slow senders that hold
 * their reservation while they trickle, can never take more memory than this budget.
 *
 * With a share per client (`perClient`), the reservations of one client (an address, as
 * `clientKey` buckets it) may add up to at most that share, so one client cannot hold the whole
 * budget and shut the others out; it is then refused with 'client-share'. A client is counted
 * only while it holds bytes: its entry goes when its last reservation ends, so the entries are
 * never more than the reservations open.
 */
export class BodyBudget {
  private used = 0;
  private readonly byClient = new Map<string, number>();

  constructor(
    readonly capacity: number,
    /** The most one client may hold at once; the whole budget when not given. */
    readonly perClient: number = capacity,
  ) {}

  /** Bytes reserved right now. */
  get reserved(): number {
    return this.used;
  }

  /** Bytes `client` holds right now. */
  reservedBy(client: string): number {
    return this.byClient.get(client) ?? 0;
  }

  /** Clients that hold bytes right now. */
  get clients(): number {
    return this.byClient.size;
  }

  /**
   * Reserves `bytes` for `client`; returns the function that gives them back (once), or why they
   * do not fit now. Without a client, only the whole budget limits the reservation.
   */
  tryReserve(bytes: number, client?: string): (() => void) | BodyBudgetRefusal {
    if (bytes < 0 || !Number.isFinite(bytes)) throw new RangeError(`cannot reserve ${bytes} bytes`);
    const held = client === undefined ? 0 : this.reservedBy(client);
    if (client !== undefined && bytes > 0 && held + bytes > this.perClient) return 'client-share';
    if (this.used + bytes > this.capacity) return 'full';
    this.used += bytes;
    if (client !== undefined && bytes > 0) this.byClient.set(client, held + bytes);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= bytes;
      if (client === undefined || bytes === 0) return;
      const left = this.reservedBy(client) - bytes;
      if (left > 0) this.byClient.set(client, left);
      else this.byClient.delete(client);
    };
  }
}
