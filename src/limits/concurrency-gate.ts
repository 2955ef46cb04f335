/**
 * Slots per key in this process: a key may hold at most `limit` at once. Taking never waits:
 * a caller that gets no slot is refused at once, so a flood never builds a queue.
 */
export class ConcurrencyGate {
  private readonly held = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** Takes up to `wanted` of `key`'s free slots; answers how many it took (0: none was free). */
  tryTake(key: string, wanted: number): number {
    const held = this.held.get(key) ?? 0;
    const taken = Math.max(0, Math.min(wanted, this.limit - held));
    if (taken > 0) this.held.set(key, held + taken);
    return taken;
  }

  give(key: string, slots: number): void {
    const left = (this.held.get(key) ?? 0) - slots;
    if (left > 0) this.held.set(key, left);
    else this.held.delete(key);
  }

  /** Slots `key` holds now. */
  heldBy(key: string): number {
    return this.held.get(key) ?? 0;
  }
}
