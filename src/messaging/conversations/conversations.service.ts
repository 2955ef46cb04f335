import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { NotFoundError } from '../../common/errors';
import { EventBus } from '../../events/event-bus';
import { IdentityKind } from '../../events/event-payloads';
import { AttachmentFile, AttachmentStorage } from '../attachments/attachment-storage';
import { MessageDataBuilder } from '../message-data.builder';

export type MessageChannel = 'SMS' | 'EMAIL';

/** Finds or creates a partner's identity ($1 org, $2 kind, $3 value, $4 display name); new ones are orphans. */
const UPSERT_IDENTITY = `INSERT INTO identities (org_id, kind, value, display_name) VALUES ($1, $2, $3, $4)
  ON CONFLICT (org_id, kind, value) DO UPDATE SET display_name = COALESCE(identities.display_name, EXCLUDED.display_name)`;

/**
 * A new message in a thread: one more in its count, and its last activity moves forward. The SQL
 * expressions give the thread id and the message time; `from` names a table they read.
 */
function touchThreadSql(threadId: string, at: string, from?: string): string {
  return `UPDATE threads SET message_count = message_count + 1, last_message_at = GREATEST(last_message_at, ${at})
           ${from ? `FROM ${from}` : ''} WHERE threads.id = ${threadId}`;
}

/** Thrown inside the transaction to roll it back when the provider message id was stored before. */
class RepeatedInbound extends Error {
  constructor(readonly lineId: string) {
    super('this provider message id was recorded before');
  }
}

export type InboundAttachment = AttachmentFile;

export interface InboundMessage {
  /** The receiving line's address: an E.164 number or an email address. */
  to: string;
  channel: MessageChannel;
  from: { kind: IdentityKind; value: string; displayName?: string | null };
  body: string;
  html?: string | null;
  subject?: string | null;
  providerMessageId: string;
  email?: {
    messageId: string | null;
    inReplyTo: string | null;
    references: string[];
    listUnsubscribe: string | null;
    spf: string | null;
    dkim: string | null;
    dmarc: string | null;
  };
  attachments: InboundAttachment[];
}

/** Called after an inbound message commits (e.g. to start attachment extraction). */
export type InboundRecordedHook = (result: InboundResult) => Promise<void>;

export interface InboundResult {
  messageId: string;
  threadId: string;
  threadCreated: boolean;
  duplicate: boolean;
  attachmentIds: string[];
}

/**
 * Conversations: threads and their messages. Every change that the spec reports as an event
 * publishes it in the same transaction.
 */
