import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { loadEventSchemas, validatedEnvelope, validatedOccurrence } from './event-schemas';

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

/**
 * How a subscriber's URL answers the MCP Events verification challenge: 200 with the challenge
 * echoed; undefined for any other request (the caller answers those).
 */
export function challengeEcho(req: ReceivedRequest): Answer | undefined {
  if (!req.body.includes('"type":"verification"')) return undefined;
  const { challenge } = JSON.parse(req.body) as { challenge: string };
  return { status: 200, body: JSON.stringify({ challenge }), headers: { 'content-type': 'application/json' } };
}

/**
 * A real HTTP receiver on 127.0.0.1 that records every request and answers as told. Every webhook
 * delivery it receives (a request with X-Service-Event-Type against the event catalog's schema of
 * its kind and mode; an MCP Events subscription's occurrence against events/list's payloadSchema)
 * is validated on arrival; once one has drifted, reading `requests` (and so every wait and
 * assertion on them) and `stop()` throw that mismatch, so the test that made it fails.
 */
export class TestReceiver {
  private readonly received: ReceivedRequest[] = [];
  /** Schema mismatches of the deliveries received so far. */
  readonly schemaErrors: string[] = [];
  private server?: Server;
  private waiters: Array<{ count: number; resolve: () => void }> = [];
  respond: Responder = () => ({ status: 200, body: 'ok' });

  async start(): Promise<string> {
    loadEventSchemas();
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
        this.check(received);
        this.received.push(received);
        this.waiters = this.waiters.filter((w) => (this.received.length >= w.count ? (w.resolve(), false) : true));
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

  /** Every request so far, in arrival order; throws if a webhook delivery among them drifted from its schema. */
  get requests(): ReceivedRequest[] {
    this.assertSchemas();
    return this.received;
  }

  /** Resolves once at least `count` requests have arrived, or rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs = 15_000): Promise<void> {
    if (this.received.length >= count) return this.schemaErrors.length ? Promise.reject(this.schemaFailure()) : Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`expected ${count} requests, got ${this.received.length}`)), timeoutMs);
      this.waiters.push({ count, resolve: () => (clearTimeout(timer), this.schemaErrors.length ? reject(this.schemaFailure()) : resolve()) });
    });
  }

  assertSchemas(): void {
    if (this.schemaErrors.length > 0) throw this.schemaFailure();
  }

  private schemaFailure(): Error {
    const more = this.schemaErrors.length > 5 ? `\n… and ${this.schemaErrors.length - 5} more` : '';
    return new Error(`webhook deliveries that drift from the event catalog:\n${this.schemaErrors.slice(0, 5).join('\n')}${more}`);
  }

  private check(req: ReceivedRequest): void {
    // An MCP Events subscription's delivery carries the envelope as its occurrence's `data`; a body
    // with a top-level `type` is one of the draft's control envelopes (verification, terminated, gap).
    const subscription = req.headers['x-mcp-subscription-id'] !== undefined;
    if (req.headers['x-service-event-type'] === undefined && !subscription) return;
    try {
      if (subscription) {
        const body = JSON.parse(req.body) as Record<string, unknown>;
        if ('type' in body) controlEnvelope(body);
        else validatedOccurrence(body, true);
      } else validatedEnvelope(req.body);
    } catch (error) {
      this.schemaErrors.push(`${req.method} ${req.url}: ${(error as Error).message}`);
    }
  }

  /** Closes the server; then throws if a delivery drifted from its schema, so afterAll fails the file even if no test read it. */
  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.assertSchemas();
  }
}

/** The draft's control envelopes of webhook mode ("Non-event webhook bodies"), exactly: a drift throws. */
function controlEnvelope(body: Record<string, unknown>): void {
  const keys = Object.keys(body).sort().join(',');
  const error = body.error as Record<string, unknown> | undefined;
  const valid =
    (body.type === 'verification' && keys === 'challenge,type' && typeof body.challenge === 'string') ||
    (body.type === 'gap' && keys === 'cursor,type' && typeof body.cursor === 'string') ||
    (body.type === 'terminated' &&
      keys === 'error,type' &&
      typeof error?.code === 'number' &&
      typeof error?.message === 'string' &&
      typeof error?.data === 'object');
  if (!valid) throw new Error(`not one of the draft's control envelopes: ${JSON.stringify(body).slice(0, 200)}`);
}
