import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { Line } from '../../accounts/line.entity';

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

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
