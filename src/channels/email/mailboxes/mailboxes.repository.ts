import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { queryNamed } from '../../../database/sql';
import { MailTls } from './mailbox.entity';
import { LinesRepository, liveLineSql } from '../../../identity/lines.repository';

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

/** A mailbox as its sync reads it. */
export interface SyncRow extends MailboxRow {
  imap_password_sealed: string;
  /** bigint as text: UIDVALIDITY is a 32-bit unsigned number, more than an int holds. */
  uid_validity: string | null;
  last_uid: string | null;
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
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly lines: LinesRepository,
  ) {}

  /** The org's live email account lines, by address, each with its mailbox's connection when it has one. */
  async emailAccountsOf(orgId: string): Promise<Array<{ lineId: string; address: string; mailbox: MailboxRow | null }>> {
    const rows = await queryNamed<Array<MailboxRow & { connected: boolean }>>(
      this.dataSource.manager,
      `SELECT l.id AS line_id, l.address, (m.id IS NOT NULL) AS connected, m.imap_host, m.imap_port, m.imap_tls, m.imap_username,
              m.smtp_host, m.smtp_port, m.smtp_tls, m.smtp_username, m.credentials_version, m.created_at, m.updated_at
         FROM lines l LEFT JOIN mailboxes m ON m.line_id = l.id
        WHERE l.org_id = :orgId AND l.type = 'EMAIL_ACCOUNT' AND ${liveLineSql('l')}
        ORDER BY l.address, l.id`,
      { orgId },
    );
    return rows.map(({ connected, ...row }) => ({ lineId: row.line_id, address: row.address, mailbox: connected ? row : null }));
  }

  /** Stores the connection, or replaces it (then its credentials_version grows by one). */
  /**
   * Stores the connection, or replaces it; null when the line is not live. The line's row is held
   * (FOR SHARE) until the connection is stored, so a line deleted meanwhile (its deletion removes
   * the mailbox in the same transaction) either waits for this and removes it, or is seen here.
   */
  async save(lineId: string, imap: SealedServer, smtp: SealedServer): Promise<MailboxRow | null> {
    return this.dataSource.transaction(async (tx) => {
      if (!(await this.lines.liveLine(lineId, { manager: tx, lock: true }))) return null;
      await this.upsert(tx, lineId, imap, smtp);
      return this.find(lineId, tx);
    });
  }

  private async upsert(tx: EntityManager, lineId: string, imap: SealedServer, smtp: SealedServer): Promise<void> {
    await queryNamed(
      tx,
      `INSERT INTO mailboxes (line_id, imap_host, imap_port, imap_tls, imap_username, imap_password_sealed,
                              smtp_host, smtp_port, smtp_tls, smtp_username, smtp_password_sealed)
       VALUES (:lineId, :imapHost, :imapPort, :imapTls, :imapUsername, :imapPassword,
               :smtpHost, :smtpPort, :smtpTls, :smtpUsername, :smtpPassword)
       ON CONFLICT (line_id) DO UPDATE SET
         imap_host = EXCLUDED.imap_host, imap_port = EXCLUDED.imap_port, imap_tls = EXCLUDED.imap_tls,
         imap_username = EXCLUDED.imap_username, imap_password_sealed = EXCLUDED.imap_password_sealed,
         smtp_host = EXCLUDED.smtp_host, smtp_port = EXCLUDED.smtp_port, smtp_tls = EXCLUDED.smtp_tls,
         smtp_username = EXCLUDED.smtp_username, smtp_password_sealed = EXCLUDED.smtp_password_sealed,
         credentials_version = mailboxes.credentials_version + 1, updated_at = now(),
         -- New credentials: the failures counted against the old ones no longer say anything.
         auth_failures = 0, auth_stopped_version = NULL, unreachable_since = NULL,
         -- Another mailbox (server or account): its UIDs start over.
         uid_validity = CASE WHEN mailboxes.imap_host = EXCLUDED.imap_host AND mailboxes.imap_username = EXCLUDED.imap_username
                             THEN mailboxes.uid_validity END,
         last_uid = CASE WHEN mailboxes.imap_host = EXCLUDED.imap_host AND mailboxes.imap_username = EXCLUDED.imap_username
                         THEN mailboxes.last_uid END`,
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
  }

  async find(lineId: string, manager: EntityManager = this.dataSource.manager): Promise<MailboxRow | null> {
    const [row] = await queryNamed<MailboxRow[]>(
      manager,
      `SELECT ${COLUMNS} FROM mailboxes m JOIN lines l ON l.id = m.line_id WHERE m.line_id = :lineId AND ${liveLineSql('l')}`,
      { lineId },
    );
    return row ?? null;
  }

  /** Removes the connection; false when the line had none. */
  async delete(lineId: string, manager: EntityManager = this.dataSource.manager): Promise<boolean> {
    const [, deleted] = await queryNamed<[unknown, number]>(manager, `DELETE FROM mailboxes WHERE line_id = :lineId`, { lineId });
    return deleted > 0;
  }

  /**
   * Leases up to `limit` mailboxes that no worker holds (or whose holder stopped renewing), except
   * those stopped at AUTH for their current credentials; answers their line ids. SKIP LOCKED:
   * workers claiming at once take different mailboxes.
   */
  async claim(owner: string, leaseMs: number, limit: number): Promise<string[]> {
    const rows = await queryNamed<[Array<{ line_id: string }>, number]>(
      this.dataSource.manager,
      `UPDATE mailboxes m SET sync_owner = :owner, sync_lease_until = now() + make_interval(secs => :leaseMs / 1000.0)
        WHERE m.id IN (SELECT c.id FROM mailboxes c JOIN lines l ON l.id = c.line_id AND ${liveLineSql('l')}
                        WHERE (c.sync_lease_until IS NULL OR c.sync_lease_until < now())
                          AND (c.auth_stopped_version IS NULL OR c.auth_stopped_version <> c.credentials_version)
                        ORDER BY c.sync_lease_until NULLS FIRST LIMIT :limit FOR UPDATE OF c SKIP LOCKED)
        RETURNING m.line_id`,
      { owner, leaseMs, limit },
    );
    return rows[0].map((r) => r.line_id);
  }

  /** Extends the lease while `owner` holds it; answers the credentials version then, or null when the lease is lost (or the mailbox gone). */
  async renew(lineId: string, owner: string, leaseMs: number): Promise<number | null> {
    const [rows] = await queryNamed<[Array<{ credentials_version: number }>, number]>(
      this.dataSource.manager,
      `UPDATE mailboxes SET sync_lease_until = now() + make_interval(secs => :leaseMs / 1000.0)
        WHERE line_id = :lineId AND sync_owner = :owner RETURNING credentials_version`,
      { lineId, owner, leaseMs },
    );
    return rows[0]?.credentials_version ?? null;
  }

  async release(lineId: string, owner: string): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `UPDATE mailboxes SET sync_owner = NULL, sync_lease_until = NULL WHERE line_id = :lineId AND sync_owner = :owner`,
      {
        lineId,
        owner,
      },
    );
  }

  /** Everything the sync needs, passwords still sealed. */
  async forSync(lineId: string): Promise<SyncRow | null> {
    const [row] = await queryNamed<SyncRow[]>(
      this.dataSource.manager,
      `SELECT ${COLUMNS}, m.imap_password_sealed, m.uid_validity::text, m.last_uid::text
         FROM mailboxes m JOIN lines l ON l.id = m.line_id WHERE m.line_id = :lineId AND ${liveLineSql('l')}`,
      { lineId },
    );
    return row ?? null;
  }

  /** Where the sync stands; written only by the lease holder. */
  async savePosition(lineId: string, owner: string, uidValidity: string, lastUid: number): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `UPDATE mailboxes SET uid_validity = :uidValidity::bigint, last_uid = :lastUid WHERE line_id = :lineId AND sync_owner = :owner`,
      { lineId, owner, uidValidity, lastUid },
    );
  }

  /** A login was refused: answers how many in a row, with the credentials version they were made with. */
  async loginRefused(lineId: string, owner: string): Promise<{ failures: number; credentialsVersion: number } | null> {
    const [rows] = await queryNamed<[Array<{ auth_failures: number; credentials_version: number }>, number]>(
      this.dataSource.manager,
      `UPDATE mailboxes SET auth_failures = auth_failures + 1 WHERE line_id = :lineId AND sync_owner = :owner RETURNING auth_failures, credentials_version`,
      { lineId, owner },
    );
    return rows[0] ? { failures: rows[0].auth_failures, credentialsVersion: rows[0].credentials_version } : null;
  }

  /** The sync stops for these credentials: it is claimed again only once they change. */
  async stopAtAuth(lineId: string, owner: string, credentialsVersion: number): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `UPDATE mailboxes SET auth_stopped_version = :credentialsVersion, sync_owner = NULL, sync_lease_until = NULL WHERE line_id = :lineId AND sync_owner = :owner`,
      { lineId, owner, credentialsVersion },
    );
  }

  /** The server could not be reached: answers since when it cannot (the first failure of the run). */
  async unreachable(lineId: string, owner: string): Promise<Date | null> {
    const [rows] = await queryNamed<[Array<{ unreachable_since: Date }>, number]>(
      this.dataSource.manager,
      `UPDATE mailboxes SET unreachable_since = coalesce(unreachable_since, now()) WHERE line_id = :lineId AND sync_owner = :owner RETURNING unreachable_since`,
      { lineId, owner },
    );
    return rows[0]?.unreachable_since ?? null;
  }

  /** A login worked: the failure counts start over. */
  async reachable(lineId: string, owner: string): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `UPDATE mailboxes SET auth_failures = 0, unreachable_since = NULL WHERE line_id = :lineId AND sync_owner = :owner AND (auth_failures > 0 OR unreachable_since IS NOT NULL)`,
      { lineId, owner },
    );
  }
}
