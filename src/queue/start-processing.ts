import { Logger } from '@nestjs/common';
import { Job, ProcessCallbackFunction, Queue } from 'bull';

/**
 * Starts a Bull processor. `Queue.process` returns a promise that settles only when processing
 * stops, and rejects if the queue's connection closes under it (a process shut down while it was
 * still starting: a short-lived seed or CLI run, a deploy). Left floating, that rejection is an
 * unhandled rejection, which ends the process. Here it is expected while the queue closes and
 * logged otherwise.
 */
export function startProcessing<T>(queue: Queue<T>, concurrency: number, handler: (job: Job<T>) => Promise<unknown>, logger: Logger): void {
  queue.process(concurrency, handler as ProcessCallbackFunction<T>).catch((error: unknown) => {
    if (isClosing(queue)) return;
    logger.error(`queue ${queue.name} stopped processing: ${error instanceof Error ? error.message : String(error)}`);
  });
}

function isClosing(queue: Queue): boolean {
  return Boolean((queue as Queue & { closing?: Promise<void> }).closing);
}
