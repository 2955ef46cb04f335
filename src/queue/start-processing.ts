import { Logger } from '@nestjs/common';
import { Job, ProcessCallbackFunction, Queue } from 'bull';

/** Bull's name for the jobs of a queue processed without a name (all of this service's). */
const DEFAULT_JOB_NAME = '__default__';
/** How long after processing stopped it is started again, doubling up to the most. */
const RESTART_FIRST_MS = 1_000;
const RESTART_MOST_MS = 30_000;

/** What Bull keeps of a queue's processing, used to start it again after a failed start. */
type BullProcessing = Queue & {
  closing?: Promise<void>;
  setWorkerName?: () => Promise<unknown>;
  /** The promise of the listeners process() sets up: kept even once it has failed, and answered again. */
  _initializingProcess?: Promise<void>;
  /** Each event's SUBSCRIBE, kept even once it has failed (refused with the AUTH before it), and answered again. */
  registeredEvents?: Record<string, Promise<unknown>>;
  _initProcess?: () => Promise<void>;
  start?: (concurrency: number, name: string) => Promise<void>;
  /** Called by Bull once its processing loops have started. */
  startMoveUnlockedJobsToWait?: () => void;
};

/** Why the processing of each queue that stopped is not running (until it starts again). */
const stopped = new WeakMap<Queue, Error>();

/** The error that stopped the queue's processing, while it is stopped and being started again; undefined while it runs (or never ran here). */
export function processingStopped(queue: Queue): Error | undefined {
  return stopped.get(queue);
}

/**
 * Starts a Bull processor, and starts it again when it stops. `Queue.process` returns a promise
 * that settles only when processing stops. It rejects when the queue's connection closes under
 * it (a process shut down while it was still starting: a short-lived seed or CLI run, a deploy),
 * which is expected while the queue closes; and when processing cannot start, Redis refusing the
 * credentials in REDIS_URL, say. Bull does not try again: the process went on without taking a
 * job, and /ready said it was ready. Here the failure is logged, the queue's readiness probe reads
 * it (processingStopped), and processing is started again, 1 s later and then up to every 30 s,
 * until it runs or the queue closes.
 *
 * `Queue.process` also names the queue's blocking connection (`CLIENT SETNAME`, Bull's
 * `setWorkerName`) without waiting for the answer. On a Redis Cluster that connection is ready
 * only after the slot map is read, so a process stopped before then (or a pause at shutdown that
 * reconnects it) fails that command when the connection closes: an unhandled rejection too. The
 * name only labels the connection in CLIENT LIST, so a failure is logged at debug level.
 */
export function startProcessing<T>(queue: Queue<T>, concurrency: number, handler: (job: Job<T>) => Promise<unknown>, logger: Logger): void {
  const bull = queue as unknown as BullProcessing;
  const setWorkerName = bull.setWorkerName?.bind(queue);
  if (setWorkerName) {
    bull.setWorkerName = () =>
      setWorkerName().catch((error: unknown) => logger.debug(`queue ${queue.name}: its blocking connection was not named: ${messageOf(error)}`));
  }
  const loopsStarted = bull.startMoveUnlockedJobsToWait?.bind(queue);
  if (loopsStarted) {
    bull.startMoveUnlockedJobsToWait = () => {
      if (stopped.delete(queue)) logger.log(`queue ${queue.name} is processing again`);
      loopsStarted();
    };
  }
  const failed = (error: unknown, restartMs: number): void => {
    if (isClosing(queue)) return;
    stopped.set(queue, error instanceof Error ? error : new Error(String(error)));
    const { _initProcess: initProcess, start } = bull;
    if (!initProcess || !start) {
      logger.error(`queue ${queue.name} stopped processing: ${messageOf(error)}`);
      return;
    }
    logger.error(`queue ${queue.name} stopped processing: ${messageOf(error)}; starting it again in ${restartMs / 1000} s`);
    setTimeout(() => {
      if (isClosing(queue)) return;
      bull._initializingProcess = undefined;
      // Subscribing again to a channel already subscribed to is harmless; a failed one must be sent again.
      if (bull.registeredEvents) delete bull.registeredEvents.delayed;
      initProcess
        .call(queue)
        .then(() => start.call(queue, concurrency, DEFAULT_JOB_NAME))
        .catch((again: unknown) => failed(again, Math.min(restartMs * 2, RESTART_MOST_MS)));
    }, restartMs).unref();
  };
  queue.process(concurrency, handler as ProcessCallbackFunction<T>).catch((error: unknown) => failed(error, RESTART_FIRST_MS));
}

function isClosing(queue: Queue): boolean {
  return Boolean((queue as Queue & { closing?: Promise<void> }).closing);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
