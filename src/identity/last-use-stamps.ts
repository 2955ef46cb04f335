import { Logger } from '@nestjs/common';
import { Clock } from '../common/clock';

/** `last_used_at` is written at most once per this interval per key or grant: "last used" is shown to the minute. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * The UPDATE that stamps a row's `last_used_at` with `:now`, for the row whose `idColumn` is `:id`,
 * unless it was stamped within LAST_USED_RESOLUTION_MS before `:now`: whatever the replicas and
 * concurrent requests, one write per interval reaches the row.
 */
export function stampLastUseSql(table: string, idColumn: string): string {
  return `UPDATE ${table} SET last_used_at = :now
        WHERE ${idColumn} = :id AND (last_used_at IS NULL OR last_used_at <= :now::timestamptz - interval '${LAST_USED_RESOLUTION_MS} milliseconds')`;
}

/**
 * Records that an API key or an OAuth grant authenticated a request, off the request's path:
 * nothing is awaited, a failure is logged. Skipped when the row (read by the resolving query
 * itself) was stamped less than LAST_USED_RESOLUTION_MS ago, or a write for it is already in
 * flight here; the UPDATE's own condition (`write`) keeps concurrent requests and other replicas
 * to one write a minute.
 */
export class LastUseStamps {
  /** Ids whose write is in flight in this process, and those writes (awaited at shutdown). */
  private readonly touching = new Map<string, Promise<void>>();

  /**
   * @param write stamps the row `id` with `now` unless it was stamped within the minute before `now`
   * @param what names the row in the warning ("API key", "OAuth grant")
   */
  constructor(
    private readonly write: (id: string, now: Date) => Promise<unknown>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly what: string,
  ) {}

  note(id: string, lastUsedAt: Date | null): void {
    const now = this.clock.now();
    if (lastUsedAt && now.getTime() - lastUsedAt.getTime() < LAST_USED_RESOLUTION_MS) return;
    if (this.touching.has(id)) return;
    const write = this.write(id, now)
      .then(
        () => undefined,
        (error: unknown) => this.logger.warn(`could not record the last use of ${this.what} ${id}: ${error instanceof Error ? error.message : String(error)}`),
      )
      .finally(() => this.touching.delete(id));
    this.touching.set(id, write);
  }

  /** Lets the writes in flight finish (before the database pool closes). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.touching.values()]);
  }
}
