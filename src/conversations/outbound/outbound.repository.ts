import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../../identity/principal';
import { callerLines } from '../../identity/line-access.sql';
import { Channel, IdentityKind, SerializedMessage } from '../conversation-vocabulary';
import { queryNamed, SqlCondition } from '../../database/sql';
import { touchThreadSql } from '../conversations.repository';
import { optedOutSinceSql } from '../../opt-outs/opt-outs.repository';
import { serializeMessage } from '../message-data.builder';
import { CallerThread } from '../threads/thread-access.repository';
import { MessageStatus } from '../message.entity';
import { SendOrigin } from './send-origin';

/** An identity of a thread's partner (or of the partner's contact) that a message may go to. */
export interface PartnerIdentityRow {
  id: string;
  kind: string;
  value: string;
}

/** The latest message of a thread that has a Message-ID: what a reply answers. */
export interface ParentHeadersRow {
  header_message_id: string;
  header_in_reply_to: string | null;
  header_references: string[];
}

/** A new QUEUED outbound message (SCHEDULED when it has a sendAt). */
export interface QueuedMessage {
  orgId: string;
  threadId: string;
  lineId: string;
  channel: Channel;
  body: string;
  html?: string | null;
  subject?: string | null;
  from: { value: string; kind: IdentityKind };
  to: { value: string; kind: IdentityKind };
  readReceipt?: boolean;
  trackingToken?: string | null;
  headerMessageId?: string | null;
  inReplyTo?: string | null;
  references?: string[];
  /** Who it is sent for (messages.sent_by_user_id, sent_by_key_id). */
  origin: SendOrigin;
  /** A scheduled send's time: the message is written SCHEDULED with it (send_at), and released when due (ScheduledSends). */
  sendAt?: Date | null;
}

/** A SCHEDULED message whose time has come, locked for its release: what the send gate is asked of it again. */
export type DueMessageRow = {
  id: string;
  org_id: string;
  thread_id: string;
  line_id: string;
  channel: Channel;
  body: string;
  html: string | null;
  subject: string | null;
  from_value: string;
  from_kind: IdentityKind;
  to_value: string;
  to_kind: IdentityKind;
  sent_by_user_id: string | null;
  sent_by_key_id: string | null;
  send_at: Date;
};

/** A message of the development outbox: its subject (email) and why it FAILED, if it did. */
export type OutboxMessage = SerializedMessage & { subject: string | null; error: string | null };

/** What the hand-off job reads of a message: which channel hands it over, if it is still QUEUED. */
export interface HandOffRow {
  id: string;
  channel: Channel;
  status: MessageStatus;
  line_id: string;
  to_value: string;
  created_at: Date;
  /** An SMS whose number opted out on its line after it was queued (the hand-off then asks the gate: refusalAtHandOff). */
  opted_out_since_queued: boolean;
}

/**
 * SQL of outbound messages: what a reply needs from its thread, the QUEUED insert, the hand-off
 * and the status moves. The thread reads take a `CallerThread` (a thread threadForCaller let the
 * caller use) or the `Principal`; the hand-off and sweep methods act for the system on message ids
 * it holds (a channel's own reads, as SMS delivery reports, live with the channel). Rules live in OutboundService.
 */
