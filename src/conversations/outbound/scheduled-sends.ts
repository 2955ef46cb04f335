import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ConflictError, NotFoundError, SendRefusedError } from '../../common/errors';
import { Principal } from '../../identity/principal';
import { SerializedMessage } from '../conversation-vocabulary';
import { DueMessageRow, OutboundRepository, QueuedMessage } from './outbound.repository';
import { OutboundService } from './outbound.service';
import { SendGate } from './send-gate';

/**
 * Scheduled sends (docs/decisions.md, "Scheduled sends"): a message sent with sendAt is written
 * SCHEDULED (OutboundService.send); when its time comes, its delayed job or the due sweep
 * releases it here: the send gate is asked again, and it goes SCHEDULED → QUEUED (then the usual
 * hand-off) or, refused, SCHEDULED → FAILED with the refusal's text. Before then, cancel moves it
 * to CANCELED. Each move is one transaction on the locked row, so a message goes out once.
 */
@Injectable()
export class ScheduledSends {
  private readonly logger = new Logger(ScheduledSends.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly messages: OutboundRepository,
    private readonly outbound: OutboundService,
    private readonly gate: SendGate,
  ) {}

  /**
   * Releases the message if it is SCHEDULED and due (else nothing: canceled, released by another
   * replica). A job that runs before the database's clock reached the time (this process's clock is
   * ahead of PostgreSQL's) throws, so Bull runs it again after its backoff.
   */
  async release(messageId: string): Promise<void> {
    const queued = await this.dataSource.transaction(async (tx) => {
      const row = await this.messages.lockDue(tx, messageId);
      if (!row) {
        if (await this.messages.scheduledAhead(tx, messageId)) throw new Error(`scheduled message ${messageId} is not due yet by the database's clock`);
        return false;
      }
      try {
        await this.gate.admit(tx, queuedMessageOf(row));
      } catch (error) {
        if (!(error instanceof SendRefusedError)) throw error;
        this.logger.log(`scheduled message ${messageId} refused when due (rule ${error.rule})`);
        await this.outbound.transitionIn(tx, messageId, 'SCHEDULED', 'FAILED', { error: error.message });
        return false;
      }
      return this.outbound.transitionIn(tx, messageId, 'SCHEDULED', 'QUEUED');
    });
    if (queued) await this.outbound.enqueue(messageId);
  }

  /** Releases every due SCHEDULED message (the sweep: a delayed job lost with Redis, or run while no worker was up). */
  async releaseDue(): Promise<void> {
    for (const row of await this.messages.dueScheduled()) await this.release(row.id);
  }

  /**
   * cancel_scheduled_message and the thread page's Cancel: a SCHEDULED message on the caller's
   * lines becomes CANCELED (message.status_changed); any other status is a conflict.
   */
  async cancel(caller: Principal, messageId: string): Promise<{ message: SerializedMessage }> {
    await this.dataSource.transaction(async (tx) => {
      const row = await this.messages.lockForCaller(tx, caller, messageId);
      if (!row) throw NotFoundError.of('message', messageId, 'messageId');
      if (row.status !== 'SCHEDULED') {
        throw new ConflictError(
          `message ${messageId} is ${row.status}, not SCHEDULED: only a scheduled message that has not gone out can be cancelled`,
          'messageId',
        );
      }
      await this.outbound.transitionIn(tx, messageId, 'SCHEDULED', 'CANCELED');
    });
    await this.outbound.dropDue(messageId);
    return { message: await this.outbound.view(messageId) };
  }
}

/** The message as the send gate is asked of it when due: what it was asked of it when scheduled. */
function queuedMessageOf(row: DueMessageRow): QueuedMessage {
  return {
    orgId: row.org_id,
    threadId: row.thread_id,
    lineId: row.line_id,
    channel: row.channel,
    body: row.body,
    html: row.html,
    subject: row.subject,
    from: { value: row.from_value, kind: row.from_kind },
    to: { value: row.to_value, kind: row.to_kind },
    origin: { userId: row.sent_by_user_id, keyId: row.sent_by_key_id },
    sendAt: row.send_at,
  };
}
