/**
 * How many requests one endpoint may have in flight from this worker process: a limit per
 * endpoint that adapts to how the endpoint answers (AIMD, as TCP's congestion window, with a
 * latency check as in TCP Vegas). The rule, per answer:
 *
 * - **Overload** (no answer in time, a connection refused or reset, another network error, a 5xx,
 *   a 429): the limit is halved, at most once per round: an answer to a request sent before the
 *   last cut does not cut again (ten requests timing out together are one signal, not ten).
 * - **Latency rise** (a 2xx whose smoothed latency is more than twice the endpoint's baseline and
 *   more than LATENCY_SLACK_MS above it): the limit shrinks by a tenth, at most once per round,
 *   but not below the initial limit: a rise takes back growth, only failures go lower. The
 *   latency is measured in the worker, so it includes the worker's own delays (an event loop
 *   busy with ingest in one process, a CPU-starved machine); cutting below the fixed limit the
 *   service had before on that evidence starved a healthy endpoint (bench scenario 6: 3
 *   deliveries/s instead of 37 on a machine at load 15, with a slack of 25 ms and no such floor).
 * - **Good** (any other 2xx) while the endpoint uses at least half its limit: the limit grows by
 *   1 ÷ limit, so by about one per round of answers (a limit of 10 grows by one every 10 answers).
 *   An endpoint that does not use its limit gives no evidence it could take more, so it stays.
 * - Anything else (other 4xx, a URL the policy refused at send time) leaves the limit alone.
 *
 * The limit stays within [min, max] (DELIVERY_ENDPOINT_CONCURRENCY_MIN / _MAX) and starts at
 * DELIVERY_ENDPOINT_CONCURRENCY. The latency is each request's time as the worker measured it,
 * smoothed (each answer weighs a fifth); the baseline is a slow average of the same times (each
 * answer weighs a hundredth), as in Netflix's concurrency-limits "gradient2": a sudden rise shows,
 * while a latency that stays higher becomes the new normal within some tens of answers. (A
 * baseline of the lowest latency of the last minute held the limit at its start for the whole of a
 * burst on a CPU-starved machine, where the worker's own delays were the rise: bench scenario 6.)
 *
 * The state is per process: each worker adapts its own share of an endpoint's traffic, so with
 * N workers an endpoint may see up to N × its limit at once. An endpoint not heard from for
 * IDLE_FORGET_MS starts again from the initial limit.
 */
export interface EndpointConcurrencyOptions {
  initial: number;
  min: number;
  max: number;
}

/** What an attempt's answer says about its endpoint. */
export type AnswerSignal = 'good' | 'overload' | 'neutral';

export interface AnswerSample {
  signal: AnswerSignal;
  /** The request's time, sent to answered (or given up), ms. */
  durationMs: number;
  /** The endpoint's requests in flight from this worker when this one was answered, itself included. */
  inFlight: number;
}

export const LATENCY_TOLERANCE = 2;
export const LATENCY_SLACK_MS = 100;
export const IDLE_FORGET_MS = 10 * 60_000;
const OVERLOAD_FACTOR = 0.5;
const LATENCY_FACTOR = 0.9;
/** Weight of the newest answer in the smoothed latency, and in the baseline. */
const SMOOTHING = 0.2;
const BASELINE_SMOOTHING = 0.01;
/** Endpoints whose state is kept at most; past it the longest unheard is forgotten. */
const MAX_TRACKED = 10_000;

interface EndpointState {
  limit: number;
  smoothedMs?: number;
  baselineMs?: number;
  /** When the limit was last cut: answers to requests sent before then do not cut it again. */
  cutAt: number;
  heardAt: number;
}

/** The worker's per-endpoint limits; `now` is a monotonic clock in ms (injected by tests). */
export class EndpointConcurrency {
  private readonly states = new Map<string, EndpointState>();
  private readonly min: number;
  private readonly max: number;
  private readonly initial: number;

  constructor(
    options: EndpointConcurrencyOptions,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.min = Math.max(1, options.min);
    this.max = Math.max(this.min, options.max);
    this.initial = Math.min(this.max, Math.max(this.min, options.initial));
  }

  /** Requests the endpoint may have in flight now (a whole number, at least the minimum). */
  limit(endpointId: string): number {
    const state = this.states.get(endpointId);
    if (!state || this.now() - state.heardAt > IDLE_FORGET_MS) return this.initial;
    return Math.max(this.min, Math.floor(state.limit));
  }

  /** Takes one answer into the endpoint's limit (see the rule above). */
  record(endpointId: string, sample: AnswerSample): void {
    if (sample.signal === 'neutral') return;
    const now = this.now();
    const state = this.state(endpointId, now);
    state.heardAt = now;
    const sentAt = now - sample.durationMs;
    if (sample.signal === 'overload') {
      this.cut(state, sentAt, now, OVERLOAD_FACTOR);
      return;
    }
    const smoothed = (state.smoothedMs = ewma(state.smoothedMs, sample.durationMs, SMOOTHING));
    const baseline = (state.baselineMs = ewma(state.baselineMs, sample.durationMs, BASELINE_SMOOTHING));
    if (smoothed > LATENCY_TOLERANCE * baseline && smoothed - baseline > LATENCY_SLACK_MS) {
      if (state.limit > this.initial) this.cut(state, sentAt, now, LATENCY_FACTOR, this.initial);
      return;
    }
    if (sample.inFlight * 2 >= state.limit) state.limit = Math.min(this.max, state.limit + 1 / state.limit);
  }

  private cut(state: EndpointState, sentAt: number, now: number, factor: number, floor = this.min): void {
    if (sentAt < state.cutAt) return; // sent before the last cut: that cut already answered it
    state.limit = Math.max(floor, state.limit * factor);
    state.cutAt = now;
  }

  private state(endpointId: string, now: number): EndpointState {
    let state = this.states.get(endpointId);
    if (state && now - state.heardAt > IDLE_FORGET_MS) state = undefined;
    if (!state) {
      state = { limit: this.initial, cutAt: -Infinity, heardAt: now };
      if (this.states.size >= MAX_TRACKED) this.forgetOldest();
    }
    // Kept in the order last heard from, so the first is the longest unheard.
    this.states.delete(endpointId);
    this.states.set(endpointId, state);
    return state;
  }

  private forgetOldest(): void {
    const oldest = this.states.keys().next();
    if (!oldest.done) this.states.delete(oldest.value);
  }
}

function ewma(average: number | undefined, value: number, weight: number): number {
  return average === undefined ? value : average + weight * (value - average);
}

/** The signal of a send result: overload for no answer, a 5xx or a 429; good for a 2xx. */
export function answerSignal(result: { statusCode: number | null; errorKind?: string }): AnswerSignal {
  if (result.statusCode === null) return result.errorKind === 'url_refused' ? 'neutral' : 'overload';
  if (result.statusCode === 429 || result.statusCode >= 500) return 'overload';
  if (result.statusCode >= 200 && result.statusCode < 300) return 'good';
  return 'neutral';
}
