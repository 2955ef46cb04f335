import { fixtureEvent } from '../fixtures/events';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, publishAll, register } from '../support/delivery';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';

/** Events each endpoint is sent at once: a backlog for both. */
const EVENTS = 200;
/** The failing receiver answers 200 every this many requests, so 100 failures in a row never auto-disable it. */
const OK_EVERY = 25;
/**
 * How long each receiver takes to answer. The fast one's is long enough that more than 10 at once
 * needs only 40 deliveries a second of the worker, and that its latency check (a cut back to the
 * initial limit once the worker-measured latency is twice its baseline and 100 ms above it) is not
 * set off by a busy machine's delays in the worker: with 30 ms answers, CI's two e2e shards at once
 * kept the fast endpoint at 10.
 */
const FAST_ANSWER_MS = 250;
const FAILING_ANSWER_MS = 30;
/** The limit every endpoint starts at (DELIVERY_ENDPOINT_CONCURRENCY's default), the fixed cap before it adapted. */
const INITIAL = 10;

jest.setTimeout(180_000);

/**
 * The per-endpoint limit adapts, as a receiver sees it: two receivers count the requests they
 * hold at once. Both get the same backlog; one answers 200 (after FAST_ANSWER_MS), the other 503
 * (but every 25th, so it is not disabled). The fast one is sent more than the old fixed 10 at once
 * as the limit grows on its answers; the failing one, after its first round of 10, no more than 2
 * at once.
 */
describe('the per-endpoint concurrency adapts to the endpoint', () => {
  let t: DeliveryTestApp;
  let s: Session;
  const fast = new TestReceiver();
  const failing = new TestReceiver();
  /** Per receiver: requests held now, and the count held as each request arrived (itself included). */
  const open = new Map<TestReceiver, number>();
  const openAtArrival = new Map<TestReceiver, number[]>();

  function counting(receiver: TestReceiver, failing: boolean, answerMs: number): void {
    open.set(receiver, 0);
    openAtArrival.set(receiver, []);
    receiver.respond = () => {
      const status = failing && openAtArrival.get(receiver)!.length % OK_EVERY !== 0 ? 503 : 200;
      const now = open.get(receiver)! + 1;
      open.set(receiver, now);
      openAtArrival.get(receiver)!.push(now);
      const until = new Promise<void>((resolve) =>
        setTimeout(() => {
          open.set(receiver, open.get(receiver)! - 1);
          resolve();
        }, answerMs),
      );
      return { status, body: status === 200 ? 'ok' : 'busy', until };
    };
  }

  let fastBase: string;
  let failingBase: string;
  beforeAll(async () => {
    counting(fast, false, FAST_ANSWER_MS);
    counting(failing, true, FAILING_ANSWER_MS);
    [fastBase, failingBase] = await Promise.all([fast.start(), failing.start()]);
    t = await createDeliveryTestApp({
      queueTag: 'adaptive',
      // One attempt each: the retries (an hour away) stay out of the counts.
      env: { DELIVERY_RETRY_SCHEDULE: '1h', DELIVERY_ENDPOINT_CONCURRENCY: String(INITIAL) },
    });
    s = await createSession(t.admin, { tier: 'POWER' });
  });
  afterAll(async () => {
    await closeDeliveryTestApp(t);
    await Promise.all([fast.stop(), failing.stop()]);
  });

  it('a fast endpoint gets more than the initial 10 at once under a backlog; one answering 503 soon gets 1 or 2', async () => {
    await register(t, s.apiKey, { url: `${fastBase}/fast`, events: ['contact.merged'] });
    await register(t, s.apiKey, { url: `${failingBase}/busy`, events: ['contact.merged'] });
    await publishAll(
      t,
      Array.from({ length: EVENTS }, () => fixtureEvent('contact.merged', { orgId: s.orgId, lineId: null })),
    );
    await Promise.all([fast.waitFor(EVENTS, 90_000), failing.waitFor(EVENTS, 90_000)]);

    const fastMost = Math.max(...openAtArrival.get(fast)!);
    const failingSeen = openAtArrival.get(failing)!;
    const failingFirstRound = Math.max(...failingSeen.slice(0, INITIAL));
    const failingLater = Math.max(...failingSeen.slice(EVENTS / 2));
    // Each request once: no retry came within the test (the schedule is an hour).
    expect(fast.requests).toHaveLength(EVENTS);
    expect(failing.requests).toHaveLength(EVENTS);
    expect(fastMost).toBeGreaterThan(INITIAL);
    expect(failingFirstRound).toBeLessThanOrEqual(INITIAL);
    expect(failingLater).toBeLessThanOrEqual(2);
  });
});
