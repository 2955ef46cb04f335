import { Inject, Injectable } from '@nestjs/common';
import { request } from 'undici';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';

export interface SmsHandoff {
  messageId: string;
  from: string;
  to: string;
  body: string;
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
 * Hands an SMS to the carrier's HTTP API (SMS_CARRIER_URL): POST {from, to, body} with the
 * message id as Idempotency-Key, answered with {providerMessageId}. Delivery reports come back
 * on /ingest/sms/status.
 */
@Injectable()
export class SmsCarrier {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async send(sms: SmsHandoff): Promise<{ providerMessageId: string }> {
    if (!this.config.smsCarrierUrl) throw new SmsCarrierError('no SMS carrier is configured (SMS_CARRIER_URL)', false);
    let response;
    try {
      response = await request(this.config.smsCarrierUrl, {
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
