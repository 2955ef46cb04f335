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
    this.clearTimer();
    this.timer = setInterval(() => void this.runOnce(), intervalMs);
    this.timer.unref();
  }

  /**
   * No further run starts on the timer; resolves once the run under way, if any, has ended, so
   * that what the run still writes is written before the database it writes to closes.
   */
  stop(): Promise<void> {
    this.clearTimer();
    return this.running ?? Promise.resolve();
  }

  private clearTimer(): void {
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
