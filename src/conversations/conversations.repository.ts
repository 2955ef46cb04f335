import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { queryNamed } from '../database/sql';
import { Channel, IdentityKind } from './conversation-vocabulary';
import { liveLineSql } from '../identity/lines.repository';

/** The live line an inbound message was sent to. */
export interface InboundLine {
  id: string;
  org_id: string;
}

/** A partner's phone number or email address, as an inbound message names it. */
export interface PartnerAddress {
  kind: IdentityKind;
  value: string;
  displayName?: string | null;
}

/** An inbound message's columns, as ConversationsService settled them. */
export interface NewInboundMessage {
  channel: Channel;
  body: string;
  html: string | null;
  subject: string | null;
  fromValue: string;
  fromKind: IdentityKind;
  toValue: string;
  toKind: IdentityKind;
  providerMessageId: string;
  headerMessageId: string | null;
  headerInReplyTo: string | null;
  headerReferences: string[];
  headerListUnsubscribe: string | null;
  authSpf: string | null;
  authDkim: string | null;
  authDmarc: string | null;
}

/** What recordSmsMany did for one SMS (its index in the call): the line, the thread (and whether it is new), the message (null: a repeat). */
export interface RecordedSmsRow {
  index: number;
  line_id: string;
  org_id: string;
  thread_id: string;
  thread_inserted: boolean;
  message_id: string | null;
}

/** What the first delivery of a provider message id stored. */
export interface RecordedInboundRow {
  id: string;
  thread_id: string;
  attachment_ids: string[];
}

/**
 * Finds or creates a partner's identity; new ones are orphans, and an existing one keeps its
 * display name. `source` gives (org_id, kind, value, display_name): a VALUES list or a SELECT.
 */
function upsertIdentitySql(source: string): string {
  return `INSERT INTO identities (org_id, kind, value, display_name) ${source}
    ON CONFLICT (org_id, kind, value) DO UPDATE SET display_name = COALESCE(identities.display_name, EXCLUDED.display_name)`;
}

/** upsertIdentitySql for :orgId, :kind, :value, :displayName. */
const UPSERT_IDENTITY = upsertIdentitySql('VALUES (:orgId, :kind, :value, :displayName)');

/** A new message in a thread: one more in its count, and its last activity moves forward to `at` (a SQL expression). */
function threadTouchedSet(at: string): string {
  return `message_count = threads.message_count + 1, last_message_at = GREATEST(threads.last_message_at, ${at})`;
}

/** threadTouchedSet as an UPDATE: the SQL expressions give the thread id and the message time; `from` names a table they read. */
export function touchThreadSql(threadId: string, at: string, from?: string): string {
  return `UPDATE threads SET ${threadTouchedSet(at)} ${from ? `FROM ${from}` : ''} WHERE threads.id = ${threadId}`;
}

/**
 * SQL of recording messages in threads. Inbound recording acts for the provider, not for a
 * caller: the line is found by the address the message was sent to, and every other statement
 * stays in that line's org (the `InboundLine` it takes). The outbound insert touches a thread the
 * caller's transaction already holds. Rules live in ConversationsService.
 */
