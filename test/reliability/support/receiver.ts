import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { SIGNATURE_HEADER, verifyWebhook, WebhookEnvelope } from '../../../src/sdk';
import { loadEventSchemas, validatedEnvelope } from '../../support/event-schemas';

export interface Arrival {
  path: string;
  eventId: string;
  type: string;
  /** data.message.id, when the event carries a message. */
  messageId?: string;
  /** Verified with src/sdk's verifyWebhook and the endpoint's secret (false: bad signature). */
  verified: boolean;
  /** The status this receiver answered. */
  answered: number;
  at: number;
}

/** Decides the answer; `seen` counts this event id's requests, this one included. */
export type Answerer = (arrival: Omit<Arrival, 'answered'>, seen: number) => number | { status: number; delayMs?: number; headers?: Record<string, string> };

/**
 * A lean webhook receiver on 127.0.0.1 for load: each request is verified with the project's
 * helper (src/sdk) against the secret registered for its path, counted per event id, and
 * answered as `answer` says (200 by default). Bodies are not kept, but each is checked against the
 * event catalog on arrival, as TestReceiver does: after a drift, reading arrivals and stop() throw.
 */
export class LoadReceiver {
  private readonly arrived: Arrival[] = [];
  /** Schema mismatches so far (the first 20). */
  readonly schemaErrors: string[] = [];
  readonly perEvent = new Map<string, number>();
  readonly secrets = new Map<string, string[]>();
  badSignatures = 0;
  answer: Answerer = () => 200;
  private server?: Server;

  async start(): Promise<string> {
    loadEventSchemas();
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 30_000;
    this.server.maxRequestsPerSocket = 0;
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', done));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0];
      const body = Buffer.concat(chunks);
      let envelope: WebhookEnvelope<any> | undefined;
      let verified = false;
      try {
        envelope = verifyWebhook<any>(body, req.headers[SIGNATURE_HEADER.toLowerCase()] as string | undefined, this.secrets.get(path) ?? []);
        verified = true;
      } catch {
        this.badSignatures += 1;
        try {
          envelope = JSON.parse(body.toString('utf8'));
        } catch {
          envelope = undefined;
        }
      }
      this.check(path, body);
      const eventId = String(req.headers['x-service-event-id'] ?? envelope?.id ?? '');
      const seen = (this.perEvent.get(eventId) ?? 0) + 1;
      this.perEvent.set(eventId, seen);
      const base = {
        path,
        eventId,
        type: String(envelope?.type ?? req.headers['x-service-event-type'] ?? ''),
        messageId: envelope?.data?.message?.id,
        verified,
        at: Date.now(),
      };
      const decided = this.answer(base, seen);
      const { status, delayMs, headers } = typeof decided === 'number' ? { status: decided, delayMs: 0, headers: undefined } : decided;
      this.arrived.push({ ...base, answered: status });
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'text/plain', ...(headers ?? {}) });
        res.end(status < 300 ? 'ok' : 'no');
      };
      if (delayMs) setTimeout(reply, delayMs);
      else reply();
    });
  }

  /** Every arrival so far; throws if a delivery drifted from its schema. */
  get arrivals(): Arrival[] {
    this.assertSchemas();
    return this.arrived;
  }

  assertSchemas(): void {
    if (this.schemaErrors.length > 0) throw new Error(`webhook deliveries that drift from the event catalog:\n${this.schemaErrors.join('\n')}`);
  }

  private check(path: string, body: Buffer): void {
    try {
      validatedEnvelope(body.toString('utf8'));
    } catch (error) {
      if (this.schemaErrors.length < 20) this.schemaErrors.push(`${path}: ${(error as Error).message}`);
    }
  }

  on(path: string): Arrival[] {
    return this.arrivals.filter((a) => a.path === path);
  }

  /** Distinct message ids that arrived on `path` (with a 2xx answer or not). */
  messageIds(path: string): Set<string> {
    const ids = new Set<string>();
    for (const a of this.arrivals) if (a.path === path && a.messageId) ids.add(a.messageId);
    return ids;
  }

  /** Event ids that arrived more than once on `path`. */
  duplicates(path: string): Array<[string, number]> {
    const counts = new Map<string, number>();
    for (const a of this.arrivals) if (a.path === path) counts.set(a.eventId, (counts.get(a.eventId) ?? 0) + 1);
    return [...counts].filter(([, n]) => n > 1);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
    this.assertSchemas();
  }
}
