import { Logger } from '@nestjs/common';
import { Job, ProcessCallbackFunction, Queue } from 'bull';

/**
 * Starts a Bull processor. `Queue.process` returns a promise that settles only when processing
 * stops, and rejects if the queue's connection closes under it (a process shut down while it was
 * still starting: a short-lived seed or CLI run, a deploy). Left floating, that rejection is an
 * unhandled rejection, which ends the process. Here it is expected while the queue closes and
 * logged otherwise.
 *
 * `Queue.process` also names the queue's blocking connection (`CLIENT SETNAME`, Bull's
 * `setWorkerName`) without waiting for the answer. On a Redis Cluster that connection is ready
 * only after the slot map is read, so a process stopped before then (or a pause at shutdown that
 * reconnects it) fails that command when the connection closes: an unhandled rejection too. The
 * name only labels the connection in CLIENT LIST, so a failure is logged at debug level.
 */
export function startProcessing<T>(queue: Queue<T>, concurrency: number, handler: (job: Job<T>) => Promise<unknown>, logger: Logger): void {
  const named = queue as Queue<T> & { setWorkerName?: () => Promise<unknown> };
  const setWorkerName = named.setWorkerName?.bind(queue);
  if (setWorkerName) {
    named.setWorkerName = () =>
      setWorkerName().catch((error: unknown) => logger.debug(`queue ${queue.name}: its blocking connection was not named: ${messageOf(error)}`));
  }
  queue.process(concurrency, handler as ProcessCallbackFunction<T>).catch((error: unknown) => {
    if (isClosing(queue)) return;
    logger.error(`queue ${queue.name} stopped processing: ${messageOf(error)}`);
  });
}

function isClosing(queue: Queue): boolean {
  return Boolean((queue as Queue & { closing?: Promise<void> }).closing);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
