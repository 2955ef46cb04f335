import { Logger } from '@nestjs/common';
import { PeriodicTask } from './periodic-task';

describe('PeriodicTask', () => {
  /** A task whose every run waits for `release()`, then ends as `end` says; `runs()` counts the runs. */
  function heldTask(end: () => void = () => undefined) {
    const logger = { warn: jest.fn() } as unknown as Logger;
    let release!: () => void;
    let runs = 0;
    const task = new PeriodicTask('probe', logger, async () => {
      runs += 1;
      await new Promise<void>((resolve) => (release = resolve));
      end();
    });
    return { task, logger, release: () => release(), runs: () => runs };
  }

  it('never runs twice at once, and a failed run is logged, not thrown', async () => {
    const { task, logger, release, runs } = heldTask(() => {
      throw new Error('database away');
    });
    const first = task.runOnce();
    const second = task.runOnce();
    expect(second).toBe(first);
    release();
    await first;
    expect(runs()).toBe(1);
    expect(logger.warn).toHaveBeenCalledWith('probe failed, will retry: database away');
    const third = task.runOnce();
    release();
    await third;
    expect(runs()).toBe(2);
  });

  it('stop() ends the timer at once; settled() resolves once the run under way has ended', async () => {
    const { task, release, runs } = heldTask();
    task.start(10);
    void task.runOnce();
    task.stop();
    let settled = false;
    const settling = task.settled().then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBe(false);
    release();
    await settling;
    expect(runs()).toBe(1); // no run started on the timer after stop()
    await expect(task.settled()).resolves.toBeUndefined();
  });
});
