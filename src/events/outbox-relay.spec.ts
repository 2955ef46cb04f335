import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { ReadinessChecks } from '../health/readiness-checks';
import { BackgroundWork } from '../queue/background-work';
import { DRAIN_GAP_MS, OutboxRelay } from './outbox-relay';
import { OutboxRepository } from './outbox.repository';

/** Wake-ups under load: drains are coalesced and start at least DRAIN_GAP_MS apart. */
describe('OutboxRelay.wake', () => {
  function relayWithDrains() {
    const relay = new OutboxRelay(
      {} as DataSource,
      {} as OutboxRepository,
      { outbox: { pollIntervalMs: 60_000 } } as AppConfig,
      new ServiceMetrics(),
      new BackgroundWork(),
      new ReadinessChecks(),
    );
    const starts: number[] = [];
    let finish: () => void = () => undefined;
    relay.drain = () => {
      starts.push(performance.now());
      return new Promise<void>((resolve) => (finish = resolve));
    };
    (relay as unknown as { running: boolean }).running = true;
    return { relay, starts, finish: () => finish() };
  }
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('a burst of wake-ups while a drain runs gives one more drain, not one each, DRAIN_GAP_MS after the first began', async () => {
    const { relay, starts, finish } = relayWithDrains();
    relay.wake();
    for (let i = 0; i < 50; i += 1) relay.wake();
    expect(starts).toHaveLength(1);
    finish();
    await sleep(DRAIN_GAP_MS * 3);
    expect(starts).toHaveLength(2);
    expect(starts[1] - starts[0]).toBeGreaterThanOrEqual(DRAIN_GAP_MS - 1);
    finish();
    await sleep(DRAIN_GAP_MS * 3);
    expect(starts).toHaveLength(2); // nothing asked for a third
    await relay.stop();
  });

  it('a wake-up after a quiet spell drains at once', async () => {
    const { relay, starts, finish } = relayWithDrains();
    relay.wake();
    finish();
    await sleep(DRAIN_GAP_MS * 2);
    relay.wake();
    expect(starts).toHaveLength(2);
    finish();
    await relay.stop();
  });
});
