import { Logger } from '@nestjs/common';
import { PeriodicTask } from './periodic-task';

describe('PeriodicTask', () => {
  it('never runs twice at once, and a failed run is logged, not thrown', async () => {
    const logger = { warn: jest.fn() } as unknown as Logger;
    let release!: () => void;
    let runs = 0;
    const task = new PeriodicTask('probe', logger, async () => {
      runs += 1;
      await new Promise<void>((resolve) => (release = resolve));
      throw new Error('database away');
    });
    const first = task.runOnce();
    const second = task.runOnce();
    expect(second).toBe(first);
    release();
    await first;
    expect(runs).toBe(1);
    expect(logger.warn).toHaveBeenCalledWith('probe failed, will retry: database away');
    const third = task.runOnce();
    release();
    await third;
    expect(runs).toBe(2);
  });

  it('stops only once the run under way has ended', async () => {
    const logger = { warn: jest.fn() } as unknown as Logger;
    let release!: () => void;
    let ended = false;
    const task = new PeriodicTask('probe', logger, async () => {
      await new Promise<void>((resolve) => (release = resolve));
      ended = true;
    });
    task.start(60_000);
    void task.runOnce();
    let stopped = false;
    const stopping = task.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(ended).toBe(true);
    await expect(task.stop()).resolves.toBeUndefined();
  });
});
