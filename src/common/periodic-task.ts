import { Logger } from '@nestjs/common';

/**
 * Background work on a timer (sweeps, retention): `work` runs every `intervalMs` once started,
 * never twice at once (a run still going when the next is due is not doubled), a failure is
 * logged and the next run simply tries again, and the timer never keeps the process alive.
 */
export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly name: string,
    private readonly logger: Logger,
    private readonly work: () => Promise<unknown>,
  ) {}

  start(intervalMs: number): void {
    this.stop();
    this.timer = setInterval(() => void this.runOnce(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** A run now, or the end of the one under way. Never rejects: a failure is logged. */
  runOnce(): Promise<void> {
    this.running ??= this.work()
      .then(
        () => undefined,
        (error: unknown) => this.logger.warn(`${this.name} failed, will retry: ${error instanceof Error ? error.message : String(error)}`),
      )
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}

/**
 * Deletes in small batches: runs `sql` (one DELETE, its own short transaction, whose last
 * parameter is the most rows one batch may delete) until a batch deletes fewer than `batchSize`,
 * pausing `pauseMs` between batches, so that retention never holds locks long nor starves the
 * work that shares the database. Answers the rows deleted and the batches run.
 */
export async function deleteInBatches(
  db: { query(sql: string, params: unknown[]): Promise<unknown> },
  sql: string,
  params: unknown[],
  options: { batchSize: number; pauseMs: number },
): Promise<{ rows: number; batches: number }> {
  let rows = 0;
  let batches = 0;
  for (;;) {
    // A DELETE answers [rows returned, rows affected].
    const [, deleted] = (await db.query(sql, [...params, options.batchSize])) as [unknown, number];
    rows += deleted;
    batches += 1;
    if (deleted < options.batchSize) return { rows, batches };
    await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
  }
}
