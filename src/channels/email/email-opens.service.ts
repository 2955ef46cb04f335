import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { EventBus } from '../../events/event-bus';
import { MessageDataBuilder } from '../../conversations/message-data.builder';
import { EmailOpensRepository } from './email-opens.repository';
import { judgeOpen, NotCountedReason, OpenPolicy, openPolicyFrom, OpenVerdict } from './open-policy';

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
    private readonly opens: EmailOpensRepository,
  ) {
    this.policy = openPolicyFrom(config.emailOpens);
  }

  async recordFetch(token: string, userAgent: string | null): Promise<OpenResult> {
    if (!TOKEN.test(token)) return { messageId: null };
    return this.dataSource.transaction(async (tx) => {
      const message = await this.opens.lockByToken(tx, token);
      if (!message) return { messageId: null };
      const verdict = judgeOpen({ at: message.at, sentAt: message.sent_at, lastOpenedAt: message.last_opened_at, userAgent }, this.policy);
      const agent = userAgent?.slice(0, 1000) ?? null;
      if (!verdict.counted) {
        await this.countFetch(tx, message.id, message.at, agent, verdict.reason);
        return { messageId: message.id, ...verdict };
      }
      const open = await this.opens.recordOpen(tx, message.id, message.at, agent);
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
    if (reason === 'same-view' && (await this.opens.countRefetch(tx, messageId, at))) return;
    await this.opens.countNotOpen(tx, messageId, at, userAgent, reason);
  }
}
