import { randomUUID } from 'node:crypto';
import { Logger, Provider } from '@nestjs/common';
import { request } from 'undici';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { SmsMessagesRepository } from './sms-messages.repository';

export interface SmsHandoff {
  messageId: string;
  lineId: string;
  from: string;
  to: string;
  body: string;
}

/** What a carrier answered: its id of the message, and whether delivery reports will follow (undefined: the line's setting says). */
export interface SmsAccepted {
  providerMessageId: string;
  reportsDelivery?: boolean;
}

export class SmsCarrierError extends Error {
  constructor(
    message: string,
    /** False when retrying cannot help (the carrier refused the message). */
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/**
 * Where the SMS of a line not connected to Twilio go: the carrier's HTTP API (SMS_CARRIER_URL);
 * without it, the development carrier in development, and nowhere in production (each such SMS
 * FAILED with the reason, and one warning at start). Chosen once, at start (smsGatewayProvider).
 */
export abstract class SmsGateway {
  abstract send(sms: SmsHandoff): Promise<SmsAccepted>;
}

/**
 * The carrier's HTTP API: POST {from, to, body} with the message id as Idempotency-Key, answered
 * with {providerMessageId}; its delivery reports come back on /ingest/sms/status.
 */
export class HttpSmsGateway extends SmsGateway {
  constructor(private readonly url: string) {
    super();
  }

  async send(sms: SmsHandoff): Promise<SmsAccepted> {
    let response;
    try {
      response = await request(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': sms.messageId },
        body: JSON.stringify({ from: sms.from, to: sms.to, body: sms.body }),
        signal: AbortSignal.timeout(10_000),
      });
    } catch (error) {
      throw new SmsCarrierError(`carrier unreachable: ${(error as Error).message}`, true);
    }
    const text = await response.body.text();
    if (response.statusCode >= 500 || response.statusCode === 429) {
      throw new SmsCarrierError(`carrier answered ${response.statusCode}`, true);
    }
    if (response.statusCode >= 300) throw new SmsCarrierError(`carrier refused the message: ${response.statusCode} ${text.slice(0, 200)}`, false);
    let providerMessageId: unknown;
    try {
      providerMessageId = (JSON.parse(text) as { providerMessageId?: unknown }).providerMessageId;
    } catch {
      // handled below
    }
    if (typeof providerMessageId !== 'string' || !providerMessageId) {
      throw new SmsCarrierError('carrier answer has no providerMessageId', false);
    }
    return { providerMessageId };
  }
}

/**
 * Development without SMS_CARRIER_URL: a carrier on this machine that takes every SMS, writes one
 * log line for it, and reports it delivered at once (a report kept for the hand-off, as a
 * carrier's callback that beats its API's answer is), so the message goes QUEUED → SENT →
 * DELIVERED with its events. The development outbox page lists what was sent (docs/web.md).
 */
export class DevelopmentSmsGateway extends SmsGateway {
  private readonly logger = new Logger('DevelopmentCarrier');

  constructor(private readonly messages: SmsMessagesRepository) {
    super();
  }

  async send(sms: SmsHandoff): Promise<SmsAccepted> {
    const providerMessageId = `dev-${randomUUID()}`;
    await this.messages.holdReport(sms.lineId, providerMessageId, 'DELIVERED', null);
    this.logger.log(`SMS ${sms.messageId} from ${sms.from} to ${sms.to} accepted by the development carrier (no SMS_CARRIER_URL): ${preview(sms.body)}`);
    return { providerMessageId, reportsDelivery: true };
  }
}

/** Production without SMS_CARRIER_URL: every such SMS is FAILED with this reason. */
export class NoSmsGateway extends SmsGateway {
  static readonly REASON = 'no SMS carrier is configured (SMS_CARRIER_URL)';

  send(): Promise<SmsAccepted> {
    return Promise.reject(new SmsCarrierError(NoSmsGateway.REASON, false));
  }
}

/** The gateway for this configuration; production without a carrier says so once, at start. */
export const smsGatewayProvider: Provider = {
  provide: SmsGateway,
  inject: [APP_CONFIG, SmsMessagesRepository],
  useFactory: (config: AppConfig, messages: SmsMessagesRepository): SmsGateway => {
    if (config.smsCarrierUrl) return new HttpSmsGateway(config.smsCarrierUrl);
    if (config.isDevelopment) return new DevelopmentSmsGateway(messages);
    new Logger('SmsCarrier').warn(
      'SMS_CARRIER_URL is not set: outbound SMS on phone lines not connected to Twilio will be FAILED with "no SMS carrier is configured"',
    );
    return new NoSmsGateway();
  },
};

/** A message body on one log line, cut to 80 characters. */
function preview(body: string): string {
  const line = body.replace(/\s+/g, ' ').trim();
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 79)}…` : line);
}
