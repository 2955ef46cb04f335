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

/** /ready's outbox check: a stall is events waiting past the bound while this relay has not advanced as long. */
describe('the outbox readiness check', () => {
  function relayWith(oldestAgeSeconds: number | null) {
    const checks = new ReadinessChecks();
    const outbox = { oldestPendingAgeSeconds: async () => oldestAgeSeconds } as unknown as OutboxRepository;
    const relay = new OutboxRelay(
      {} as DataSource,
      outbox,
      { outbox: { pollIntervalMs: 60_000, readyStallSeconds: 60 } } as AppConfig,
      new ServiceMetrics(),
      new BackgroundWork(),
      checks,
    );
    relay.onModuleInit();
    const [check] = checks.forRole('worker');
    const state = relay as unknown as { running: boolean; lastAdvanceAt: number; lastFailure?: string };
    return { run: () => check.run({ query: async () => [] }), state, apiChecks: checks.forRole('api') };
  }

  it('is registered for the relaying roles only', () => {
    expect(relayWith(null).apiChecks).toEqual([]);
  });

  it('passes with nothing waiting, or nothing waiting past the bound, even with the relay stopped', async () => {
    await expect(relayWith(null).run()).resolves.toBeUndefined();
    await expect(relayWith(59).run()).resolves.toBeUndefined();
  });

  it('passes while the relay advanced within the bound, though events waited longer (a backlog, not a stall)', async () => {
    const { run, state } = relayWith(600);
    state.running = true;
    state.lastAdvanceAt = Date.now() - 5_000;
    await expect(run()).resolves.toBeUndefined();
  });

  it('fails naming the stall and the last failure when the relay has not advanced past the bound', async () => {
    const { run, state } = relayWith(600);
    state.running = true;
    state.lastAdvanceAt = Date.now() - 90_000;
    state.lastFailure = 'Connection is closed.';
    await expect(run()).rejects.toThrow(
      'the outbox relay has not advanced for 90 s while events wait (the oldest for 600 s; READY_OUTBOX_STALL_SECONDS is 60); its last try failed: Connection is closed.',
    );
  });

  it('fails naming a stopped relay', async () => {
    await expect(relayWith(61).run()).rejects.toThrow('the outbox relay of this process is stopped while events wait (the oldest for 61 s');
  });
});
