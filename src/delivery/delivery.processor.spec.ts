import { Job } from 'bull';
import { AppConfig } from '../config/app-config';
import { BackgroundWork } from '../queue/background-work';
import { Answer, DeliveryAttemptsService } from './delivery-attempts.service';
import { AttemptJob, DeliveryJob, DeliveryQueue } from './delivery-queue';
import { DeliveryProcessor } from './delivery.processor';

/**
 * The processor's slot keeping, with Bull played by a loop of CONCURRENCY runners and attempts
 * that hang until released (the database and HTTP parts are covered end to end elsewhere).
 */
describe('DeliveryProcessor parking', () => {
  const CONCURRENCY = 4;
  const PER_ENDPOINT = 2;

  const configAs = (processRole: AppConfig['processRole']) =>
    ({ processRole, delivery: { concurrency: CONCURRENCY, endpointConcurrency: PER_ENDPOINT } }) as AppConfig;

  function setup() {
    let open = 0;
    let mostOpen = 0;
    const started: string[] = [];
    const release: Array<() => void> = [];
    const attempts = {
      attempt: (deliveryId: string) => {
        open += 1;
        mostOpen = Math.max(mostOpen, open);
        started.push(deliveryId);
        return new Promise<'succeeded'>((resolve) =>
          release.push(() => {
            open -= 1;
            resolve('succeeded');
          }),
        );
      },
      forgetFirstAttempts: () => undefined,
    } as unknown as DeliveryAttemptsService;
    const requeued: unknown[] = [];
    const queue = { enqueue: async (jobs: unknown[]) => void requeued.push(...jobs) } as unknown as DeliveryQueue;
    const processor = new DeliveryProcessor(queue, attempts, configAs('worker'), new BackgroundWork());
    /** Bull: CONCURRENCY runners taking jobs in order, each busy until its run() settles. */
    const bull = async (jobs: AttemptJob[]) => {
      const pending = [...jobs];
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let data = pending.shift(); data; data = pending.shift()) {
            await processor.run({ id: `${data.deliveryId}:${data.attempt}`, data } as Job<AttemptJob>);
          }
        }),
      );
    };
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const runBatch = (id: string, batch: Array<{ deliveryId: string; endpointId: string }>) =>
      processor.run({ id, data: { batch: batch.map((b) => ({ ...b, attempt: 1 })) } } as Job<DeliveryJob>);
    return { processor, attempts, queue, bull, runBatch, release, started, requeued, turn, stats: () => ({ open, mostOpen }) };
  }

  it("takes fan-out's first attempts with no job up to its bound of waiting ones, the batch's first; where no attempts run, or stopping, it takes none", async () => {
    const { processor, attempts, queue, started, release, turn } = setup();
    const batch = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({ deliveryId: `d${from + i}`, endpointId: `e${from + i}`, attempt: 1 }));
    expect(processor.handOverHere(batch(0, 6))).toBe(6);
    await turn();
    expect(started).toEqual(['d0', 'd1', 'd2', 'd3']); // CONCURRENCY slots; the rest wait here
    expect(processor.waitingCount()).toBe(2);
    // Up to ten times DELIVERY_CONCURRENCY waiting (40): of 40 more, the first 38 are taken, the rest go to Redis; at the bound none is.
    expect(processor.handOverHere(batch(6, 40))).toBe(38);
    expect(processor.handOverHere(batch(46, 1))).toBe(0);
    expect(processor.waitingCount()).toBe(40);
    release.splice(0).forEach((r) => r());
    await turn();
    expect(started).toEqual(['d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6', 'd7']);
    expect(processor.takesHandOvers()).toBe(true);

    const api = new DeliveryProcessor(queue, attempts, configAs('api'), new BackgroundWork());
    expect(api.takesHandOvers()).toBe(false);
    expect(api.handOverHere(batch(100, 1))).toBe(0);
    const stopped = processor.beforeApplicationShutdown();
    expect(processor.takesHandOvers()).toBe(false);
    expect(processor.handOverHere(batch(200, 1))).toBe(0);
    expect(processor.waitingCount()).toBe(0); // dropped: due in the database, the sweep re-drives them
    release.splice(0).forEach((r) => r());
    await stopped;
  });

  it("parks what is over an endpoint's share, frees the Bull slot, and runs each parked attempt once, in order", async () => {
    const { processor, bull, release, started, requeued, turn } = setup();
    const jobs = Array.from({ length: 5 }, (_, i) => ({ deliveryId: `d${i}`, endpointId: 'e1', attempt: 1 }));
    const bullDone = bull(jobs);
    await turn();
    expect(started).toEqual(['d0', 'd1']);
    expect(processor.parkedCount()).toBe(3);
    expect(processor.isParked('d2', 1)).toBe(true);
    while (started.length < 5 || release.length > 0) {
      release.shift()?.();
      await turn();
    }
    await bullDone;
    expect(started).toEqual(['d0', 'd1', 'd2', 'd3', 'd4']);
    expect(processor.parkedCount()).toBe(0);
    expect(requeued).toEqual([]); // nothing went back to Redis
  });

  it('never has more than twice DELIVERY_CONCURRENCY attempts in flight, however many endpoints have parked ones', async () => {
    const { bull, release, started, turn, stats } = setup();
    // 10 endpoints × 5 attempts, queued endpoint by endpoint: each endpoint alone may have 2 in
    // flight, so 20 in all if parked attempts started whenever their endpoint had room.
    const jobs = Array.from({ length: 50 }, (_, i) => ({ deliveryId: `d${i}`, endpointId: `e${Math.floor(i / 5)}`, attempt: 1 }));
    const bullDone = bull(jobs);
    for (let i = 0; i < 500 && (started.length < 50 || release.length > 0); i += 1) {
      await turn();
      release.shift()?.();
    }
    await bullDone;
    expect(started.sort()).toEqual(jobs.map((j) => j.deliveryId).sort());
    expect(stats().mostOpen).toBeLessThanOrEqual(2 * CONCURRENCY);
  });

  it('a batch job completes once its attempts have started or been parked, however long they run, and takes free slots only', async () => {
    const { processor, runBatch, release, started, turn, stats } = setup();
    // 6 attempts: 3 to e1 (its share is 2), 3 to e2..e4. CONCURRENCY is 4.
    const batch = [
      { deliveryId: 'b0', endpointId: 'e1' },
      { deliveryId: 'b1', endpointId: 'e1' },
      { deliveryId: 'b2', endpointId: 'e1' },
      { deliveryId: 'b3', endpointId: 'e2' },
      { deliveryId: 'b4', endpointId: 'e3' },
      { deliveryId: 'b5', endpointId: 'e4' },
    ];
    let jobDone = false;
    const job = runBatch('b:b0:1', batch).then(() => (jobDone = true));
    await turn();
    // b2 is parked (e1 has its share), b0, b1, b3, b4 take the 4 slots, b5 waits in the job.
    expect(started).toEqual(['b0', 'b1', 'b3', 'b4']);
    expect(processor.isParked('b2', 1)).toBe(true);
    expect(jobDone).toBe(false);
    release.splice(2, 1)[0](); // b3 ends: b5 takes its slot, and the job is done though b0, b1, b4 and b5 still run
    await turn();
    expect(started).toEqual(['b0', 'b1', 'b3', 'b4', 'b5']);
    await job;
    expect(jobDone).toBe(true);
    while (started.length < 6 || release.length > 0) {
      release.shift()?.();
      await turn();
    }
    expect(started.sort()).toEqual(batch.map((b) => b.deliveryId).sort());
    expect(stats().mostOpen).toBeLessThanOrEqual(4);
  });

  it("an answered attempt frees its endpoint's slot before its outcome is recorded; at most DELIVERY_CONCURRENCY outcomes wait for their record", async () => {
    const started: string[] = [];
    const answer = new Map<string, () => void>();
    const record = new Map<string, () => void>();
    const attempts = {
      attempt: (deliveryId: string, _attempt: number, onAnswered?: (answer: Answer) => void) => {
        started.push(deliveryId);
        return new Promise<'succeeded'>((resolve) => {
          answer.set(deliveryId, () => onAnswered?.({ statusCode: 200, durationMs: 1 }));
          record.set(deliveryId, () => resolve('succeeded'));
        });
      },
      forgetFirstAttempts: () => undefined,
    } as unknown as DeliveryAttemptsService;
    const queue = { enqueue: async () => undefined } as unknown as DeliveryQueue;
    const processor = new DeliveryProcessor(queue, attempts, configAs('worker'), new BackgroundWork());
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const batch = (ids: string[], endpointOf: (i: number) => string) =>
      processor.run({
        id: `b:${ids[0]}:1`,
        data: { batch: ids.map((deliveryId, i) => ({ deliveryId, endpointId: endpointOf(i), attempt: 1 })) },
      } as Job<DeliveryJob>);

    void batch(['a0', 'a1', 'a2', 'a3'], () => 'e1'); // e1's share is 2: a2 and a3 are parked
    await turn();
    expect(started).toEqual(['a0', 'a1']);
    answer.get('a0')!(); // answered, not yet recorded: a2 goes out
    await turn();
    expect(started).toEqual(['a0', 'a1', 'a2']);
    answer.get('a1')!(); // one request in flight, but e1 has its share (2) of outcomes waiting: a3 waits
    await turn();
    expect(started).toEqual(['a0', 'a1', 'a2']);
    record.get('a0')!();
    await turn();
    expect(started).toEqual(['a0', 'a1', 'a2', 'a3']);
    for (const id of ['a2', 'a3']) answer.get(id)!();
    for (const id of ['a1', 'a2', 'a3']) record.get(id)!();
    await turn();

    // In all: 4 requests in flight (CONCURRENCY), and no new attempt while 4 outcomes wait.
    const cs = Array.from({ length: 8 }, (_, i) => `c${i}`);
    void batch(cs, (i) => `f${i}`);
    await turn();
    expect(started.slice(4)).toEqual(['c0', 'c1', 'c2', 'c3']);
    for (const id of ['c0', 'c1', 'c2']) answer.get(id)!(); // each answer frees a request slot: c4, c5, c6 go out
    await turn();
    expect(started.slice(4)).toEqual(cs.slice(0, 7));
    answer.get('c3')!(); // a request slot free, but 4 outcomes now wait for their record: c7 waits
    await turn();
    expect(started.slice(4)).toEqual(cs.slice(0, 7));
    record.get('c0')!();
    await turn();
    expect(started.slice(4)).toEqual(cs);
    for (const id of ['c4', 'c5', 'c6', 'c7']) answer.get(id)!();
    for (const id of cs.slice(1)) record.get(id)!();
    await processor.beforeApplicationShutdown();
  });

  it('a batch job handed in at shutdown starts nothing (the sweep re-drives its rows)', async () => {
    const { processor, runBatch, started, release, turn } = setup();
    const first = runBatch(
      'b:x0:1',
      [1, 2, 3, 4, 5, 6].map((i) => ({ deliveryId: `x${i}`, endpointId: `e${i}` })),
    );
    await turn();
    expect(started).toHaveLength(4);
    const stopped = processor.beforeApplicationShutdown();
    await first; // the two that waited for a slot are dropped, not started
    await runBatch('b:y0:1', [{ deliveryId: 'y0', endpointId: 'e9' }]);
    release.splice(0).forEach((r) => r());
    await stopped;
    expect(started).toHaveLength(4);
  });

  it('an attempt postponed behind a full parking line waits about as long as the line takes to drain, not a second', async () => {
    const { processor, bull, release, requeued, turn } = setup();
    // The endpoint's pace: two attempts end here about 20 ms apart.
    void bull([1, 2, 3].map((i) => ({ deliveryId: `p${i}`, endpointId: 'slow', attempt: 1 })));
    await turn();
    release.shift()!();
    await new Promise((r) => setTimeout(r, 20));
    release.shift()!();
    await turn();
    // p3 and q0 in flight, then a full line of 10,000, then one more: postponed to Redis.
    const jobs = Array.from({ length: 10_002 }, (_, i) => ({ deliveryId: `q${i}`, endpointId: 'slow', attempt: 1 }));
    void bull(jobs);
    for (let i = 0; i < 100 && requeued.length === 0; i += 1) await turn();
    expect(processor.parkedCount()).toBe(10_000);
    expect(requeued).toHaveLength(1);
    // 10,000 ahead at ~20 ms each is far past the cap: 30 s, plus up to a tenth more at random.
    const { delayMs } = requeued[0] as { delayMs: number };
    expect(delayMs).toBeGreaterThanOrEqual(30_000);
    expect(delayMs).toBeLessThanOrEqual(33_000);
    release.splice(0).forEach((r) => r());
    await processor.beforeApplicationShutdown();
  });
});
