import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Job } from 'bull';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { AttemptOutcome, DeliveryAttemptsService } from './delivery-attempts.service';
import { AttemptBatchJob, DeliveryJob, DeliveryQueue } from './delivery-queue';
import { answerSignal, EndpointConcurrency } from './endpoint-concurrency';

/**
 * How long an attempt waits in Redis when its endpoint already has its share in flight and its
 * parking line is full: briefly at first, doubling up to a second; or, once the endpoint's pace
 * is known here, about as long as the attempts ahead of it will take, up to 30 s. Coming
 * back every second while a deep line drains meant thousands of Redis adds a second for one
 * endpoint (bench scenario 6, a backlog of 20,000 for one endpoint: 437 deliveries/s).
 */
const FIRST_POSTPONE_MS = 20;
const MAX_POSTPONE_MS = 1000;
const MAX_LINE_WAIT_MS = 30_000;

/**
 * Most attempts parked in memory, per endpoint and in all (a parked attempt is two ids and a
 * number, well under 200 bytes: 50,000 are under 10 MB); beyond, they go back to Redis for a moment.
 */
const PARK_LIMIT_PER_ENDPOINT = 10_000;
const PARK_LIMIT_TOTAL = 50_000;

/**
 * Most attempts waiting for a slot, in multiples of DELIVERY_CONCURRENCY, beyond which fan-out's
 * first attempts go to Redis in batch jobs instead of being handed over here (handOverHere).
 */
const HAND_OVER_WAITING_FACTOR = 10;

interface Parked {
  deliveryId: string;
  attempt: number;
}

/** An attempt of a batch job waiting for one of the worker's DELIVERY_CONCURRENCY slots. */
interface Waiting extends Parked {
  endpointId: string;
  /** Called once the attempt has started or been parked (or dropped at shutdown). */
  handedOver: () => void;
}

/**
 * Runs delivery attempts from the queue in `worker` and `all` processes (an `api` process only
 * enqueues). The job completes with the attempt's outcome whatever it was: the database keeps
 * the attempt, and the next try is its own delayed job (a thrown error would only make Bull
 * capture a stack trace for a job that is removed at once).
 *
 * Isolation: one endpoint may have at most its limit of requests in flight from this worker, so a
 * receiver that hangs until the timeout cannot starve the others. The limit adapts to how the
 * endpoint answers (EndpointConcurrency: it starts at DELIVERY_ENDPOINT_CONCURRENCY, grows while
 * the endpoint answers 2xx without slowing down, and is cut on timeouts, errors, 5xx and 429). A job beyond
 * that is parked: the Bull job completes at once (freeing its slot) and the attempt waits in the
 * endpoint's line in memory, to start the moment one of the endpoint's attempts ends. Parking is
 * not durable and need not be: the delivery row stays due in the database, so if this worker
 * stops, the sweep enqueues the attempt again. Only past the park limits does a job go back to Redis
 * (a delayed job with another id, see below), which is how every such job was handled before:
 * re-adding hundreds of jobs a second for one hanging endpoint cost the healthy ones a third of
 * the worker (bench scenario 2).
 *
 * A batch job (first attempts of a fan-out) hands each of its attempts over the same way, and
 * completes once every one has started or been parked, not when they end: an endpoint that hangs
 * holds only its own attempts, never the job and the others' slots. An attempt finds a free slot
 * among the worker's DELIVERY_CONCURRENCY or waits for one in the job; a job whose attempts wait
 * holds its Bull slot, which is what keeps the next jobs in Redis meanwhile. If the worker dies,
 * Bull runs a job that had not completed again (started attempts find their claim taken and do
 * nothing), and the sweep re-drives what had started or was parked.
 */
