import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { queryNamed } from '../../database/sql';
import { MailTls } from './mailbox.entity';

/** A mailbox's connection as stored, passwords still sealed. */
export interface MailboxRow {
  line_id: string;
  address: string;
  imap_host: string;
  imap_port: number;
  imap_tls: MailTls;
  imap_username: string;
  smtp_host: string;
  smtp_port: number;
  smtp_tls: MailTls;
  smtp_username: string;
  credentials_version: number;
  created_at: Date;
  updated_at: Date;
}

export interface SealedServer {
  host: string;
  port: number;
  tls: MailTls;
  username: string;
  passwordSealed: string;
}

const COLUMNS = `m.line_id, l.address, m.imap_host, m.imap_port, m.imap_tls, m.imap_username, m.smtp_host, m.smtp_port, m.smtp_tls,
       m.smtp_username, m.credentials_version, m.created_at, m.updated_at`;

/** SQL of mailbox connections. The sealed passwords are read only by `sealedPasswords`. */
@Injectable()
export class MailboxesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** A live line's kind and address, for the admin routes that name it (any org: the operator's surface). */
  async line(lineId: string): Promise<{ id: string; type: string; address: string } | null> {
    const [line] = await queryNamed<Array<{ id: string; type: string; address: string }>>(
      this.dataSource.manager,
      `SELECT id, type, address FROM lines WHERE id = :lineId AND deleted_at IS NULL`,
      { lineId },
    );
    return line ?? null;
  }

  /** Stores the connection, or replaces it (then its credentials_version grows by one). */
  async save(lineId: string, imap: SealedServer, smtp: SealedServer): Promise<MailboxRow> {
    await queryNamed(
      this.dataSource.manager,
      `INSERT INTO mailboxes (line_id, imap_host, imap_port, imap_tls, imap_username, imap_password_sealed,
                              smtp_host, smtp_port, smtp_tls, smtp_username, smtp_password_sealed)
       VALUES (:lineId, :imapHost, :imapPort, :imapTls, :imapUsername, :imapPassword,
               :smtpHost, :smtpPort, :smtpTls, :smtpUsername, :smtpPassword)
       ON CONFLICT (line_id) DO UPDATE SET
         imap_host = EXCLUDED.imap_host, imap_port = EXCLUDED.imap_port, imap_tls = EXCLUDED.imap_tls,
         imap_username = EXCLUDED.imap_username, imap_password_sealed = EXCLUDED.imap_password_sealed,
         smtp_host = EXCLUDED.smtp_host, smtp_port = EXCLUDED.smtp_port, smtp_tls = EXCLUDED.smtp_tls,
         smtp_username = EXCLUDED.smtp_username, smtp_password_sealed = EXCLUDED.smtp_password_sealed,
         credentials_version = mailboxes.credentials_version + 1, updated_at = now()`,
      {
        lineId,
        imapHost: imap.host,
        imapPort: imap.port,
        imapTls: imap.tls,
        imapUsername: imap.username,
        imapPassword: imap.passwordSealed,
        smtpHost: smtp.host,
        smtpPort: smtp.port,
        smtpTls: smtp.tls,
        smtpUsername: smtp.username,
        smtpPassword: smtp.passwordSealed,
      },
    );
    return (await this.find(lineId))!;
  }

  async find(lineId: string): Promise<MailboxRow | null> {
    const [row] = await queryNamed<MailboxRow[]>(
      this.dataSource.manager,
      `SELECT ${COLUMNS} FROM mailboxes m JOIN lines l ON l.id = m.line_id WHERE m.line_id = :lineId AND l.deleted_at IS NULL`,
      { lineId },
    );
    return row ?? null;
  }

  /** Removes the connection; false when the line had none. */
  async delete(lineId: string): Promise<boolean> {
    const [, deleted] = await queryNamed<[unknown, number]>(this.dataSource.manager, `DELETE FROM mailboxes WHERE line_id = :lineId`, { lineId });
    return deleted > 0;
  }
}
