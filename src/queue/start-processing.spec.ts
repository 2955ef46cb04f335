import { Logger } from '@nestjs/common';
import { Queue } from 'bull';
import { processingStopped, startProcessing } from './start-processing';

/** A queue whose processing loop ends with `error`, as Bull's does when its connection closes under it. */
function queueFailingWith(error: Error, closing: boolean): Queue {
  return { name: 'deliveries', closing: closing ? Promise.resolve() : undefined, process: () => Promise.reject(error) } as unknown as Queue;
}

describe('startProcessing', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeAll(() => process.on('unhandledRejection', onUnhandled));
  afterAll(() => process.off('unhandledRejection', onUnhandled));
  beforeEach(() => (unhandled.length = 0));

  const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

  it('a processing loop that ends while the queue closes is neither unhandled nor logged', async () => {
    const logger = { error: jest.fn() } as unknown as Logger;
    startProcessing(queueFailingWith(new Error('Connection is closed.'), true), 4, async () => undefined, logger);
    await settle();
    expect(unhandled).toEqual([]);
    expect(logger.error).not.toHaveBeenCalled();
  });

  it('naming the blocking connection, which Bull does without waiting, failing as its connection closes is not unhandled', async () => {
    const logger = { error: jest.fn(), debug: jest.fn() } as unknown as Logger;
    // As Bull's Queue.process: it calls setWorkerName (CLIENT SETNAME on the blocking connection) and does not wait for it.
    const queue = {
      name: 'deliveries',
      setWorkerName: () => Promise.reject(new Error('None of startup nodes is available')),
      process(this: { setWorkerName: () => Promise<unknown> }) {
        void this.setWorkerName();
        return new Promise(() => undefined);
      },
    } as unknown as Queue;
    startProcessing(queue, 4, async () => undefined, logger);
    await settle();
    expect(unhandled).toEqual([]);
    expect(logger.error).not.toHaveBeenCalled();
    expect(logger.debug).toHaveBeenCalledWith('queue deliveries: its blocking connection was not named: None of startup nodes is available');
  });

  it('one that ends otherwise is logged with the queue name, not left unhandled', async () => {
    const logger = { error: jest.fn() } as unknown as Logger;
    const queue = queueFailingWith(new Error('NOSCRIPT'), false);
    startProcessing(queue, 4, async () => undefined, logger);
    await settle();
    expect(unhandled).toEqual([]);
    expect(logger.error).toHaveBeenCalledWith('queue deliveries stopped processing: NOSCRIPT');
    expect(processingStopped(queue)).toEqual(new Error('NOSCRIPT'));
  });

  it('starts processing again after a failed start, sending again the SUBSCRIBE Bull keeps once refused', async () => {
    jest.useFakeTimers();
    try {
      const logger = { error: jest.fn(), log: jest.fn() } as unknown as Logger;
      let subscribes = 0;
      let loops = 0;
      // As Bull 4's Queue: process() sets up the listeners once (_initProcess keeps its promise, and
      // _registerEvent keeps each SUBSCRIBE's, failed or not), then start() runs the loops.
      const queue = {
        name: 'deliveries',
        registeredEvents: {} as Record<string, Promise<unknown>>,
        _initializingProcess: undefined as Promise<unknown> | undefined,
        _initProcess(): Promise<unknown> {
          this._initializingProcess ??= this.registeredEvents.delayed ??= ++subscribes === 1 ? Promise.reject(new Error('WRONGPASS')) : Promise.resolve();
          return this._initializingProcess;
        },
        start(): Promise<void> {
          loops += 1;
          this.startMoveUnlockedJobsToWait();
          return new Promise(() => undefined);
        },
        startMoveUnlockedJobsToWait: () => undefined,
        process(): Promise<void> {
          return this._initProcess().then(() => this.start());
        },
      };
      startProcessing(queue as unknown as Queue, 4, async () => undefined, logger);
      await jest.advanceTimersByTimeAsync(10);
      expect(processingStopped(queue as unknown as Queue)?.message).toBe('WRONGPASS');
      expect(loops).toBe(0);
      await jest.advanceTimersByTimeAsync(1_000);
      expect(subscribes).toBe(2);
      expect(loops).toBe(1);
      expect(processingStopped(queue as unknown as Queue)).toBeUndefined();
      expect(logger.log).toHaveBeenCalledWith('queue deliveries is processing again');
      expect(unhandled).toEqual([]);
    } finally {
      jest.useRealTimers();
    }
  });
});
