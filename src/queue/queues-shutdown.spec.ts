import { Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { QueuesShutdown, ServiceQueues } from './queue.module';

/** Shutdown waits for the jobs under way, but not forever (SHUTDOWN_JOBS_WAIT_SECONDS). */
describe('QueuesShutdown', () => {
  afterEach(() => jest.restoreAllMocks());

  it('closes a queue whose jobs under way have not ended by the bound without them, and leaves the others to end theirs', async () => {
    const warnings: string[] = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    const ended = { name: 'ended', pause: jest.fn(async () => undefined), close: jest.fn(async () => undefined) };
    const hung = { name: 'hung', pause: jest.fn(() => new Promise<void>(() => undefined)), close: jest.fn(async () => undefined) };
    const queues = { all: () => [ended, hung] } as unknown as ServiceQueues;
    const shutdown = new QueuesShutdown(queues, { shutdownJobsWaitMs: 50 } as AppConfig);

    await shutdown.beforeApplicationShutdown();

    expect(ended.pause).toHaveBeenCalledWith(true);
    expect(ended.close).not.toHaveBeenCalled();
    expect(hung.close).toHaveBeenCalledWith(true);
    expect(warnings).toEqual([
      'queue hung: its jobs under way did not end within 0.05 s of shutdown (SHUTDOWN_JOBS_WAIT_SECONDS); closing it without them, they run again once their locks expire',
    ]);
  });
});
