import { DeliveryQueue } from '../../src/delivery/delivery-queue';
import { DeliverySweeper } from '../../src/delivery/delivery-sweeper';
import { DeliveryProcessor } from '../../src/delivery/delivery.processor';
import { fixtureEvent } from '../fixtures/events';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, publish, publishAll, register } from '../support/delivery';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * The hanging endpoint's attempts time out after this long; the healthy endpoint's ten deliveries
 * must all arrive before then. Three seconds, not one: on a machine busy with other suites, ten
 * deliveries once took 1.8 s, which says nothing about isolation (a delivery that waited for a
 * hanging slot would wait for this whole timeout).
 */
const TIMEOUT_MS = 3000;
const CONCURRENCY = 6;
const PER_ENDPOINT = 2;
/** Events for the hanging endpoint: PER_ENDPOINT at a time, each held until the timeout. */
const HANGING_EVENTS = 12;

/**
 * A receiver that hangs until the timeout must not hold back deliveries to others: with six
 * slots in the worker and at most two per endpoint, the hanging endpoint never holds more than
 * two, and a healthy endpoint's events go straight through.
 */
jest.setTimeout(120_000);

describe('failure isolation between endpoints', () => {
  let t: DeliveryTestApp;
  let s: Session;
  const hanging = new TestReceiver();
  const healthy = new TestReceiver();
  let hangingBase: string;
  let healthyBase: string;
  // Requests the hanging receiver holds open; counted until the client gives up at the timeout.
  let open = 0;
  let maxOpen = 0;

  beforeAll(async () => {
    hanging.respond = () => {
      open += 1;
      maxOpen = Math.max(maxOpen, open);
      setTimeout(() => (open -= 1), TIMEOUT_MS - 100);
      return { status: 200, body: 'too late', delayMs: TIMEOUT_MS + 500 };
    };
    [hangingBase, healthyBase] = await Promise.all([hanging.start(), healthy.start()]);
    t = await createDeliveryTestApp({
      queueTag: 'isolation',
      env: {
        DELIVERY_RETRY_SCHEDULE: '1h',
        DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
        DELIVERY_CONCURRENCY: String(CONCURRENCY),
        DELIVERY_ENDPOINT_CONCURRENCY: String(PER_ENDPOINT),
        // The limit fixed (it would adapt otherwise): these tests are about parking and the share;
        // test/delivery/endpoint-concurrency.e2e-spec.ts shows the limit adapting.
        DELIVERY_ENDPOINT_CONCURRENCY_MIN: String(PER_ENDPOINT),
        DELIVERY_ENDPOINT_CONCURRENCY_MAX: String(PER_ENDPOINT),
        // A sweep that keeps finding the postponed deliveries overdue (see the second test).
        DELIVERY_SWEEP_INTERVAL_MS: '100',
        DELIVERY_SWEEP_GRACE_MS: '500',
      },
    });
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await Promise.all([hanging.stop(), healthy.stop()]);
  });

  /** Waits until the worker's delivery sweep has run `count` more times. */
  async function afterSweeps(count: number): Promise<void> {
    const sweeper = t.app.get(DeliverySweeper);
    const sweep = sweeper.sweep.bind(sweeper);
    let swept = 0;
    const spy = jest.spyOn(sweeper, 'sweep').mockImplementation(async () => {
      const found = await sweep();
      swept += 1;
      return found;
    });
    try {
      await waitUntil(
        () => swept >= count,
        () => `${count} delivery sweeps (${swept} so far)`,
      );
    } finally {
      spy.mockRestore();
    }
  }

  it('a hanging endpoint holds at most its share of slots; a healthy one is served at once', async () => {
    await register(t, s.apiKey, { url: `${hangingBase}/hang`, events: ['contact.merged'] });
    await register(t, s.apiKey, { url: `${healthyBase}/ok`, events: ['message.sent'] });
    const emailLine = s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.id;

    await publishAll(
      t,
      Array.from({ length: HANGING_EVENTS }, () => fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null })),
    );
    await waitUntil(() => hanging.requests.length >= PER_ENDPOINT, 'the hanging receiver to be busy', { timeoutMs: 10_000, intervalMs: 10 });

    const started = Date.now();
    for (let i = 0; i < 10; i++) await publish(t, fixtureEvent('message.sent', { orgId: s.orgId, lineId: emailLine }));
    await healthy.waitFor(10, 10_000);
    const took = Math.max(...healthy.requests.map((r) => r.receivedAt)) - started;

    expect(took).toBeLessThan(TIMEOUT_MS);
    expect(maxOpen).toBeLessThanOrEqual(PER_ENDPOINT);
    // The hanging endpoint is not starved either: once its first attempts time out, the next go.
    await waitUntil(() => hanging.requests.length >= 2 * PER_ENDPOINT, 'the hanging endpoint to get further attempts', { timeoutMs: 10_000, intervalMs: 50 });
  });

  it('postponed jobs do not multiply while the sweep keeps re-adding overdue deliveries', async () => {
    // The deliveries to the hanging endpoint stay overdue, so every sweep could add their attempt
    // again; each such job meets the alternating postponement ids and is dropped. Five sweeps
    // that multiplied jobs would leave far more than the bound.
    await afterSweeps(5);
    const counts = await t.app.get(DeliveryQueue).queue.getJobCounts();
    const owed = counts.waiting + counts.delayed + counts.active;
    expect(owed).toBeLessThanOrEqual(2 * HANGING_EVENTS + PER_ENDPOINT);
  });

  it('attempts waiting for the hanging endpoint are parked in the worker, not put back in Redis, and each runs once', async () => {
    // The deliveries of the first test: two at a time, each hangs until the timeout.
    const processor = t.app.get(DeliveryProcessor);
    // The old way re-added each waiting attempt as a delayed job with a :pa/:pb id; the only
    // delayed jobs now are retries (an hour away) of the attempts that timed out.
    const delayed = await t.app.get(DeliveryQueue).queue.getDelayed();
    expect(delayed.map((job) => String(job.id)).filter((id) => /:p[ab]$/.test(id))).toEqual([]);
    expect(processor.parkedCount()).toBeGreaterThan(0);
    // The sweep (every 100 ms, grace 500 ms) finds the parked deliveries overdue, yet leaves them
    // to this worker: over five sweeps, no first attempt of a parked one is queued again.
    const queue = t.app.get(DeliveryQueue);
    const requeued: string[] = [];
    const spy = jest.spyOn(queue, 'enqueue').mockImplementation(async function (this: DeliveryQueue, jobs) {
      for (const job of jobs) if (job.attempt === 1 && processor.isParked(job.deliveryId, 1)) requeued.push(job.deliveryId);
      return DeliveryQueue.prototype.enqueue.call(this, jobs);
    });
    await afterSweeps(5);
    spy.mockRestore();
    expect(requeued).toEqual([]);
    await waitUntil(
      async () =>
        (
          await t.db.query(
            `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE e.url LIKE '%/hang' AND d.attempt_count = 1 AND d.status = 'retrying'`,
          )
        )[0].n === HANGING_EVENTS,
      'every delivery to the hanging endpoint to have had its attempt',
      // Six rounds of two attempts, each held for TIMEOUT_MS.
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const [{ attempts, most }] = await t.db.query(
      `SELECT count(*)::int AS attempts, max(n)::int AS most FROM (
         SELECT count(*) AS n FROM webhook_delivery_attempt_log a JOIN webhook_deliveries d ON d.id = a.delivery_id
           JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.url LIKE '%/hang' GROUP BY a.delivery_id) per_delivery`,
    );
    expect({ attempts, most }).toEqual({ attempts: HANGING_EVENTS, most: 1 });
    expect(processor.parkedCount()).toBe(0);
  });
});
