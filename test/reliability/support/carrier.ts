import { TestReceiver } from '../../support/receiver';

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
 * sms-gateways.ts, HttpSmsGateway): the suites' recording receiver (test/support/receiver.ts)
 * answering {providerMessageId}. Every request is kept, a repeated hand-off too.
 */
export class CarrierStandIn {
  private readonly receiver = new TestReceiver();

  constructor() {
    this.receiver.respond = () => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ providerMessageId: `carrier-${this.receiver.requests.length}` }),
    });
  }

  /** Every SMS handed over, in order. */
  get carried(): CarriedSms[] {
    return this.receiver.requests.map((r) => {
      const sms = JSON.parse(r.body) as Omit<CarriedSms, 'messageId'>;
      return { messageId: String(r.headers['idempotency-key'] ?? ''), from: sms.from, to: sms.to, body: sms.body };
    });
  }

  /** Starts listening; returns the URL to give the service as SMS_CARRIER_URL. */
  async start(): Promise<string> {
    return `${await this.receiver.start()}/sms`;
  }

  /** How many requests carried each message id. */
  perMessage(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const sms of this.carried) counts.set(sms.messageId, (counts.get(sms.messageId) ?? 0) + 1);
    return counts;
  }

  stop(): Promise<void> {
    return this.receiver.stop();
  }
}
