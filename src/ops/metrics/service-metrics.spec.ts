import { Logger } from '@nestjs/common';
import { ServiceMetrics } from './service-metrics';

/** A scrape always answers: a collector that fails or hangs leaves its gauges as they were. */
describe('ServiceMetrics.exposition', () => {
  beforeEach(() => jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined));
  afterEach(() => jest.restoreAllMocks());

  it('keeps the last values of a collector that fails, and runs the others', async () => {
    const metrics = new ServiceMetrics();
    let fail = false;
    metrics.addCollector('endpoints', async () => {
      if (fail) throw new Error('database down');
      metrics.endpointsCounted({ active: 3 });
    });
    metrics.addCollector('outbox', async () => metrics.outboxMeasured(2, 1.5));
    expect(await metrics.exposition()).toContain('webhook_endpoints{status="active"} 3');
    fail = true;
    const text = await metrics.exposition();
    expect(text).toContain('webhook_endpoints{status="active"} 3');
    expect(text).toContain('webhook_endpoints{status="disabled"} 0');
    expect(text).toContain('outbox_pending_events 2');
    expect(Logger.prototype.warn).toHaveBeenCalledWith('metrics collector "endpoints" failed; its gauges keep their last values: database down');
  });

  it('answers after 5 s when a collector hangs', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'performance', 'hrtime'] });
    try {
      const metrics = new ServiceMetrics();
      metrics.addCollector('queues', () => new Promise(() => undefined));
      let answered = false;
      const scrape = metrics.exposition().then((text) => ((answered = true), text));
      await jest.advanceTimersByTimeAsync(4_900);
      expect(answered).toBe(false);
      await jest.advanceTimersByTimeAsync(200);
      expect(await scrape).toContain('# TYPE queue_jobs gauge');
      expect(Logger.prototype.warn).toHaveBeenCalledWith('metrics collector "queues" failed; its gauges keep their last values: no answer in 5000 ms');
    } finally {
      jest.useRealTimers();
    }
  });
});
