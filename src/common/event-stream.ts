import { Request, Response } from 'express';
import { whenResponseCloses } from './response-close';

/** Where a server-sent event stream's frames go: the HTTP response, as the streams' services see it. */
export interface EventStreamSink {
  /** Sends the status and headers, and the first frames. */
  start(preamble: string): void;
  write(frame: string): void;
  /** Bytes written but not yet taken by the client's connection. */
  buffered(): number;
  end(): void;
  /**
   * Ends the connection without waiting for the client to take what is buffered: for a client that
   * does not read (a graceful end would keep its socket and the unread bytes here until it goes).
   */
  cut(): void;
  /** Called once when the client goes away (or the stream is ended); at once when it has gone already. */
  onClose(listener: () => void): void;
}

/**
 * A response as a server-sent event stream (`text/event-stream`): no socket timeout, no Nagle
 * delay, `X-Accel-Buffering: no` so a buffering proxy (nginx) passes each event on at once.
 */
export function eventStreamOf(request: Request, response: Response): EventStreamSink {
  return {
    start: (preamble) => {
      request.socket.setTimeout(0);
      request.socket.setNoDelay(true);
      response.status(200);
      response.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
      if (!response.hasHeader('Cache-Control')) response.setHeader('Cache-Control', 'no-cache, no-transform'); // pages keep their no-store
      response.setHeader('X-Accel-Buffering', 'no');
      response.flushHeaders();
      response.write(preamble);
    },
    write: (frame) => response.write(frame),
    buffered: () => response.writableLength,
    end: () => response.end(),
    cut: () => response.destroy(),
    // The client may have left while its credential was looked up: the listener is then called at once.
    onClose: (listener) => whenResponseCloses(response, listener),
  };
}