@Injectable()
export class ConversationsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Stores the inbound message in the thread and touches the thread, in one statement; null when
   * the line recorded this provider message id before (nothing written).
   */
  async insertInbound(
    manager: EntityManager,
    line: InboundLine,
    threadId: string,
    message: NewInboundMessage,
  ): Promise<{ id: string; created_at: Date } | null> {
    const [row] = await queryNamed<Array<{ id: string; created_at: Date }>>(
      manager,
      `WITH message AS (
             INSERT INTO messages (org_id, thread_id, line_id, channel, direction, status, body, html, subject, from_value, from_kind,
                                   to_value, to_kind, provider_message_id, header_message_id, header_in_reply_to, header_references,
                                   header_list_unsubscribe, auth_spf, auth_dkim, auth_dmarc, sent_at)
             VALUES (:orgId, :threadId, :lineId, :channel, 'INBOUND', 'RECEIVED', :body, :html, :subject, :fromValue, :fromKind, :toValue, :toKind,
                     :providerMessageId, :headerMessageId, :headerInReplyTo, :headerReferences, :headerListUnsubscribe, :authSpf, :authDkim, :authDmarc, now())
             ON CONFLICT (line_id, direction, provider_message_id) WHERE provider_message_id IS NOT NULL DO NOTHING
             RETURNING id, created_at),
           thread AS (${touchThreadSql(':threadId', 'message.created_at', 'message')})
           SELECT id, created_at FROM message`,
      {
        orgId: line.org_id,
        threadId,
        lineId: line.id,
        channel: message.channel,
        body: message.body,
        html: message.html,
        subject: message.subject,
        fromValue: message.fromValue,
        fromKind: message.fromKind,
        toValue: message.toValue,
        toKind: message.toKind,
        providerMessageId: message.providerMessageId,
        headerMessageId: message.headerMessageId,
        headerInReplyTo: message.headerInReplyTo,
        headerReferences: message.headerReferences,
        headerListUnsubscribe: message.headerListUnsubscribe,
        authSpf: message.authSpf,
        authDkim: message.authDkim,
        authDmarc: message.authDmarc,
      },
    );
    return row ?? null;
  }

  /** The message the line recorded for this provider message id, with its attachments' ids in order. */
  async recordedInbound(line: InboundLine, providerMessageId: string): Promise<RecordedInboundRow> {
    const [existing] = await queryNamed<RecordedInboundRow[]>(
      this.dataSource.manager,
      `SELECT m.id, m.thread_id,
              ARRAY(SELECT a.id::text FROM attachments a WHERE a.message_id = m.id ORDER BY a.created_at, a.id) AS attachment_ids
         FROM messages m WHERE m.line_id = :lineId AND m.direction = 'INBOUND' AND m.provider_message_id = :providerMessageId`,
      { lineId: line.id, providerMessageId },
    );
    return existing;
  }

  /** The identity of a phone number or email address in the line's org, created as an orphan when new; answers its id. */
  async upsertIdentity(manager: EntityManager, line: InboundLine, partner: PartnerAddress): Promise<string> {
    const [row] = await queryNamed<Array<{ id: string }>>(manager, `${UPSERT_IDENTITY} RETURNING id`, {
      orgId: line.org_id,
      kind: partner.kind,
      value: partner.value,
      displayName: partner.displayName ?? null,
    });
    return row.id;
  }

  /**
   * Inbound SMS in one statement (one round trip for any number of them): for each, the live line
   * with the address, the partner's identity and the line's SMS thread with them (both upserted;
   * the thread counts the message and its last activity moves), then the message. Answers one row
   * per SMS whose line exists, with its index in `sms`; `message_id` null when the line recorded
   * this provider message id before (the thread was counted all the same: the caller rolls back).
   *
   * A message's time is taken once its thread's row is locked (clock_timestamp(), not the
   * transaction's start), and is the thread's last activity: messages of a thread are in the
   * order their transactions recorded them, whichever began first, so each message's event data
   * ends with it.
   *
   * The SMS must be of distinct threads (a thread is upserted at most once per statement), and
   * concurrent callers should pass them in one order (by line address, then partner) so that
   * their row locks are taken in that order.
   */
  async recordSmsMany(
    manager: EntityManager,
    sms: Array<{ lineAddress: string; partner: PartnerAddress; message: NewInboundMessage }>,
  ): Promise<RecordedSmsRow[]> {
    return queryNamed<RecordedSmsRow[]>(
      manager,
      `WITH input AS (${
        sms.length === 1
          ? // One SMS as plain parameters: the generic plan of one-element arrays measured slower.
            `SELECT :lineAddress::text AS line_address, :kind::text AS kind, :partnerValue::text AS value, :displayName::text AS display_name,
                    :body::text AS body, :toValue::text AS to_value, :toKind::text AS to_kind, :providerMessageId::text AS provider_message_id, 1::bigint AS n`
          : `SELECT * FROM unnest(:lineAddresses::text[], :kinds::text[], :partnerValues::text[], :displayNames::text[], :bodies::text[],
                                  :toValues::text[], :toKinds::text[], :providerMessageIds::text[]) WITH ORDINALITY
                      AS x(line_address, kind, value, display_name, body, to_value, to_kind, provider_message_id, n)`
      }),
           line AS (
             SELECT x.n, l.id, l.org_id FROM input x
               JOIN lines l ON l.address = x.line_address AND l.type = 'PHONE_NUMBER' AND ${liveLineSql('l')}),
           identity AS (${upsertIdentitySql(
             `SELECT DISTINCT ON (line.org_id, x.kind, x.value) line.org_id, x.kind, x.value, x.display_name
                FROM input x JOIN line ON line.n = x.n ORDER BY line.org_id, x.kind, x.value, x.n`,
           )} RETURNING id, org_id, kind, value),
           thread AS (
             INSERT INTO threads (org_id, line_id, channel, partner_identity_id, last_message_at, message_count)
             SELECT line.org_id, line.id, 'SMS', identity.id, clock_timestamp(), 1
               FROM input x JOIN line ON line.n = x.n
               JOIN identity ON identity.org_id = line.org_id AND identity.kind = x.kind AND identity.value = x.value
              ORDER BY x.n
             ON CONFLICT (line_id, partner_identity_id) WHERE channel = 'SMS'
             DO UPDATE SET ${threadTouchedSet('clock_timestamp()')}
             RETURNING id, line_id, partner_identity_id, (xmax = 0) AS inserted, last_message_at AS at),
           message AS (
             INSERT INTO messages (org_id, thread_id, line_id, channel, direction, status, body, from_value, from_kind, to_value, to_kind,
                                   provider_message_id, created_at, sent_at)
             SELECT line.org_id, thread.id, line.id, 'SMS', 'INBOUND', 'RECEIVED', x.body, x.value, x.kind, x.to_value, x.to_kind, x.provider_message_id,
                    thread.at, thread.at
               FROM input x JOIN line ON line.n = x.n
               JOIN identity ON identity.org_id = line.org_id AND identity.kind = x.kind AND identity.value = x.value
               JOIN thread ON thread.line_id = line.id AND thread.partner_identity_id = identity.id
              ORDER BY x.n
             ON CONFLICT (line_id, direction, provider_message_id) WHERE provider_message_id IS NOT NULL DO NOTHING
             RETURNING id, line_id, provider_message_id)
       SELECT (x.n - 1)::int AS index, line.id AS line_id, line.org_id, thread.id AS thread_id, thread.inserted AS thread_inserted, message.id AS message_id
         FROM input x JOIN line ON line.n = x.n
         JOIN identity ON identity.org_id = line.org_id AND identity.kind = x.kind AND identity.value = x.value
         JOIN thread ON thread.line_id = line.id AND thread.partner_identity_id = identity.id
         LEFT JOIN message ON message.line_id = line.id AND message.provider_message_id = x.provider_message_id
        ORDER BY x.n`,
      sms.length === 1
        ? {
            lineAddress: sms[0].lineAddress,
            kind: sms[0].partner.kind,
            partnerValue: sms[0].partner.value,
            displayName: sms[0].partner.displayName ?? null,
            body: sms[0].message.body,
            toValue: sms[0].message.toValue,
            toKind: sms[0].message.toKind,
            providerMessageId: sms[0].message.providerMessageId,
          }
        : {
            lineAddresses: sms.map((s) => s.lineAddress),
            kinds: sms.map((s) => s.partner.kind),
            partnerValues: sms.map((s) => s.partner.value),
            displayNames: sms.map((s) => s.partner.displayName ?? null),
            bodies: sms.map((s) => s.message.body),
            toValues: sms.map((s) => s.message.toValue),
            toKinds: sms.map((s) => s.message.toKind),
            providerMessageIds: sms.map((s) => s.message.providerMessageId),
          },
    );
  }

  /** The thread of the first of `headerMessageIds` (Message-ID headers) that a message on the line carries; null when none does. */
  async threadByHeaderMessageId(manager: EntityManager, line: InboundLine, headerMessageIds: string[]): Promise<string | null> {
    const [match] = await queryNamed<Array<{ thread_id: string }>>(
      manager,
      `SELECT thread_id FROM messages WHERE line_id = :lineId AND header_message_id = ANY (:candidates::text[])
          ORDER BY array_position(:candidates::text[], header_message_id) LIMIT 1`,
      { lineId: line.id, candidates: headerMessageIds },
    );
    return match?.thread_id ?? null;
  }

  /** A new email thread of the line with the partner's identity; answers its id. */
  async insertEmailThread(manager: EntityManager, line: InboundLine, partnerIdentityId: string, subject: string | null): Promise<string> {
    const [row] = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO threads (org_id, line_id, channel, partner_identity_id, subject, last_message_at)
       VALUES (:orgId, :lineId, 'EMAIL', :partnerIdentityId, :subject, now()) RETURNING id`,
      { orgId: line.org_id, lineId: line.id, partnerIdentityId, subject },
    );
    return row.id;
  }
}
