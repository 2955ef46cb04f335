import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../../identity/principal';
import { queryNamed } from '../../database/sql';
import { MailTls } from './mailboxes/mailbox.entity';

/** What the SMTP hand-off sends of a message. */
export interface MailRow {
  from_value: string;
  to_value: string;
  subject: string | null;
  body: string;
  html: string | null;
  header_message_id: string | null;
  header_in_reply_to: string | null;
  header_references: string[];
  /** The line's own mailbox (docs/mailboxes.md), when it has one: sent through its SMTP server, copied to its Sent folder. */
  mailbox: MailboxServers | null;
}

/** The servers of a line's mailbox, passwords sealed. */
export interface MailboxServers {
  smtp: { host: string; port: number; tls: MailTls; username: string; passwordSealed: string };
  imap: { host: string; port: number; tls: MailTls; username: string; passwordSealed: string };
}

/**
 * SQL of email outside open tracking: the thread (and partner) send_email starts, which takes the
 * `Principal` and writes in its org; the mail the hand-off job sends, and the email accounts an
 * inbound message may be for, both acting for the system (the job on a message id it holds, the
 * ingest route on the recipients a mail server gave). Replies read their thread through
 * OutboundRepository.
 */
@Injectable()
export class EmailMessagesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * A new email thread of the caller's org on `lineId` (one of the caller's email accounts, as the
   * service checked), with `to` as its partner: the org's identity for that address, created
   * (orphan, with no contact) if new. Answers the thread id.
   */
  async startThread(manager: EntityManager, caller: Principal, lineId: string, to: string, subject: string): Promise<string> {
    const [identity] = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO identities (org_id, kind, value) VALUES (:orgId, 'EMAIL', :to)
       ON CONFLICT (org_id, kind, value) DO UPDATE SET value = EXCLUDED.value
       RETURNING id`,
      { orgId: caller.orgId, to },
    );
    const [thread] = await queryNamed<Array<{ id: string }>>(
      manager,
      `INSERT INTO threads (org_id, line_id, channel, partner_identity_id, subject, last_message_at)
       VALUES (:orgId, :lineId, 'EMAIL', :identityId, :subject, now()) RETURNING id`,
      { orgId: caller.orgId, lineId, identityId: identity.id, subject },
    );
    return thread.id;
  }

  /** For the hand-off job: the message to send. */
  async mail(messageId: string): Promise<MailRow | undefined> {
    const [row] = await queryNamed<Array<Omit<MailRow, 'mailbox'> & { mailbox: MailboxServers | null }>>(
      this.dataSource.manager,
      `SELECT m.from_value, m.to_value, m.subject, m.body, m.html, m.header_message_id, m.header_in_reply_to, m.header_references,
              CASE WHEN mb.id IS NULL THEN NULL ELSE json_build_object(
                'smtp', json_build_object('host', mb.smtp_host, 'port', mb.smtp_port, 'tls', mb.smtp_tls, 'username', mb.smtp_username,
                                          'passwordSealed', mb.smtp_password_sealed),
                'imap', json_build_object('host', mb.imap_host, 'port', mb.imap_port, 'tls', mb.imap_tls, 'username', mb.imap_username,
                                          'passwordSealed', mb.imap_password_sealed)) END AS mailbox
         FROM messages m LEFT JOIN mailboxes mb ON mb.line_id = m.line_id
        WHERE m.id = :messageId`,
      { messageId },
    );
    return row;
  }

  /** For the hand-off job: sets the message's Message-ID unless it has one; answers the one it has now. */
  async fixMessageId(messageId: string, headerMessageId: string): Promise<string> {
    // An UPDATE ... RETURNING answers [rows, affected count].
    const [[row]] = await queryNamed<[Array<{ header_message_id: string }>, number]>(
      this.dataSource.manager,
      `UPDATE messages SET header_message_id = COALESCE(header_message_id, :headerMessageId) WHERE id = :messageId RETURNING header_message_id`,
      { messageId, headerMessageId },
    );
    return row.header_message_id;
  }
}
