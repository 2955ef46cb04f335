import { ServerResponse } from 'node:http';

/**
 * Calls `listener` once when the response closes (its answer sent, or its client gone), or at once
 * when it has closed already. Whatever is given back on close (a stream's place, a key's slot, a
 * body budget) must use this when it is taken after an await (behind a guard that looks up a
 * session or a key, say): a client that hung up during that await closed the response then, and a
 * plain `once('close')` added afterwards would wait forever, so the thing taken would stay taken.
 */
export function whenResponseCloses(response: ServerResponse, listener: () => void): void {
  if (response.closed) listener();
  // eslint-disable-next-line no-restricted-syntax -- the one place that adds the listener, after the check above
  else response.once('close', listener);
}
