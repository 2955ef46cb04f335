import { Inject, Injectable } from '@nestjs/common';
import { SecretBox } from '../../common/secret-box';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { SmsAccepted, SmsCarrierError, SmsGateway, SmsHandoff } from './sms-gateways';
import { TwilioApi, TwilioError } from './twilio-api';

/** A line's SMS provider account (docs/twilio.md), its auth token sealed. */
export interface SmsProviderAccount {
  accountSid: string;
  authTokenSealed: string;
}

/**
 * Hands an SMS over. A line connected to Twilio (or a compatible provider) sends through its
 * Messages API, with a status callback to /ingest/twilio/status. Any other line goes to the
 * configured SmsGateway: the carrier's HTTP API (SMS_CARRIER_URL), or in development without it
 * the development carrier (sms-gateways.ts).
 */
@Injectable()
export class SmsCarrier {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly twilio: TwilioApi,
    private readonly box: SecretBox,
    private readonly gateway: SmsGateway,
  ) {}

  /** `reportsDelivery`: whether delivery reports will follow (true for Twilio); undefined: the line's setting says. */
  async send(sms: SmsHandoff, provider: SmsProviderAccount | null = null): Promise<SmsAccepted> {
    if (provider) return this.sendThroughTwilio(sms, provider);
    return this.gateway.send(sms);
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
}
