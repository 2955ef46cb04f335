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

  /** No further run starts on the timer; a run under way goes on (settled() waits for it). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Resolves once the run under way, if any, has ended. Not waited for at shutdown in general: a
   * retention run can take minutes, and what it does not finish the next run does. A task whose
   * run starts work that must itself be stopped (the mailbox sync's sessions) waits for it.
   */
  settled(): Promise<void> {
    return this.running ?? Promise.resolve();
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
