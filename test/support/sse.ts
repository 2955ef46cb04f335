import { IncomingMessage, request } from 'node:http';

/** One server-sent event as a client parses it. */
export interface SseEvent {
  id: string | null;
  event: string;
  data: string;
}

/**
 * A server-sent event stream read over a real HTTP connection, as EventSource would: events are
 * collected as they come (comments and the `retry:` field too), so a test waits for one with
 * `waitUntil(() => stream.find(...))`.
 */
export class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  retry: number | null = null;
  ended = false;
  /** Everything the server sent, as it came (the body of an answer that is not a stream, too). */
  text = '';
  private buffer = '';

  private constructor(
    readonly response: IncomingMessage,
    private readonly close: () => void,
  ) {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      this.text += chunk;
      this.take(chunk);
    });
    response.on('end', () => (this.ended = true));
    response.on('close', () => (this.ended = true));
  }

  /** GETs `path` of `baseUrl` with the cookie; resolves with the response's head (status, headers) and the stream. */
  static open(baseUrl: string, path: string, cookie?: string): Promise<SseClient> {
    return new Promise((resolve, reject) => {
      const req = request(new URL(path, baseUrl), { headers: { accept: 'text/event-stream', ...(cookie ? { cookie } : {}) } }, (res) =>
        resolve(new SseClient(res, () => req.destroy())),
      );
      req.on('error', reject);
      req.end();
    });
  }

  /**
   * POSTs `body` to `path` of `baseUrl` with `headers`, on a connection of its own that is not kept
   * for another request (so the server closes it once its answer ends); resolves with the answer's
   * head and its body read as a stream.
   */
  static post(baseUrl: string, path: string, headers: Record<string, string>, body: string): Promise<SseClient> {
    return new Promise((resolve, reject) => {
      const req = request(new URL(path, baseUrl), { method: 'POST', agent: false, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) =>
        resolve(new SseClient(res, () => req.destroy())),
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  get status(): number {
    return this.response.statusCode ?? 0;
  }

  /** The events of kind `event` whose data JSON matches `where`. */
  find(event: string, where: (data: Record<string, unknown>) => boolean = () => true): SseEvent | undefined {
    return this.events.find((e) => e.event === event && where(JSON.parse(e.data) as Record<string, unknown>));
  }

  /**
   * Stops reading, as a client that has stalled: what the server sends waits in the socket's
   * buffers (the kernel's, then the server's), and nothing more is collected until `resume()`.
   */
  pause(): void {
    this.response.pause();
  }

  /** Reads again: what waited comes in, in order, then the end if the server ended the answer meanwhile. */
  resume(): void {
    this.response.resume();
  }

  /** Closes the connection, as a browser leaving the page. */
  disconnect(): void {
    this.close();
  }

  private take(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const event: SseEvent = { id: null, event: 'message', data: '' };
      let hasData = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
        else if (line.startsWith('retry: ')) this.retry = Number(line.slice(7));
        else if (line.startsWith('id: ')) event.id = line.slice(4);
        else if (line.startsWith('event: ')) event.event = line.slice(7);
        else if (line.startsWith('data: ')) {
          event.data += (hasData ? '\n' : '') + line.slice(6);
          hasData = true;
        }
      }
      if (hasData) this.events.push(event);
    }
  }
}
