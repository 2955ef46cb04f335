import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { Line } from '../../../accounts/line.entity';

export const MAIL_TLS_MODES = ['implicit', 'starttls', 'none'] as const;
export type MailTls = (typeof MAIL_TLS_MODES)[number];

/** The IMAP and SMTP servers of an email account line (docs/mailboxes.md); passwords sealed with SECRETS_KEY. */
@Entity({ name: 'mailboxes' })
@Index('mailboxes_line_id_key', ['lineId'], { unique: true })
@Check('mailboxes_imap_host_check', 'length(imap_host) >= 1 AND length(imap_host) <= 253')
@Check('mailboxes_imap_port_check', 'imap_port >= 1 AND imap_port <= 65535')
@Check('mailboxes_imap_tls_check', "imap_tls = ANY (ARRAY['implicit'::text, 'starttls'::text, 'none'::text])")
@Check('mailboxes_imap_username_check', 'length(imap_username) >= 1 AND length(imap_username) <= 320')
@Check('mailboxes_smtp_host_check', 'length(smtp_host) >= 1 AND length(smtp_host) <= 253')
@Check('mailboxes_smtp_port_check', 'smtp_port >= 1 AND smtp_port <= 65535')
@Check('mailboxes_smtp_tls_check', "smtp_tls = ANY (ARRAY['implicit'::text, 'starttls'::text, 'none'::text])")
@Check('mailboxes_smtp_username_check', 'length(smtp_username) >= 1 AND length(smtp_username) <= 320')
@Check('mailboxes_credentials_version_check', 'credentials_version >= 1')
@Check('mailboxes_uid_validity_check', 'uid_validity > 0')
@Check('mailboxes_last_uid_check', 'last_uid >= 0')
@Check('mailboxes_auth_failures_check', 'auth_failures >= 0')
export class Mailbox {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'mailboxes_line_id_fkey' })
  line?: Line;

  @Column({ name: 'imap_host', type: 'text' })
  imapHost: string;

  @Column({ name: 'imap_port', type: 'int' })
  imapPort: number;

  @Column({ name: 'imap_tls', type: 'text' })
  imapTls: MailTls;

  @Column({ name: 'imap_username', type: 'text' })
  imapUsername: string;

  @Column({ name: 'imap_password_sealed', type: 'text', select: false })
  imapPasswordSealed: string;

  @Column({ name: 'smtp_host', type: 'text' })
  smtpHost: string;

  @Column({ name: 'smtp_port', type: 'int' })
  smtpPort: number;

  @Column({ name: 'smtp_tls', type: 'text' })
  smtpTls: MailTls;

  @Column({ name: 'smtp_username', type: 'text' })
  smtpUsername: string;

  @Column({ name: 'smtp_password_sealed', type: 'text', select: false })
  smtpPasswordSealed: string;

  /** Grows with every change of the connection. */
  @Column({ name: 'credentials_version', type: 'int', default: 1 })
  credentialsVersion: number;

  /** The INBOX's UIDVALIDITY when `lastUid` was taken; null before the first sync. */
  @Column({ name: 'uid_validity', type: 'bigint', nullable: true })
  uidValidity: string | null;

  /** The highest UID imported (or skipped as older than the first sync's window). */
  @Column({ name: 'last_uid', type: 'bigint', nullable: true })
  lastUid: string | null;

  /** The worker process syncing the mailbox, until `syncLeaseUntil`. */
  @Column({ name: 'sync_owner', type: 'text', nullable: true })
  syncOwner: string | null;

  @Column({ name: 'sync_lease_until', type: 'timestamptz', nullable: true })
  syncLeaseUntil: Date | null;

  /** Logins refused in a row. */
  @Column({ name: 'auth_failures', type: 'int', default: 0 })
  authFailures: number;

  /** The credentials version the sync stopped at after AUTH: it waits for new credentials. */
  @Column({ name: 'auth_stopped_version', type: 'int', nullable: true })
  authStoppedVersion: number | null;

  /** Since when the server could not be reached, while it cannot. */
  @Column({ name: 'unreachable_since', type: 'timestamptz', nullable: true })
  unreachableSince: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
