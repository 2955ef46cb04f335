import { Inject, Injectable } from '@nestjs/common';
import { request } from 'undici';
import { SecretBox } from '../../common/secret-box';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { TwilioApi, TwilioError } from './twilio-api';

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

/** A line's SMS provider account (docs/twilio.md), its auth token sealed. */
export interface SmsProviderAccount {
  accountSid: string;
  authTokenSealed: string;
}

/**
 * Hands an SMS over. A line connected to Twilio (or a compatible provider) sends through its
 * Messages API, with a status callback to /ingest/twilio/status. Any other line goes to the
 * carrier's HTTP API (SMS_CARRIER_URL): POST {from, to, body} with the message id as
 * Idempotency-Key, answered with {providerMessageId}; its delivery reports come back on
 * /ingest/sms/status.
 */
@Injectable()
export class SmsCarrier {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly twilio: TwilioApi,
    private readonly box: SecretBox,
  ) {}

  /** `reportsDelivery`: whether delivery reports will follow (true for Twilio); undefined: the line's setting says. */
  async send(sms: SmsHandoff, provider: SmsProviderAccount | null = null): Promise<{ providerMessageId: string; reportsDelivery?: boolean }> {
    if (provider) return this.sendThroughTwilio(sms, provider);
    return this.sendToCarrier(sms);
  }

  private async sendThroughTwilio(sms: SmsHandoff, provider: SmsProviderAccount): Promise<{ providerMessageId: string; reportsDelivery: boolean }> {
    const account = { accountSid: provider.accountSid, authToken: this.box.open(provider.authTokenSealed) };
    let sent;
    try {
      sent = await this.twilio.send(account, {
        from: sms.from,
        to: sms.to,
        body: sms.body,
        statusCallback: `${this.config.publicBaseUrl}/ingest/twilio/status`,
      });
    } catch (error) {
      if (error instanceof TwilioError) throw new SmsCarrierError(error.message, error.retryable);
      throw error;
    }
    if (sent.status === 'failed' || sent.status === 'undelivered' || sent.status === 'canceled') {
      throw new SmsCarrierError(sent.error ?? `the SMS provider answered status ${sent.status}`, false);
    }
    return { providerMessageId: sent.sid, reportsDelivery: true };
  }

  private async sendToCarrier(sms: SmsHandoff): Promise<{ providerMessageId: string }> {
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
