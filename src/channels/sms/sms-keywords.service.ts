import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { InboundResult } from '../../conversations/conversations.service';
import { OutboundService } from '../../conversations/outbound/outbound.service';
import { LinesRepository } from '../../identity/lines.repository';
import { KEYWORD_REPLY, KeywordOutcome, OptOutsService } from '../../opt-outs/opt-outs.service';
import { smsKeywordOf } from '../../opt-outs/sms-keywords';
import { SmsProvidersRepository } from './sms-providers.repository';

/** An inbound SMS as a carrier delivered it, once recorded. */
export interface ReceivedSms {
  to: string;
  from: string;
  body: string;
}

/**
 * The keywords of inbound SMS, on every ingest path (the carrier-neutral route and Twilio's):
 * after the message is recorded, STOP, START or HELP is applied (opt-outs/, docs/opt-out.md) and,
 * in the same transaction, the answer is queued on the thread, unless the line's provider answers
 * keywords itself. Twilio does, on long codes and toll-free numbers (docs/twilio.md, "Opt-out
 * keywords"): a line connected to Twilio gets no answer from here, so the sender is not answered twice.
 */
@Injectable()
export class SmsKeywordsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly optOuts: OptOutsService,
    private readonly outbound: OutboundService,
    private readonly lines: LinesRepository,
    private readonly providers: SmsProvidersRepository,
  ) {}

  async afterInbound(sms: ReceivedSms, recorded: InboundResult): Promise<KeywordOutcome | null> {
    // Most messages are no keyword: they cost no lookup and no transaction (four round trips).
    if (!smsKeywordOf(sms.body)) return null;
    const line = await this.lines.liveLineByAddress(sms.to, 'PHONE_NUMBER');
    if (!line) return null;
    const providerAnswers = (await this.providers.find(line.id)) !== null;
    let replyId: string | null = null;
    const outcome = await this.dataSource.transaction(async (tx) => {
      const applied = await this.optOuts.applyInbound(tx, {
        orgId: line.org_id,
        lineId: line.id,
        lineNumber: line.address,
        from: sms.from,
        body: sms.body,
        messageId: recorded.messageId,
        threadId: recorded.threadId,
        duplicate: recorded.duplicate,
      });
      if (applied?.reply && !providerAnswers) {
        replyId = await this.outbound.insertQueued(tx, {
          orgId: line.org_id,
          threadId: recorded.threadId,
          lineId: line.id,
          channel: 'SMS',
          body: applied.reply,
          from: { value: line.address, kind: 'PHONE' },
          to: { value: sms.from, kind: 'PHONE' },
          origin: { userId: null, keyId: null, system: KEYWORD_REPLY },
        });
      }
      return applied;
    });
    if (replyId) await this.outbound.enqueue(replyId);
    return outcome;
  }
}
