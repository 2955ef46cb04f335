import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/** One SMS as the service handed it to the carrier. */
export interface CarriedSms {
  /** The service's message id (its Idempotency-Key header). */
  messageId: string;
  from: string;
  to: string;
  body: string;
}

/**
 * An SMS carrier's HTTP API on 127.0.0.1, as SMS_CARRIER_URL expects it (src/channels/sms/
 * sms-gateways.ts, HttpSmsGateway): takes every POST {from, to, body}, keeps it with its
 * Idempotency-Key, and answers {providerMessageId}. Every request is kept, a repeated hand-off too.
 */
export class CarrierStandIn {
  readonly carried: CarriedSms[] = [];
  private server?: Server;

  /** Starts listening; returns the URL to give the service as SMS_CARRIER_URL. */
  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const sms = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Omit<CarriedSms, 'messageId'>;
        const messageId = String(req.headers['idempotency-key'] ?? '');
        this.carried.push({ messageId, from: sms.from, to: sms.to, body: sms.body });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ providerMessageId: `carrier-${this.carried.length}` }));
      });
    });
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', done));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/sms`;
  }

  /** How many requests carried each message id. */
  perMessage(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const sms of this.carried) counts.set(sms.messageId, (counts.get(sms.messageId) ?? 0) + 1);
    return counts;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
  }
}