@Injectable()
export class OutboundRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** `identityId` if it is the thread's partner or another identity of the partner's contact, in the caller's org. */
  async partnerIdentity(manager: EntityManager, caller: Principal, thread: CallerThread, identityId: string): Promise<PartnerIdentityRow | undefined> {
    const [identity] = await queryNamed<PartnerIdentityRow[]>(
      manager,
      `SELECT i.id, i.kind, i.value FROM identities i, identities p
          WHERE i.id = :identityId AND p.id = :partnerIdentityId AND i.org_id = :orgId
            AND (i.id = p.id OR (p.contact_id IS NOT NULL AND i.contact_id = p.contact_id))`,
      { identityId, partnerIdentityId: thread.partner_identity_id, orgId: caller.orgId },
    );
    return identity;
  }

  /** Whether the thread has any message (a thread made with a draft-only credential's draft has none until it is approved). */
  async threadHasMessages(manager: EntityManager, threadId: string): Promise<boolean> {
    const rows = await queryNamed<unknown[]>(manager, `SELECT 1 FROM messages WHERE thread_id = :threadId LIMIT 1`, { threadId });
    return rows.length > 0;
  }

  /** The thread's partner identity. */
  async partner(manager: EntityManager, thread: CallerThread): Promise<{ value: string; kind: IdentityKind }> {
    const [partner] = await queryNamed<Array<{ value: string; kind: IdentityKind }>>(manager, `SELECT value, kind FROM identities WHERE id = :identityId`, {
      identityId: thread.partner_identity_id,
    });
    return partner;
  }

  /**
   * The SMS thread of the caller's line `lineId` with the number `to`, created (with `to` as an
   * orphan identity when the org has none) if there is none: one SMS thread per line and partner,
   * as inbound SMS find it. `created` says whether this call made it. `columns`: more columns
   * the statement answers with it (the send gate's read: SendGate.readColumns), read after the
   * thread is written.
   */
  async smsThread<Extra extends object = object>(
    manager: EntityManager,
    caller: Principal,
    lineId: string,
    to: string,
    columns: SqlCondition | null = null,
  ): Promise<{ id: string; created: boolean } & Extra> {
    const [thread] = await queryNamed<Array<{ id: string; created: boolean } & Extra>>(
      manager,
      `WITH identity AS (
         INSERT INTO identities (org_id, kind, value) VALUES (:orgId, 'PHONE', :to)
         ON CONFLICT (org_id, kind, value) DO UPDATE SET value = EXCLUDED.value
         RETURNING id),
       thread AS (
         INSERT INTO threads (org_id, line_id, channel, partner_identity_id, last_message_at)
         SELECT :orgId, :lineId, 'SMS', identity.id, now() FROM identity
         ON CONFLICT (line_id, partner_identity_id) WHERE channel = 'SMS' DO UPDATE SET line_id = EXCLUDED.line_id
         RETURNING id, (xmax = 0) AS created)
       SELECT thread.id, thread.created${columns ? `, ${columns.sql}` : ''} FROM thread`,
      { ...columns?.parameters, orgId: caller.orgId, lineId, to },
    );
    return thread;
  }

  /** The thread's latest message that has a Message-ID, if any. */
  async latestHeaders(manager: EntityManager, thread: CallerThread): Promise<ParentHeadersRow | undefined> {
    const [parent] = await queryNamed<ParentHeadersRow[]>(
      manager,
      `SELECT header_message_id, header_in_reply_to, header_references FROM messages
        WHERE thread_id = :threadId AND header_message_id IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 1`,
      { threadId: thread.id },
    );
    return parent;
  }

  /**
   * Inserts the message `id` QUEUED (SCHEDULED with `m.sendAt`), in the org of `m.orgId`, and
   * touches its thread (one more message, its last activity), in one statement that also carries
   * `companion` when given (a CTE: the call's audit row, claimAuditRow); answers its creation time.
   */
  async insertQueued(manager: EntityManager, id: string, m: QueuedMessage, companion: SqlCondition | null = null): Promise<{ created_at: Date }> {
    const [row] = await queryNamed<Array<{ created_at: Date }>>(
      manager,
      `WITH ${companion ? `companion AS (${companion.sql}),` : ''}
       message AS (INSERT INTO messages (id, org_id, thread_id, line_id, channel, direction, status, body, html, subject, from_value, from_kind,
                             to_value, to_kind, read_receipt, tracking_token, header_message_id, header_in_reply_to, header_references,
                             sent_by_user_id, sent_by_key_id, send_at)
       VALUES (:id, :orgId, :threadId, :lineId, :channel, 'OUTBOUND', CASE WHEN CAST(:sendAt AS timestamptz) IS NULL THEN 'QUEUED' ELSE 'SCHEDULED' END, :body, :html, :subject, :fromValue, :fromKind,
               :toValue, :toKind, :readReceipt, :trackingToken, :headerMessageId, :inReplyTo, :references, :sentByUserId, :sentByKeyId, :sendAt)
       RETURNING id, created_at),
       thread AS (${touchThreadSql(':threadId', 'message.created_at', 'message')})
       SELECT created_at FROM message`,
      {
        ...companion?.parameters,
        id,
        orgId: m.orgId,
        threadId: m.threadId,
        lineId: m.lineId,
        channel: m.channel,
        body: m.body,
        html: m.html ?? null,
        subject: m.subject ?? null,
        fromValue: m.from.value,
        fromKind: m.from.kind,
        toValue: m.to.value,
        toKind: m.to.kind,
        readReceipt: m.readReceipt ?? false,
        trackingToken: m.trackingToken ?? null,
        headerMessageId: m.headerMessageId ?? null,
        inReplyTo: m.inReplyTo ?? null,
        references: m.references ?? [],
        sentByUserId: m.origin.userId,
        sentByKeyId: m.origin.keyId,
        sendAt: m.sendAt ?? null,
      },
    );
    return row;
  }

  async forHandOff(messageId: string): Promise<HandOffRow | undefined> {
    const [message] = await queryNamed<HandOffRow[]>(
      this.dataSource.manager,
      `SELECT m.id, m.channel, m.status, m.line_id, m.to_value, m.created_at,
              m.channel = 'SMS' AND ${optedOutSinceSql('m.line_id', 'm.to_value', 'm.created_at')} AS opted_out_since_queued
         FROM messages m WHERE m.id = :messageId`,
      { messageId },
    );
    return message;
  }

  /**
   * Moves the message to `to` if it is still in `from` (sent_at set when it leaves QUEUED for
   * SENT or DELIVERED); answers its org and line, or undefined when it was not in `from`.
   */
  async transition(
    manager: EntityManager,
    messageId: string,
    from: MessageStatus,
    to: MessageStatus,
    extra: { providerMessageId?: string; error?: string | null; headerMessageId?: string },
  ): Promise<{ org_id: string; line_id: string } | undefined> {
    // UPDATE ... RETURNING answers [rows, affected count].
    const [updated] = await queryNamed<[Array<{ org_id: string; line_id: string }>, number]>(
      manager,
      `UPDATE messages SET status = :to,
                sent_at = CASE WHEN :from = 'QUEUED' AND :to IN ('SENT', 'DELIVERED') THEN now() ELSE sent_at END,
                provider_message_id = COALESCE(:providerMessageId, provider_message_id), error = COALESCE(:error, error),
                header_message_id = COALESCE(:headerMessageId, header_message_id)
          WHERE id = :messageId AND status = :from
          RETURNING org_id, line_id`,
      { messageId, from, to, providerMessageId: extra.providerMessageId ?? null, error: extra.error ?? null, headerMessageId: extra.headerMessageId ?? null },
    );
    return updated[0];
  }

  /** Whether the message is on a line the caller may see now (callerLines): a send tool's repeat answers it only then. */
  async onCallerLines(manager: EntityManager, caller: Principal, messageId: string): Promise<boolean> {
    const scope = callerLines(caller, 'm.line_id', 'm.org_id');
    const [row] = await queryNamed<Array<{ id: string }>>(manager, `SELECT m.id FROM messages m WHERE m.id = :messageId AND ${scope.sql}`, {
      messageId,
      ...scope.parameters,
    });
    return row !== undefined;
  }

  /** The message as tools show it; null once it is gone (its thread deleted since it was queued). */
  async view(messageId: string): Promise<SerializedMessage | null> {
    const [row] = await queryNamed<Array<Parameters<typeof serializeMessage>[0]>>(
      this.dataSource.manager,
      `SELECT m.id, m.thread_id, m.channel, m.direction, m.status, m.body, m.created_at, m.sent_at, m.send_at, m.from_value, m.from_kind, m.to_value, m.to_kind
         FROM messages m WHERE m.id = :messageId`,
      { messageId },
    );
    return row ? serializeMessage(row) : null;
  }

  /** The latest outbound messages on the lines the caller may use, newest first, with their subject and (when FAILED) why. */
  async recent(caller: Principal, limit: number): Promise<OutboxMessage[]> {
    const scope = callerLines(caller, 'm.line_id', 'm.org_id');
    const rows = await queryNamed<Array<Parameters<typeof serializeMessage>[0] & { subject: string | null; error: string | null }>>(
      this.dataSource.manager,
      `SELECT m.id, m.thread_id, m.channel, m.direction, m.status, m.body, m.created_at, m.sent_at, m.send_at, m.from_value, m.from_kind, m.to_value, m.to_kind,
              m.subject, CASE WHEN m.status = 'FAILED' THEN m.error END AS error
         FROM messages m
        WHERE m.direction = 'OUTBOUND' AND ${scope.sql}
        ORDER BY m.created_at DESC, m.id DESC
        LIMIT :limit`,
      { ...scope.parameters, limit },
    );
    return rows.map((row) => ({ ...serializeMessage(row), subject: row.subject, error: row.error }));
  }

  /** The message's org and line. */
  async placeOf(manager: EntityManager, messageId: string): Promise<{ org_id: string; line_id: string }> {
    const [row] = await queryNamed<Array<{ org_id: string; line_id: string }>>(manager, `SELECT org_id, line_id FROM messages WHERE id = :messageId`, {
      messageId,
    });
    return row;
  }

  /**
   * The SCHEDULED message if its time has come, locked FOR UPDATE SKIP LOCKED in the caller's
   * transaction: of replicas (a delayed job and a sweep, or two sweeps) releasing it at once, one
   * gets it, the others nothing.
   */
  async lockDue(manager: EntityManager, messageId: string): Promise<DueMessageRow | undefined> {
    const [row] = await queryNamed<DueMessageRow[]>(
      manager,
      `SELECT id, org_id, thread_id, line_id, channel, body, html, subject, from_value, from_kind, to_value, to_kind,
              sent_by_user_id, sent_by_key_id, send_at
         FROM messages WHERE id = :messageId AND status = 'SCHEDULED' AND send_at <= now()
          FOR UPDATE SKIP LOCKED`,
      { messageId },
    );
    return row;
  }

  /** Whether the message is SCHEDULED for a time the database's clock has not reached. */
  async scheduledAhead(manager: EntityManager, messageId: string): Promise<boolean> {
    const [row] = await queryNamed<Array<{ id: string }>>(
      manager,
      `SELECT id FROM messages WHERE id = :messageId AND status = 'SCHEDULED' AND send_at > now()`,
      { messageId },
    );
    return row !== undefined;
  }

  /** The message on a line the caller may see (callerLines), locked FOR UPDATE in the caller's transaction: its status. */
  async lockForCaller(manager: EntityManager, caller: Principal, messageId: string): Promise<{ status: MessageStatus } | undefined> {
    const scope = callerLines(caller, 'm.line_id', 'm.org_id');
    const [row] = await queryNamed<Array<{ status: MessageStatus }>>(
      manager,
      `SELECT m.status FROM messages m WHERE m.id = :messageId AND m.org_id = :orgId AND ${scope.sql} FOR UPDATE`,
      { messageId, orgId: caller.orgId, ...scope.parameters },
    );
    return row;
  }

  /** For the due sweep: SCHEDULED messages whose time has come (their delayed job may be lost), the earliest first (scheduled_messages: a row while a message is SCHEDULED). */
  dueScheduled(): Promise<Array<{ id: string }>> {
    return queryNamed(this.dataSource.manager, `SELECT message_id AS id FROM scheduled_messages WHERE send_at <= now() ORDER BY send_at LIMIT 500`);
  }

  /** For the sweep: QUEUED messages older than a minute (their hand-off job may be lost), oldest first. */
  staleQueued(): Promise<Array<{ id: string }>> {
    return queryNamed(
      this.dataSource.manager,
      `SELECT id FROM messages WHERE direction = 'OUTBOUND' AND status = 'QUEUED' AND created_at < now() - interval '1 minute'
        ORDER BY created_at LIMIT 500`,
    );
  }
}
