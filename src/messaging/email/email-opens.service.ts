import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { EventBus } from '../../events/event-bus';
import { MessageDataBuilder } from '../message-data.builder';
import { judgeOpen, NotCountedReason, OpenPolicy, OpenVerdict } from './open-policy';

/** Tokens are 32 base64url characters; anything unlike a token is not looked up. */
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

export type OpenResult = { messageId: null } | ({ messageId: string } & OpenVerdict);

/**
 * Open tracking: a distinct open (open-policy.ts) of an email sent with readReceipt is recorded
 * (one email_opens row), moves the message's open counters and publishes email.opened; any other
 * pixel fetch only adds to a counter (docs/email-opens.md). One transaction holds the message
 * row, so concurrent fetches count one at a time.
 */
@Injectable()
export class EmailOpensService {
  private readonly policy: OpenPolicy;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly bus: EventBus,
    private readonly data: MessageDataBuilder,
  ) {
    this.policy = config.emailOpens;
  }

  async recordFetch(token: string, userAgent: string | null): Promise<OpenResult> {
    if (!TOKEN.test(token)) return { messageId: null };
    return this.dataSource.transaction(async (tx) => {
      const [message]: Array<{ id: string; org_id: string; line_id: string; sent_at: Date | null; last_opened_at: Date | null; at: Date }> = await tx.query(
        `SELECT id, org_id, line_id, sent_at, last_opened_at, clock_timestamp() AS at
             FROM messages WHERE tracking_token = $1 AND read_receipt AND direction = 'OUTBOUND' AND channel = 'EMAIL'
              FOR UPDATE`,
        [token],
      );
      if (!message) return { messageId: null };
      const verdict = judgeOpen({ at: message.at, sentAt: message.sent_at, lastOpenedAt: message.last_opened_at, userAgent }, this.policy);
      const agent = userAgent?.slice(0, 1000) ?? null;
      if (!verdict.counted) {
        await this.countFetch(tx, message.id, message.at, agent, verdict.reason);
        return { messageId: message.id, ...verdict };
      }
      await tx.query(`INSERT INTO email_opens (message_id, opened_at, last_fetched_at, user_agent, counted) VALUES ($1, $2, $2, $3, true)`, [
        message.id,
        message.at,
        agent,
      ]);
      // An UPDATE answers [rows, affected count].
      const [[open]]: [Array<{ first_opened_at: Date; last_opened_at: Date; open_count: number }>, number] = await tx.query(
        `UPDATE messages SET open_count = open_count + 1, first_opened_at = COALESCE(first_opened_at, $2), last_opened_at = $2
          WHERE id = $1 RETURNING first_opened_at, last_opened_at, open_count`,
        [message.id, message.at],
      );
      const data = await this.data.build(message.id, tx);
      await this.bus.publish(
        {
          type: 'email.opened',
          orgId: message.org_id,
          lineId: message.line_id,
          data: {
            ...data,
            open: { firstOpenedAt: open.first_opened_at.toISOString(), lastOpenedAt: open.last_opened_at.toISOString(), openCount: open.open_count },
          },
        },
        tx,
      );
      return { messageId: message.id, ...verdict };
    });
  }

  /**
   * A fetch that is not an open is counted, not stored: a refetch of the same view on the row of
   * the open it repeats, any other on the message's one row for that reason.
   */
  private async countFetch(tx: EntityManager, messageId: string, at: Date, userAgent: string | null, reason: NotCountedReason): Promise<void> {
    if (reason === 'same-view') {
      const [, repeated]: [unknown, number] = await tx.query(
        `UPDATE email_opens SET fetch_count = fetch_count + 1, last_fetched_at = $2
          WHERE id = (SELECT id FROM email_opens WHERE message_id = $1 AND counted ORDER BY opened_at DESC, id DESC LIMIT 1)`,
        [messageId, at],
      );
      if (repeated === 1) return;
    }
    await tx.query(
      `INSERT INTO email_opens (message_id, opened_at, last_fetched_at, user_agent, counted, reason) VALUES ($1, $2, $2, $3, false, $4)
       ON CONFLICT (message_id, reason) WHERE NOT counted
       DO UPDATE SET fetch_count = email_opens.fetch_count + 1, last_fetched_at = EXCLUDED.last_fetched_at`,
      [messageId, at, userAgent, reason],
    );
  }
}
