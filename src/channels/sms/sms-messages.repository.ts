import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { queryNamed } from '../../database/sql';
import { MessageStatus } from '../../conversations/message.entity';

/** What the SMS hand-off reads of a QUEUED message: its numbers, its body and its line's carrier. */
export interface SmsHandOffRow {
  id: string;
  status: MessageStatus;
  from_value: string;
  to_value: string;
  body: string;
  line_id: string;
  sms_delivery_reports: boolean;
  /** The line's SMS provider account (docs/twilio.md), its token sealed; null: SMS_CARRIER_URL. */
  provider_account_sid: string | null;
  provider_auth_token_sealed: string | null;
}

/**
 * SQL of outbound SMS for the carrier side: the hand-off's read, delivery reports matched by the
 * carrier's id, and reports kept for a hand-off that has not stored that id yet. These act for the
 * system on ids a carrier or a job holds; status moves go through OutboundService.transition.
 */
@Injectable()
export class SmsMessagesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async forHandOff(messageId: string): Promise<SmsHandOffRow | undefined> {
    const [message] = await queryNamed<SmsHandOffRow[]>(
      this.dataSource.manager,
      `SELECT m.id, m.status, m.from_value, m.to_value, m.body, m.line_id, l.sms_delivery_reports,
              p.account_sid AS provider_account_sid, p.auth_token_sealed AS provider_auth_token_sealed
         FROM messages m JOIN lines l ON l.id = m.line_id LEFT JOIN sms_providers p ON p.line_id = m.line_id
        WHERE m.id = :messageId AND m.channel = 'SMS'`,
      { messageId },
    );
    return message;
  }

  /**
   * For a carrier's delivery report: the latest outbound SMS with this carrier id, on one of
   * `lineIds` when the report's sender is known to stand for those lines (a provider's account).
   */
  async byProviderId(providerMessageId: string, lineIds?: string[]): Promise<{ id: string; status: MessageStatus } | undefined> {
    const [message] = await queryNamed<Array<{ id: string; status: MessageStatus }>>(
      this.dataSource.manager,
      `SELECT id, status FROM messages WHERE provider_message_id = :providerMessageId AND direction = 'OUTBOUND' AND channel = 'SMS'
          ${lineIds ? 'AND line_id = ANY(:lineIds::uuid[])' : ''}
        ORDER BY created_at DESC LIMIT 1`,
      lineIds ? { providerMessageId, lineIds } : { providerMessageId },
    );
    return message;
  }

  /** Keeps a report of a message not handed off yet (the first one kept wins); see PendingSmsReport. */
  async holdReport(lineId: string, providerMessageId: string, status: 'DELIVERED' | 'FAILED', error: string | null): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `INSERT INTO pending_sms_reports (line_id, provider_message_id, status, error) VALUES (:lineId, :providerMessageId, :status, :error)
       ON CONFLICT (line_id, provider_message_id) DO NOTHING`,
      { lineId, providerMessageId, status, error },
    );
  }

  /** Takes (deletes and answers) the report kept for this message, if any. */
  async takeReport(lineId: string, providerMessageId: string): Promise<{ status: 'DELIVERED' | 'FAILED'; error: string | null } | undefined> {
    const [rows] = await queryNamed<[Array<{ status: 'DELIVERED' | 'FAILED'; error: string | null }>, number]>(
      this.dataSource.manager,
      `DELETE FROM pending_sms_reports WHERE line_id = :lineId AND provider_message_id = :providerMessageId RETURNING status, error`,
      { lineId, providerMessageId },
    );
    return rows[0];
  }

  /** Deletes reports no hand-off claimed within `olderThanMs` (a message sent by something else with our callback URL). */
  async deleteStaleReports(olderThanMs: number): Promise<void> {
    await queryNamed(this.dataSource.manager, `DELETE FROM pending_sms_reports WHERE received_at < now() - make_interval(secs => :olderThanMs / 1000.0)`, {
      olderThanMs,
    });
  }
}
