import { InjectQueue } from '@nestjs/bull';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Queue } from 'bull';
import { DataSource, EntityManager } from 'typeorm';
import { Caller } from '../../auth/caller';
import { NotFoundError, ValidationError } from '../../common/errors';
import { DomainEvent } from '../../events/domain-event';
import { EventBus } from '../../events/event-bus';
import { SerializedMessage } from '../../events/event-payloads';
import { ConversationsService } from '../conversations/conversations.service';
import { MessageDataBuilder, serializeMessage } from '../message-data.builder';
import { newMessageId, replyReferences, replySubject } from '../email/email-format';
import { Mailer } from '../email/mailer';
import { SmsCarrier, SmsCarrierError } from './sms-carrier';

export const OUTBOUND_QUEUE = 'outbound-messages';

/** A thread the caller may use, as threadForCaller returns it. */
export type CallerThread = Awaited<ReturnType<OutboundService['threadForCaller']>>;

export type MessageStatus = 'QUEUED' | 'SENT' | 'DELIVERED' | 'FAILED' | 'RECEIVED';

/** Attempts to hand a message over before it is FAILED (transient carrier or mail server errors). */
export const HANDOFF_ATTEMPTS = 5;

/**
 * Outbound messages: queued by a tool call, handed to the carrier or mail server by a job, then
 * moved by delivery reports. Each status change publishes message.status_changed; leaving QUEUED
 * also publishes message.sent (spec: message status table).
 */
@Injectable()
export class OutboundService {
  private readonly logger = new Logger(OutboundService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(OUTBOUND_QUEUE) private readonly queue: Queue<{ messageId: string }>,
    private readonly bus: EventBus,
    private readonly data: MessageDataBuilder,
    private readonly conversations: ConversationsService,
    private readonly carrier: SmsCarrier,
    private readonly mailer: Mailer,
  ) {}

  /** send_sms: a QUEUED SMS on a thread of a phone line the caller may use, to the thread's partner or another number of theirs. */
  async queueSms(caller: Caller, input: { threadId: string; identityId: string; smsBody: string }): Promise<SerializedMessage> {
    const messageId = await this.dataSource.transaction(async (tx) => {
      const thread = await this.threadForCaller(tx, caller, input.threadId);
      if (thread.channel !== 'SMS') throw new ValidationError(`thread ${input.threadId} is an email thread; use send_email`, 'threadId');
      const [identity]: Array<{ id: string; kind: string; value: string }> = await tx.query(
        `SELECT i.id, i.kind, i.value FROM identities i, identities p
          WHERE i.id = $1 AND p.id = $2 AND i.org_id = $3
            AND (i.id = p.id OR (p.contact_id IS NOT NULL AND i.contact_id = p.contact_id))`,
        [input.identityId, thread.partner_identity_id, caller.orgId],
      );
      if (!identity) {
        throw new ValidationError(`identityId ${input.identityId} is not the thread's partner or one of their identities`, 'identityId');
      }
      if (identity.kind !== 'PHONE') throw new ValidationError(`identity ${input.identityId} is not a phone number`, 'identityId');
      return this.insertQueued(tx, {
        orgId: caller.orgId,
        threadId: thread.id,
        lineId: thread.line_id,
        channel: 'SMS',
        body: input.smsBody,
        from: { value: thread.line_address, kind: 'PHONE' },
        to: { value: identity.value, kind: 'PHONE' },
      });
    });
    await this.enqueue(messageId);
    return this.view(messageId);
  }

  /** The thread if it lies on a line the caller may use; anything else reads as not found. */
  async threadForCaller(tx: EntityManager, caller: Caller, threadId: string) {
    const [thread]: Array<{
      id: string;
      channel: 'SMS' | 'EMAIL';
      line_id: string;
      line_address: string;
      partner_identity_id: string;
      subject: string | null;
    }> = await tx.query(
      `SELECT t.id, t.channel, t.line_id, l.address AS line_address, t.partner_identity_id, t.subject
           FROM threads t JOIN lines l ON l.id = t.line_id AND l.deleted_at IS NULL
          WHERE t.id = $1 AND t.org_id = $2 AND t.line_id = ANY ($3::uuid[])`,
      [threadId, caller.orgId, caller.lines.map((l) => l.id)],
    );
    if (!thread) throw NotFoundError.of('thread', threadId, 'threadId');
    return thread;
  }

