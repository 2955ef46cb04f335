import { Logger } from '@nestjs/common';
import { Queue } from 'bull';
import { startProcessing } from './start-processing';

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

  it('one that ends otherwise is logged with the queue name, not left unhandled', async () => {
    const logger = { error: jest.fn() } as unknown as Logger;
    startProcessing(queueFailingWith(new Error('NOSCRIPT'), false), 4, async () => undefined, logger);
    await settle();
    expect(unhandled).toEqual([]);
    expect(logger.error).toHaveBeenCalledWith('queue deliveries stopped processing: NOSCRIPT');
  });
});
