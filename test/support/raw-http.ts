import { Server } from 'node:http';
import { AddressInfo, connect, Socket } from 'node:net';

/**
 * HTTP/1.1 over a plain TCP socket, for what supertest cannot do: send a request head and only
 * part of its body (or trickle it), see an answer that comes before the body is sent, a
 * `100 Continue`, and whether the server closed the connection.
 */

export interface RawResponse {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the connection to the end of this response. */
  ms: number;
}

export class RawConnection {
  private buffer = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  private readonly started = Date.now();
  /** Bytes of request data the socket accepted so far. */
  sent = 0;
  closedAt?: number;
  error?: string;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.error = error.code ?? error.message;
    });
    this.closed = new Promise((done) =>
      socket.once('close', () => {
        this.closedAt = Date.now();
        this.wake();
        done();
      }),
    );
  }

  /** Connects to 127.0.0.1:`port`, from `localAddress` when given (Linux loopback takes any of 127.0.0.0/8). */
  static async open(port: number, localAddress?: string): Promise<RawConnection> {
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    await new Promise<void>((done, fail) => socket.once('connect', done).once('error', fail));
    socket.setNoDelay(true);
    return new RawConnection(socket);
  }

  get isClosed(): boolean {
    return this.closedAt !== undefined;
  }

  /** Writes unless the connection is gone; false when it could not. */
  write(data: string | Buffer): boolean {
    if (this.socket.destroyed || !this.socket.writable) return false;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    this.socket.write(bytes);
    this.sent += bytes.length;
    return true;
  }

  /** Writes a request head (`Host` and the CRLFs added). */
  head(method: string, path: string, headers: Record<string, string | number>): boolean {
    const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    return this.write(`${lines.join('\r\n')}\r\n\r\n`);
  }

  /** Writes `total` bytes of `fill` in chunks of `chunk`, `everyMs` apart, until done or the server closes. */
  async trickle(total: number, chunk: number, everyMs: number, fill = 0x61): Promise<number> {
    let written = 0;
    while (written < total && !this.isClosed) {
      const n = Math.min(chunk, total - written);
      if (!this.write(Buffer.alloc(n, fill))) break;
      written += n;
      if (everyMs > 0) await new Promise((done) => setTimeout(done, everyMs));
      else await new Promise((done) => setImmediate(done));
    }
    return written;
  }

  /**
   * The next response (a 1xx included), or null when the connection closed first or `timeoutMs`
   * passed. A body is read by its Content-Length, or to the close when it has none.
   */
  async response(timeoutMs: number): Promise<RawResponse | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = this.tryParse();
      if (parsed) return parsed;
      if (this.isClosed || Date.now() >= deadline) return null;
      await new Promise<void>((done) => {
        const timer = setTimeout(done, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          done();
        });
      });
    }
  }

  /** Resolves true once the server closed the connection, false after `timeoutMs`. */
  async closedWithin(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((done) => (timer = setTimeout(() => done(false), timeoutMs)));
    const result = await Promise.race([this.closed.then(() => true), timeout]);
    clearTimeout(timer);
    return result;
  }

  destroy(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private tryParse(): RawResponse | null {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine, ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const at = line.indexOf(':');
      headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
    }
    let bodyEnd: number;
    if (status < 200 || status === 204 || status === 304) bodyEnd = end + 4;
    else if (headers['content-length'] !== undefined) {
      bodyEnd = end + 4 + Number(headers['content-length']);
      if (this.buffer.length < bodyEnd) return null;
    } else {
      if (!this.isClosed) return null;
      bodyEnd = this.buffer.length;
    }
    const body = this.buffer.subarray(end + 4, bodyEnd).toString('utf8');
    this.buffer = this.buffer.subarray(bodyEnd);
    return { status, headers, body, ms: Date.now() - this.started };
  }
}

/** Makes the app's HTTP server listen on an ephemeral port (supertest would do it per request). */
export async function listen(server: Server): Promise<number> {
  if (!server.listening) await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return (server.address() as AddressInfo).port;
}
