import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { AccountsService } from '../../accounts/accounts.service';
import { NotFoundError, ValidationError } from '../../common/errors';
import { SecretBox } from '../../common/secret-box';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { SmsProviderKind } from './sms-provider.entity';
import { SmsProviderRow, SmsProvidersRepository } from './sms-providers.repository';
import { TwilioApi } from './twilio-api';

/** What a connected provider account shows: never the auth token; the URLs to set in the provider's console. */
export interface SmsProviderView {
  lineId: string;
  phoneNumber: string;
  provider: SmsProviderKind;
  accountSid: string;
  /** The number's "A message comes in" webhook (HTTP POST). */
  inboundUrl: string;
  /** Where message status callbacks go; set on every message the service sends. */
  statusCallbackUrl: string;
  createdAt: string;
  updatedAt: string;
}

/**
 * Connecting a phone number line to its SMS provider account (docs/twilio.md): the credentials must
 * work (the provider answers for the account) before anything is saved; the auth token is sealed
 * with SECRETS_KEY and never shown again.
 */
@Injectable()
export class SmsProvidersService implements OnModuleInit {
  constructor(
    private readonly accounts: AccountsService,
    private readonly providers: SmsProvidersRepository,
    private readonly api: TwilioApi,
    private readonly box: SecretBox,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    // A deleted line's provider account goes with it: its auth token must not outlive it.
    this.accounts.lineDeleted.add('delete the SMS provider account', async (tx, lineId) => void (await this.providers.delete(lineId, tx)));
  }

  async connect(lineId: string, input: { provider: SmsProviderKind; accountSid: string; authToken: string }): Promise<SmsProviderView> {
    const line = await this.phoneLine(lineId);
    await this.api.verify({ accountSid: input.accountSid, authToken: input.authToken }, line.address);
    const row = await this.providers.save(lineId, { provider: input.provider, accountSid: input.accountSid, authTokenSealed: this.box.seal(input.authToken) });
    return this.view(row);
  }

  async get(lineId: string): Promise<SmsProviderView> {
    await this.phoneLine(lineId);
    const row = await this.providers.find(lineId);
    if (!row) throw new NotFoundError(`line ${lineId} has no SMS provider connected`, 'lineId');
    return this.view(row);
  }

  async disconnect(lineId: string): Promise<void> {
    await this.phoneLine(lineId);
    if (!(await this.providers.delete(lineId))) throw new NotFoundError(`line ${lineId} has no SMS provider connected`, 'lineId');
  }

  private async phoneLine(lineId: string): Promise<{ address: string }> {
    const line = await this.accounts.getLine(lineId);
    if (line.type !== 'PHONE_NUMBER') {
      throw new ValidationError(`line ${lineId} is a ${line.type} line: only PHONE_NUMBER lines have an SMS provider`, 'lineId');
    }
    return line;
  }

  private view(row: SmsProviderRow): SmsProviderView {
    return {
      lineId: row.line_id,
      phoneNumber: row.address,
      provider: row.provider,
      accountSid: row.account_sid,
      inboundUrl: `${this.config.publicBaseUrl}/ingest/twilio/sms`,
      statusCallbackUrl: `${this.config.publicBaseUrl}/ingest/twilio/status`,
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
    };
  }
}