  /**
   * A reply to the thread's partner on the thread's own channel (agent turns): an SMS, or an email
   * with `Re:` subject, a new Message-ID and In-Reply-To/References answering the thread's latest
   * message (email-format's rules, as send_email). Inserted QUEUED in the caller's transaction:
   * call enqueue(messageId) once that transaction has committed.
   */
  async queueReply(tx: EntityManager, orgId: string, thread: CallerThread, body: string): Promise<string> {
    const [partner]: Array<{ value: string; kind: 'PHONE' | 'EMAIL' }> = await tx.query(`SELECT value, kind FROM identities WHERE id = $1`, [
      thread.partner_identity_id,
    ]);
    const common = { orgId, threadId: thread.id, lineId: thread.line_id, body, to: partner };
    if (thread.channel === 'SMS') {
      return this.insertQueued(tx, { ...common, channel: 'SMS', from: { value: thread.line_address, kind: 'PHONE' } });
    }
    const [parent]: Array<{ header_message_id: string; header_in_reply_to: string | null; header_references: string[] }> = await tx.query(
      `SELECT header_message_id, header_in_reply_to, header_references FROM messages
        WHERE thread_id = $1 AND header_message_id IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 1`,
      [thread.id],
    );
    return this.insertQueued(tx, {
      ...common,
      channel: 'EMAIL',
      subject: replySubject(thread.subject),
      from: { value: thread.line_address, kind: 'EMAIL' },
      headerMessageId: newMessageId(thread.line_address),
      inReplyTo: parent?.header_message_id ?? null,
      references: parent
        ? replyReferences({ messageId: parent.header_message_id, references: parent.header_references, inReplyTo: parent.header_in_reply_to })
        : [],
    });
  }

  async insertQueued(
    tx: EntityManager,
    m: {
      orgId: string;
      threadId: string;
      lineId: string;
      channel: 'SMS' | 'EMAIL';
      body: string;
      html?: string | null;
      subject?: string | null;
      from: { value: string; kind: 'PHONE' | 'EMAIL' };
      to: { value: string; kind: 'PHONE' | 'EMAIL' };
      readReceipt?: boolean;
      trackingToken?: string | null;
      headerMessageId?: string | null;
      inReplyTo?: string | null;
      references?: string[];
    },
  ): Promise<string> {
    const [row]: Array<{ id: string; created_at: Date }> = await tx.query(
      `INSERT INTO messages (org_id, thread_id, line_id, channel, direction, status, body, html, subject, from_value, from_kind,
                             to_value, to_kind, read_receipt, tracking_token, header_message_id, header_in_reply_to, header_references)
       VALUES ($1, $2, $3, $4, 'OUTBOUND', 'QUEUED', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
       RETURNING id, created_at`,
      [
        m.orgId,
        m.threadId,
        m.lineId,
        m.channel,
        m.body,
        m.html ?? null,
        m.subject ?? null,
        m.from.value,
        m.from.kind,
        m.to.value,
        m.to.kind,
        m.readReceipt ?? false,
        m.trackingToken ?? null,
        m.headerMessageId ?? null,
        m.inReplyTo ?? null,
        m.references ?? [],
      ],
    );
    await this.conversations.touchThread(tx, m.threadId, row.created_at);
    return row.id;
  }

  /** Hands the message over in a job; if Redis refuses now, the job is retried by the next sweep of QUEUED messages. */
  async enqueue(messageId: string): Promise<void> {
    await this.queue
      .add(
        { messageId },
        {
          jobId: `handoff:${messageId}`,
          attempts: HANDOFF_ATTEMPTS,
          backoff: { type: 'exponential', delay: 2000 },
          removeOnComplete: true,
          removeOnFail: true,
        },
      )
      .catch((error: unknown) => this.logger.warn(`could not enqueue hand-off of ${messageId}: ${(error as Error).message}`));
  }

