import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { queryNamed } from '../../database/sql';
import { SmsProviderKind } from './sms-provider.entity';
import { liveLineSql } from '../../identity/lines.repository';

/** A line's provider account as stored, the token still sealed only where the name says so. */
export interface SmsProviderRow {
  line_id: string;
  address: string;
  provider: SmsProviderKind;
  account_sid: string;
  created_at: Date;
  updated_at: Date;
}

/** A provider account with its sealed token, for signing checks and API calls. */
export interface SealedAccountRow {
  line_id: string;
  address: string;
  org_id: string;
  account_sid: string;
  auth_token_sealed: string;
}

const COLUMNS = `p.line_id, l.address, p.provider, p.account_sid, p.created_at, p.updated_at`;

/** SQL of SMS provider accounts. The sealed tokens are read only by the methods that say so. */
@Injectable()
export class SmsProvidersRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Stores the account of the line, or replaces it. */
  async save(lineId: string, account: { provider: SmsProviderKind; accountSid: string; authTokenSealed: string }): Promise<SmsProviderRow> {
    await this.dataSource.transaction((manager) =>
      queryNamed(
        manager,
        `INSERT INTO sms_providers (line_id, provider, account_sid, auth_token_sealed) VALUES (:lineId, :provider, :accountSid, :token)
       ON CONFLICT (line_id) DO UPDATE SET provider = EXCLUDED.provider, account_sid = EXCLUDED.account_sid,
         auth_token_sealed = EXCLUDED.auth_token_sealed, updated_at = now()`,
        { lineId, provider: account.provider, accountSid: account.accountSid, token: account.authTokenSealed },
      ),
    );
    return (await this.find(lineId))!;
  }

  async find(lineId: string): Promise<SmsProviderRow | null> {
    const [row] = await queryNamed<SmsProviderRow[]>(
      this.dataSource.manager,
      `SELECT ${COLUMNS} FROM sms_providers p JOIN lines l ON l.id = p.line_id WHERE p.line_id = :lineId AND ${liveLineSql('l')}`,
      { lineId },
    );
    return row ?? null;
  }

  /** Removes the account; false when the line had none. */
  async delete(lineId: string, manager: EntityManager = this.dataSource.manager): Promise<boolean> {
    const [, deleted] = await queryNamed<[unknown, number]>(manager, `DELETE FROM sms_providers WHERE line_id = :lineId`, { lineId });
    return deleted > 0;
  }

  /** The live lines connected to this account, with its sealed token (a token may differ per line while one is being changed). */
  async byAccountSid(accountSid: string): Promise<SealedAccountRow[]> {
    return queryNamed<SealedAccountRow[]>(
      this.dataSource.manager,
      `SELECT p.line_id, l.address, l.org_id, p.account_sid, p.auth_token_sealed
         FROM sms_providers p JOIN lines l ON l.id = p.line_id AND ${liveLineSql('l')}
        WHERE p.account_sid = :accountSid
        LIMIT 1000`,
      { accountSid },
    );
  }

  /** Whether an inbound message with this provider id was recorded on the line already. */
  async inboundRecorded(lineId: string, providerMessageId: string): Promise<boolean> {
    const rows = await queryNamed<unknown[]>(
      this.dataSource.manager,
      `SELECT 1 FROM messages WHERE line_id = :lineId AND direction = 'INBOUND' AND provider_message_id = :providerMessageId`,
      { lineId, providerMessageId },
    );
    return rows.length > 0;
  }

  /** The line of the outbound SMS the provider knows by this id (a status callback's MessageSid). */
  async outboundLine(providerMessageId: string): Promise<string | null> {
    const [row] = await queryNamed<Array<{ line_id: string }>>(
      this.dataSource.manager,
      `SELECT line_id FROM messages WHERE provider_message_id = :providerMessageId AND direction = 'OUTBOUND' AND channel = 'SMS'
        ORDER BY created_at DESC LIMIT 1`,
      { providerMessageId },
    );
    return row?.line_id ?? null;
  }
}