@Injectable()
export class ConversationsService {
  private readonly recordedHooks: InboundRecordedHook[] = [];

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly bus: EventBus,
    private readonly data: MessageDataBuilder,
    private readonly attachments: AttachmentStorage,
  ) {}

  /**
   * Records an inbound SMS or email once per provider message id: finds or creates the partner's
   * identity (an orphan until a contact claims it) and the thread, stores the message and its
   * attachments, and publishes thread.created (first message from an unknown partner) and
   * message.received.
   */
  async recordInbound(input: InboundMessage): Promise<InboundResult> {
    const result = await this.record(input);
    for (const hook of this.recordedHooks) await hook(result);
    return result;
  }

  onInboundRecorded(hook: InboundRecordedHook): void {
    this.recordedHooks.push(hook);
  }

  /**
   * One transaction; a repeat of a provider message id (even one racing the first) meets the
   * unique index, waits for the first to commit, and rolls back to answer what the first stored.
   */
  private async record(input: InboundMessage): Promise<InboundResult> {
    const lineType = input.channel === 'SMS' ? 'PHONE_NUMBER' : 'EMAIL_ACCOUNT';
    try {
      return await this.dataSource.transaction(async (tx) => {
        const [line]: Array<{ id: string; org_id: string }> = await tx.query(
          `SELECT id, org_id FROM lines WHERE address = $1 AND type = $2 AND deleted_at IS NULL`,
          [input.to, lineType],
        );
        if (!line) throw new NotFoundError(`no ${lineType === 'PHONE_NUMBER' ? 'phone number' : 'email account'} line has the address ${input.to}`, 'to');

        const { threadId, created } = await this.findOrCreateThread(tx, {
          orgId: line.org_id,
          lineId: line.id,
          channel: input.channel,
          partner: input.from,
          subject: input.subject ?? null,
          email: input.email,
        });
        const [message]: Array<{ id: string; created_at: Date }> = await tx.query(
          `WITH message AS (
             INSERT INTO messages (org_id, thread_id, line_id, channel, direction, status, body, html, subject, from_value, from_kind,
                                   to_value, to_kind, provider_message_id, header_message_id, header_in_reply_to, header_references,
                                   header_list_unsubscribe, auth_spf, auth_dkim, auth_dmarc, sent_at)
             VALUES ($1, $2, $3, $4, 'INBOUND', 'RECEIVED', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, now())
             ON CONFLICT (line_id, direction, provider_message_id) WHERE provider_message_id IS NOT NULL DO NOTHING
             RETURNING id, created_at),
           thread AS (${touchThreadSql('$2', 'message.created_at', 'message')})
           SELECT id, created_at FROM message`,
          [
            line.org_id,
            threadId,
            line.id,
            input.channel,
            input.body,
            input.html ?? null,
            input.subject ?? null,
            input.from.value,
            input.from.kind,
            input.to,
            input.channel === 'SMS' ? 'PHONE' : 'EMAIL',
            input.providerMessageId,
            input.email?.messageId ?? null,
            input.email?.inReplyTo ?? null,
            input.email?.references ?? [],
            input.email?.listUnsubscribe ?? null,
            input.email?.spf ?? null,
            input.email?.dkim ?? null,
            input.email?.dmarc ?? null,
          ],
        );
        if (!message) throw new RepeatedInbound(line.id);
        const attachmentIds = await this.attachments.storeInbound(tx, line.org_id, message.id, input.attachments);

        const data = await this.data.build(message.id, tx);
        const events = created ? (['thread.created', 'message.received'] as const) : (['message.received'] as const);
        await this.bus.publishAll(
          events.map((type) => ({ type, orgId: line.org_id, lineId: line.id, data })),
          tx,
        );
        return { messageId: message.id, threadId, threadCreated: created, duplicate: false, attachmentIds };
      });
    } catch (error) {
      if (!(error instanceof RepeatedInbound)) throw error;
      return this.recorded(error.lineId, input.providerMessageId);
    }
  }

  /** What the first delivery of a provider message id stored. */
  private async recorded(lineId: string, providerMessageId: string): Promise<InboundResult> {
    const [existing]: Array<{ id: string; thread_id: string; attachment_ids: string[] }> = await this.dataSource.query(
      `SELECT m.id, m.thread_id,
              ARRAY(SELECT a.id::text FROM attachments a WHERE a.message_id = m.id ORDER BY a.created_at, a.id) AS attachment_ids
         FROM messages m WHERE m.line_id = $1 AND m.direction = 'INBOUND' AND m.provider_message_id = $2`,
      [lineId, providerMessageId],
    );
    return { messageId: existing.id, threadId: existing.thread_id, threadCreated: false, duplicate: true, attachmentIds: existing.attachment_ids };
  }

  /** Adds a message to its thread's count and moves the thread's last activity. */
  async touchThread(tx: EntityManager, threadId: string, at: Date): Promise<void> {
    await tx.query(touchThreadSql('$1', '$2'), [threadId, at]);
  }

  /** The identity of a phone number or email address in the org, created as an orphan when new. */
  private async upsertIdentity(tx: EntityManager, orgId: string, from: InboundMessage['from']): Promise<{ id: string }> {
    const [row]: Array<{ id: string }> = await tx.query(`${UPSERT_IDENTITY} RETURNING id`, [orgId, from.kind, from.value, from.displayName ?? null]);
    return { id: row.id };
  }

  /**
   * The partner's identity (created as an orphan when new) and the thread. SMS: one thread per
   * line and partner, both upserted in one statement. Email: the thread of the message this one
   * replies to (In-Reply-To, then References, on the same line), else a new thread.
   */
  private async findOrCreateThread(
    tx: EntityManager,
    input: {
      orgId: string;
      lineId: string;
      channel: MessageChannel;
      partner: InboundMessage['from'];
      subject: string | null;
      email?: InboundMessage['email'];
    },
  ): Promise<{ threadId: string; created: boolean }> {
    if (input.channel === 'SMS') {
      const [row]: Array<{ id: string; inserted: boolean }> = await tx.query(
        `WITH identity AS (${UPSERT_IDENTITY} RETURNING id)
         INSERT INTO threads (org_id, line_id, channel, partner_identity_id, last_message_at)
         SELECT $1, $5, 'SMS', identity.id, now() FROM identity
         ON CONFLICT (line_id, partner_identity_id) WHERE channel = 'SMS' DO UPDATE SET line_id = EXCLUDED.line_id
         RETURNING id, (xmax = 0) AS inserted`,
        [input.orgId, input.partner.kind, input.partner.value, input.partner.displayName ?? null, input.lineId],
      );
      return { threadId: row.id, created: row.inserted };
    }
    const partnerIdentityId = (await this.upsertIdentity(tx, input.orgId, input.partner)).id;
    const candidates = [input.email?.inReplyTo, ...[...(input.email?.references ?? [])].reverse()].filter((v): v is string => !!v);
    if (candidates.length > 0) {
      const [match]: Array<{ thread_id: string }> = await tx.query(
        `SELECT thread_id FROM messages WHERE line_id = $1 AND header_message_id = ANY ($2::text[])
          ORDER BY array_position($2::text[], header_message_id) LIMIT 1`,
        [input.lineId, candidates],
      );
      if (match) return { threadId: match.thread_id, created: false };
    }
    const [row]: Array<{ id: string }> = await tx.query(
      `INSERT INTO threads (org_id, line_id, channel, partner_identity_id, subject, last_message_at)
       VALUES ($1, $2, 'EMAIL', $3, $4, now()) RETURNING id`,
      [input.orgId, input.lineId, partnerIdentityId, input.subject],
    );
    return { threadId: row.id, created: true };
  }
}