  /** The job: hand a QUEUED SMS to the carrier. Throws on a transient failure so Bull retries. */
  async handOff(messageId: string, attemptsMade: number): Promise<void> {
    const [message]: Array<{
      id: string;
      channel: 'SMS' | 'EMAIL';
      status: MessageStatus;
      from_value: string;
      to_value: string;
      body: string;
      sms_delivery_reports: boolean;
    }> = await this.dataSource.query(
      `SELECT m.id, m.channel, m.status, m.from_value, m.to_value, m.body, l.sms_delivery_reports
           FROM messages m JOIN lines l ON l.id = m.line_id WHERE m.id = $1`,
      [messageId],
    );
    if (!message || message.status !== 'QUEUED') return;
    if (message.channel === 'EMAIL') {
      // The mailer throws on a transient failure with attempts left, so Bull retries.
      const outcome = await this.mailer.handOff(messageId, attemptsMade + 1 >= HANDOFF_ATTEMPTS);
      await this.transition(messageId, 'QUEUED', outcome.status, outcome.status === 'FAILED' ? { error: outcome.error } : {});
      return;
    }
    try {
      const { providerMessageId } = await this.carrier.send({ messageId, from: message.from_value, to: message.to_value, body: message.body });
      // Carriers with delivery reports move it to SENT; without, it is marked delivered optimistically.
      await this.transition(messageId, 'QUEUED', message.sms_delivery_reports ? 'SENT' : 'DELIVERED', { providerMessageId });
    } catch (error) {
      const retryable = !(error instanceof SmsCarrierError) || error.retryable;
      if (retryable && attemptsMade + 1 < HANDOFF_ATTEMPTS) throw error;
      await this.transition(messageId, 'QUEUED', 'FAILED', { error: (error as Error).message });
    }
  }

  /** A carrier's delivery report. Idempotent: a repeated or out-of-order report changes nothing. */
  async applySmsReport(input: {
    providerMessageId: string;
    status: 'DELIVERED' | 'FAILED';
    error?: string;
  }): Promise<{ messageId: string; status: MessageStatus; changed: boolean }> {
    const [message]: Array<{ id: string; status: MessageStatus }> = await this.dataSource.query(
      `SELECT id, status FROM messages WHERE provider_message_id = $1 AND direction = 'OUTBOUND' AND channel = 'SMS'
        ORDER BY created_at DESC LIMIT 1`,
      [input.providerMessageId],
    );
    if (!message) throw new NotFoundError(`no outbound SMS has providerMessageId ${input.providerMessageId}`, 'providerMessageId');
    if (message.status !== 'SENT') return { messageId: message.id, status: message.status, changed: false };
    const changed = await this.transition(message.id, 'SENT', input.status, { error: input.error ?? null });
    return { messageId: message.id, status: changed ? input.status : message.status, changed };
  }

  /**
   * Moves a message from one status to the next (only if it is still in `from`), and publishes
   * message.status_changed, plus message.sent when it leaves QUEUED for SENT or DELIVERED.
   */
  async transition(
    messageId: string,
    from: MessageStatus,
    to: MessageStatus,
    extra: { providerMessageId?: string; error?: string | null; headerMessageId?: string } = {},
  ): Promise<boolean> {
    return this.dataSource.transaction(async (tx) => {
      const [updated]: Array<Array<{ org_id: string; line_id: string }>> = await tx.query(
        `UPDATE messages SET status = $3,
                sent_at = CASE WHEN $2 = 'QUEUED' AND $3 IN ('SENT', 'DELIVERED') THEN now() ELSE sent_at END,
                provider_message_id = COALESCE($4, provider_message_id), error = COALESCE($5, error),
                header_message_id = COALESCE($6, header_message_id)
          WHERE id = $1 AND status = $2
          RETURNING org_id, line_id`,
        [messageId, from, to, extra.providerMessageId ?? null, extra.error ?? null, extra.headerMessageId ?? null],
      );
      const row = updated[0];
      if (!row) return false;
      const data = await this.data.build(messageId, tx);
      const changed: DomainEvent = {
        type: 'message.status_changed',
        orgId: row.org_id,
        lineId: row.line_id,
        data: { ...data, previousStatus: from, currentStatus: to },
      };
      const sent: DomainEvent = { type: 'message.sent', orgId: row.org_id, lineId: row.line_id, data };
      // One outbox insert for both events (message.sent first, as before).
      await this.bus.publishAll(from === 'QUEUED' && (to === 'SENT' || to === 'DELIVERED') ? [sent, changed] : [changed], tx);
      return true;
    });
  }

  async view(messageId: string): Promise<SerializedMessage> {
    const [row] = await this.dataSource.query(
      `SELECT m.id, m.thread_id, m.channel, m.direction, m.status, m.body, m.created_at, m.sent_at, m.from_value, m.from_kind, m.to_value, m.to_kind
         FROM messages m WHERE m.id = $1`,
      [messageId],
    );
    return serializeMessage(row);
  }
}