@Injectable()
export class DeliveryProcessor implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger(DeliveryProcessor.name);
  private readonly inFlight = new Map<string, number>();
  private readonly parked = new Map<string, Parked[]>();
  /** `<deliveryId>:<attempt>` of every parked attempt: a swept duplicate is not parked twice. */
  private readonly parkedKeys = new Set<string>();
  /** Attempts started outside a Bull job's own run (parked ones, a batch's): awaited at shutdown. */
  private readonly detachedRuns = new Set<Promise<unknown>>();
  /** Attempts of batch jobs waiting for a slot, first come first served. */
  private readonly waiting: Waiting[] = [];
  /** Per endpoint with attempts in flight or parked: when one last ended, and the average time between two ending (ms, weighted to the recent). */
  private readonly pace = new Map<string, { lastEndAt: number; intervalMs?: number; postponed: number }>();
  /** Attempts in flight in this worker, Bull's and parked ones alike, until their endpoint has answered. */
  private inFlightTotal = 0;
  /** Attempts answered whose outcome is being recorded, in all and per endpoint. */
  private recordingTotal = 0;
  private readonly recording = new Map<string, number>();
  private stopping = false;
  /** Whether this process's role runs delivery attempts. */
  private readonly runsAttempts: boolean;
  /** Each endpoint's limit of requests in flight from this worker. */
  readonly limits: EndpointConcurrency;

  constructor(
    private readonly queue: DeliveryQueue,
    private readonly attempts: DeliveryAttemptsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly work: BackgroundWork,
  ) {
    this.runsAttempts = WORKER_ROLES.includes(config.processRole);
    const { endpointConcurrency, endpointConcurrencyMin, endpointConcurrencyMax, concurrency } = config.delivery;
    this.limits = new EndpointConcurrency({
      initial: endpointConcurrency,
      min: endpointConcurrencyMin ?? endpointConcurrency,
      // A starting limit set above the ceiling raises the ceiling (it was a fixed limit before); the worker's own limit caps both.
      max: Math.min(concurrency, Math.max(endpointConcurrencyMax ?? endpointConcurrency, endpointConcurrency)),
    });
  }

  onModuleInit(): void {
    this.work.queue({
      name: 'delivery attempts',
      roles: WORKER_ROLES,
      queue: this.queue.queue,
      concurrency: this.config.delivery.concurrency,
      setting: 'DELIVERY_CONCURRENCY',
      logger: this.logger,
      run: (job) => this.run(job),
    });
  }

  /** Parked attempts are dropped (the sweep re-drives them); those already started finish. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.attempts.forgetFirstAttempts();
    this.parked.clear();
    this.parkedKeys.clear();
    for (const item of this.waiting.splice(0)) item.handedOver(); // due in the database: the sweep re-drives them
    await Promise.allSettled([...this.detachedRuns]);
  }

  /** Attempts parked in memory, for tests and diagnostics. */
  parkedCount(): number {
    return this.parkedKeys.size;
  }

  /** Attempts handed over (by a batch job or by fan-out here) and waiting for a slot, for tests and diagnostics. */
  waitingCount(): number {
    return this.waiting.length;
  }

  /** Whether this attempt waits parked here (the sweep does not queue it again). */
  isParked(deliveryId: string, attempt: number): boolean {
    return this.parkedKeys.has(`${deliveryId}:${attempt}`);
  }

  /** Whether fan-out's first attempts may be handed over here (handOverHere): this process runs attempts and is not stopping. */
  takesHandOvers(): boolean {
    return this.runsAttempts && !this.stopping;
  }

  /**
   * First attempts that fan-out made in this process, handed over as a batch job's are but with no
   * job: no round trips to Redis, and the attempts start the moment fan-out has committed. Takes
   * the batch's first items up to HAND_OVER_WAITING_FACTOR × DELIVERY_CONCURRENCY attempts waiting
   * for a slot, and answers how many it took: none where this process runs no attempts
   * (PROCESS_ROLE=api) or while it stops. The caller puts the rest in batch jobs
   * (DeliveryQueue.enqueueBatches), which any worker may take. A whole batch past the bound went to
   * Redis before, and its attempts were claimed the full way: a third of scenario 1's
   * (docs/PERFORMANCE.md, change 31). What a worker held this way and did not start before it
   * died is due in the database, and the sweep re-drives it, as it does a lost batch job's.
   */
  handOverHere(batch: AttemptBatchJob['batch']): number {
    if (!this.takesHandOvers()) return 0;
    const taken = batch.slice(0, Math.max(0, HAND_OVER_WAITING_FACTOR * this.config.delivery.concurrency - this.waiting.length));
    for (const item of taken) this.waiting.push({ ...item, handedOver: () => undefined });
    this.startWaiting();
    return taken.length;
  }

  async run(job: Job<DeliveryJob>): Promise<AttemptOutcome | 'parked' | 'postponed' | 'handed over'> {
    if ('batch' in job.data) {
      await this.handOverBatch(job.data);
      return 'handed over';
    }
    const { deliveryId, endpointId, attempt, postponed = 0 } = job.data;
    if (endpointId && postponed > 0) this.postponedReturned(endpointId);
    if (!endpointId || !this.full(endpointId)) return this.runAttempt(endpointId, deliveryId, attempt);
    return this.parkOrPostpone(endpointId, { deliveryId, attempt }, postponed, String(job.id));
  }

  private async parkOrPostpone(endpointId: string, item: Parked, postponed: number, jobId: string): Promise<'parked' | 'postponed'> {
    if (this.park(endpointId, item)) return 'parked';
    const delayMs = this.postponeDelay(endpointId, postponed);
    // Two alternating ids per attempt (…:pa, …:pb): a second chain started for the same attempt
    // (the sweep re-adding an overdue delivery) meets the first one's id and is dropped, so
    // postponed jobs never multiply, while a job can always hand over to the other id.
    const jobIdSuffix = jobId.endsWith(':pa') ? ':pb' : ':pa';
    await this.queue.enqueue([{ ...item, endpointId, postponed: postponed + 1, delayMs, jobIdSuffix }]);
    return 'postponed';
  }

  /**
   * See MAX_LINE_WAIT_MS. With the pace known, the attempt comes back about when the attempts
   * ahead of it (parked, and postponed before it) will have started, so returns arrive at the
   * pace the line drains; a tenth more at random spreads them. Otherwise the doubling backoff,
   * up to as much again at random.
   */
  private postponeDelay(endpointId: string, postponed: number): number {
    const backoff = Math.min(MAX_POSTPONE_MS, FIRST_POSTPONE_MS * 2 ** postponed);
    const pace = this.pace.get(endpointId);
    if (pace?.intervalMs === undefined) return backoff + Math.floor(Math.random() * backoff);
    const ahead = ((this.parked.get(endpointId)?.length ?? 0) + pace.postponed) * pace.intervalMs;
    pace.postponed += 1;
    const delay = Math.max(FIRST_POSTPONE_MS, Math.min(MAX_LINE_WAIT_MS, ahead));
    return Math.round(delay * (1 + Math.random() / 10));
  }

  /** A postponed attempt came back: one fewer ahead of those postponed after it. */
  private postponedReturned(endpointId: string): void {
    const pace = this.pace.get(endpointId);
    if (pace && pace.postponed > 0) pace.postponed -= 1;
  }

  /** Resolves once each attempt of the batch has started, been parked or been postponed. */
  private async handOverBatch({ batch }: AttemptBatchJob): Promise<void> {
    if (this.stopping) return;
    const handedOver = batch.map((item) => new Promise<void>((resolve) => this.waiting.push({ ...item, handedOver: resolve })));
    this.startWaiting();
    await Promise.all(handedOver);
  }

  /**
   * Starts waiting batch attempts while the worker has a free slot; one whose endpoint has its
   * share in flight takes no slot and is parked (or postponed) like a single job.
   */
  private startWaiting(): void {
    while (this.waiting.length > 0 && this.hasRoom()) {
      const { deliveryId, endpointId, attempt, handedOver } = this.waiting.shift()!;
      if (this.full(endpointId)) {
        void this.parkOrPostpone(endpointId, { deliveryId, attempt }, 0, `${deliveryId}:${attempt}`)
          // Not lost: the delivery row is still due, and the sweep enqueues it again.
          .catch((error: unknown) => this.logger.warn(`could not postpone the attempt of ${deliveryId}: ${(error as Error).message}`))
          .finally(handedOver);
        continue;
      }
      this.detach(deliveryId, this.runAttempt(endpointId, deliveryId, attempt));
      handedOver();
    }
  }

  /** Keeps an attempt that runs outside its Bull job's run for shutdown to await; a failure is logged. */
  private detach(deliveryId: string, attempt: Promise<unknown>): void {
    const run = attempt.catch((error: unknown) =>
      // Not lost: the delivery row is still due, and the sweep enqueues it again.
      this.logger.warn(`attempt of ${deliveryId} failed to run: ${(error as Error).message}`),
    );
    this.detachedRuns.add(run);
    void run.finally(() => this.detachedRuns.delete(run));
  }

  /** Whether the endpoint has its limit of requests in flight, or of outcomes waiting for their record. */
  private full(endpointId: string): boolean {
    const share = this.limits.limit(endpointId);
    return (this.inFlight.get(endpointId) ?? 0) >= share || (this.recording.get(endpointId) ?? 0) >= share;
  }

  /** True when the attempt now waits in the endpoint's line (or already did). */
  private park(endpointId: string, item: Parked): boolean {
    const key = `${item.deliveryId}:${item.attempt}`;
    if (this.parkedKeys.has(key)) return true;
    const line = this.parked.get(endpointId) ?? [];
    if (line.length >= PARK_LIMIT_PER_ENDPOINT || this.parkedKeys.size >= PARK_LIMIT_TOTAL) return false;
    line.push(item);
    this.parked.set(endpointId, line);
    this.parkedKeys.add(key);
    return true;
  }

  /**
   * An attempt holds its endpoint's slot and one of the worker's until the endpoint has answered
   * (the limits are on requests in flight); its outcome is then recorded in the next batch while
   * other attempts go out. Outcomes waiting for their record have the same limits, per endpoint
   * and in all, so a slow database holds new attempts back instead of piling outcomes up in
   * memory, and an endpoint whose failures are slow to record cannot take the others' turn.
   */
  private async runAttempt(endpointId: string | undefined, deliveryId: string, attempt: number): Promise<AttemptOutcome> {
    if (endpointId) adjust(this.inFlight, endpointId, 1);
    this.inFlightTotal += 1;
    let answered = false;
    const answer = () => {
      this.inFlightTotal -= 1;
      if (endpointId) this.attemptEnded(endpointId, adjust(this.inFlight, endpointId, -1));
    };
    try {
      const outcome = await this.attempts.attempt(deliveryId, attempt, (result) => {
        answered = true;
        if (endpointId)
          this.limits.record(endpointId, { signal: answerSignal(result), durationMs: result.durationMs, inFlight: this.inFlight.get(endpointId) ?? 1 });
        answer();
        this.recordingTotal += 1;
        if (endpointId) adjust(this.recording, endpointId, 1);
        this.startParked(endpointId);
        this.startWaiting();
      });
      this.logger.debug(`delivery ${deliveryId} attempt ${attempt}: ${outcome}`);
      return outcome;
    } finally {
      if (!answered) answer();
      else {
        this.recordingTotal -= 1;
        if (endpointId) adjust(this.recording, endpointId, -1);
      }
      this.startParked(endpointId);
      this.startWaiting();
    }
  }

  /** Whether the worker may start another attempt: a slot free, and not too many outcomes waiting for their record. */
  private hasRoom(): boolean {
    return this.inFlightTotal < this.config.delivery.concurrency && this.recordingTotal < this.config.delivery.concurrency;
  }

  /** Keeps the endpoint's pace while it has attempts here; forgets it when it has none. */
  private attemptEnded(endpointId: string, inFlight: number): void {
    const now = performance.now();
    const seen = this.pace.get(endpointId);
    if (inFlight === 0 && !this.parked.has(endpointId)) this.pace.delete(endpointId);
    else if (!seen) this.pace.set(endpointId, { lastEndAt: now, postponed: 0 });
    else {
      const interval = now - seen.lastEndAt;
      seen.intervalMs = seen.intervalMs === undefined ? interval : 0.9 * seen.intervalMs + 0.1 * interval;
      seen.lastEndAt = now;
    }
  }

  /**
   * An attempt ended: parked attempts start while the worker has fewer than DELIVERY_CONCURRENCY
   * in flight, first the ended attempt's endpoint (its slot just came free), then the other
   * lines in the order they were opened, each only while its endpoint has room. Bull's own jobs
   * are not held back by parked ones, so at most twice DELIVERY_CONCURRENCY are ever in flight.
   */
  private startParked(endedEndpointId: string | undefined): void {
    if (this.stopping || this.parked.size === 0) return;
    const lines = endedEndpointId && this.parked.has(endedEndpointId) ? [endedEndpointId, ...this.parked.keys()] : this.parked.keys();
    for (const endpointId of lines) {
      while (this.hasRoom() && !this.full(endpointId)) {
        const line = this.parked.get(endpointId);
        if (!line) break;
        const next = line.shift()!;
        if (line.length === 0) this.parked.delete(endpointId);
        this.parkedKeys.delete(`${next.deliveryId}:${next.attempt}`);
        this.detach(next.deliveryId, this.runAttempt(endpointId, next.deliveryId, next.attempt));
      }
      if (!this.hasRoom()) return;
    }
  }
}

/** Adds `delta` to the key's count, forgetting the key at zero; answers the new count. */
function adjust(counts: Map<string, number>, key: string, delta: number): number {
  const next = (counts.get(key) ?? 0) + delta;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
  return next;
}
