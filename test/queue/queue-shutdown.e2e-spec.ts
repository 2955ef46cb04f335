import { getQueueToken } from '@nestjs/bull';
import { Queue } from 'bull';
import { DELIVERY_QUEUE } from '../../src/delivery/delivery-queue';
import { EXTRACTION_QUEUE } from '../../src/attachments/attachment-extraction.service';
import { OUTBOUND_QUEUE } from '../../src/conversations/outbound/outbound.service';
import { OutboxRelay } from '../../src/events/outbox-relay';
import { QueuesShutdown } from '../../src/queue/queue.module';
import { createTestApp, TestApp } from '../support/app';

/**
 * Shutdown stops every queue's processing together, first (QueuesShutdown), and only then do
 * the modules close their queues one by one: jobs can still be added meanwhile, by requests the
 * HTTP server is finishing.
 */
describe('queues at shutdown', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('before the shutdown hooks, every queue of the process has stopped taking jobs, and jobs can still be added', async () => {
    const queues = [DELIVERY_QUEUE, OUTBOUND_QUEUE, EXTRACTION_QUEUE].map((name) => t.app.get<Queue>(getQueueToken(name)));
    expect(await Promise.all(queues.map((q) => q.isPaused(true)))).toEqual([false, false, false]);

    await t.app.get(QueuesShutdown).beforeApplicationShutdown();

    expect(await Promise.all(queues.map((q) => q.isPaused(true)))).toEqual([true, true, true]);
    const outbound = queues[1];
    const job = await outbound.add('send', { messageId: '00000000-0000-4000-8000-000000000000' }, { delay: 60_000 });
    expect(await job.getState()).toBe('delayed');
    await job.remove();
  });

  it('the background work stops before the modules close the queues it feeds (the outbox relay enqueues deliveries)', async () => {
    const other = await createTestApp();
    const relay = other.app.get(OutboxRelay);
    const queue = other.app.get<Queue>(getQueueToken(DELIVERY_QUEUE));
    const order: string[] = [];
    const stop = relay.stop.bind(relay);
    jest.spyOn(relay, 'stop').mockImplementation(() => {
      order.push('relay stopped');
      return stop();
    });
    const close = queue.close.bind(queue);
    jest.spyOn(queue, 'close').mockImplementation((doNotWaitJobs?: boolean) => {
      order.push('delivery queue closed');
      return close(doNotWaitJobs);
    });
    await other.close();
    expect(order).toEqual(['relay stopped', 'delivery queue closed']);
  });
});
