import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

/** How to answer one request; `until` holds the answer until it settles, `delayMs` then waits that much longer. */
export interface Answer {
  status?: number;
  body?: string | Buffer;
  delayMs?: number;
  until?: Promise<unknown>;
  headers?: Record<string, string>;
}

export type Responder = (req: ReceivedRequest) => Answer | void;

/** A real HTTP receiver on 127.0.0.1 that records every request and answers as told. */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  private server?: Server;
  private waiters: Array<{ count: number; resolve: () => void }> = [];
  respond: Responder = () => ({ status: 200, body: 'ok' });

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received: ReceivedRequest = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          receivedAt: Date.now(),
        };
        this.requests.push(received);
        this.waiters = this.waiters.filter((w) => (this.requests.length >= w.count ? (w.resolve(), false) : true));
        const answer = this.respond(received) ?? {};
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(answer.status ?? 200, answer.headers ?? { 'content-type': 'text/plain' });
          res.end(answer.body ?? '');
        };
        const later = () => (answer.delayMs ? setTimeout(send, answer.delayMs) : send());
        if (answer.until) void answer.until.then(later, later);
        else later();
      });
    });
    this.server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves once at least `count` requests have arrived, or rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs = 15_000): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`expected ${count} requests, got ${this.requests.length}`)), timeoutMs);
      this.waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
