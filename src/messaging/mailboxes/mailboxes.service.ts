import { Injectable } from '@nestjs/common';
import { NotFoundError, ValidationError } from '../../common/errors';
import { SecretBox } from '../../common/secret-box';
import { MailServers, MailServerSettings } from './mail-servers';
import { MailboxesRepository, MailboxRow } from './mailboxes.repository';

/** What a connected mailbox shows: its servers and usernames, never a password. */
export interface MailboxView {
  lineId: string;
  emailAddress: string;
  imap: Omit<MailServerSettings, 'password'>;
  smtp: Omit<MailServerSettings, 'password'>;
  /** Grows with every change of the connection. */
  credentialsVersion: number;
  createdAt: string;
  updatedAt: string;
}

/**
 * Connecting an email account line to its mailbox (docs/mailboxes.md): the servers must pass the
 * address policy and accept the login before anything is saved, so a stored mailbox is one that
 * worked at least once. Passwords are sealed with SECRETS_KEY and never shown again.
 */
@Injectable()
export class MailboxesService {
  constructor(
    private readonly mailboxes: MailboxesRepository,
    private readonly servers: MailServers,
    private readonly box: SecretBox,
  ) {}

  async connect(lineId: string, input: { imap: MailServerSettings; smtp: MailServerSettings }): Promise<MailboxView> {
    await this.emailLine(lineId);
    this.servers.checkSettings('imap', input.imap);
    this.servers.checkSettings('smtp', input.smtp);
    // Every rule that needs no connection first: nothing is contacted for a request refused anyway.
    const imapAddress = await this.servers.address('imap', input.imap.host);
    const smtpAddress = await this.servers.address('smtp', input.smtp.host);
    // Both logins at once (each may take up to MAIL_CONNECT_TIMEOUT_MS); when both fail, IMAP's is reported.
    const [imap, smtp] = await Promise.allSettled([this.servers.verifyImap(input.imap, imapAddress), this.servers.verifySmtp(input.smtp, smtpAddress)]);
    if (imap.status === 'rejected') throw imap.reason;
    if (smtp.status === 'rejected') throw smtp.reason;
    const row = await this.mailboxes.save(lineId, this.sealed(input.imap), this.sealed(input.smtp));
    return toView(row);
  }

  async get(lineId: string): Promise<MailboxView> {
    await this.emailLine(lineId);
    const row = await this.mailboxes.find(lineId);
    if (!row) throw new NotFoundError(`line ${lineId} has no mailbox connected`, 'lineId');
    return toView(row);
  }

  async disconnect(lineId: string): Promise<void> {
    await this.emailLine(lineId);
    if (!(await this.mailboxes.delete(lineId))) throw new NotFoundError(`line ${lineId} has no mailbox connected`, 'lineId');
  }

  private async emailLine(lineId: string): Promise<void> {
    const line = await this.mailboxes.line(lineId);
    if (!line) throw NotFoundError.of('line', lineId, 'lineId');
    if (line.type !== 'EMAIL_ACCOUNT') throw new ValidationError(`line ${lineId} is a ${line.type} line: only EMAIL_ACCOUNT lines have a mailbox`, 'lineId');
  }

  private sealed(server: MailServerSettings) {
    return { host: server.host, port: server.port, tls: server.tls, username: server.username, passwordSealed: this.box.seal(server.password) };
  }
}

function toView(row: MailboxRow): MailboxView {
  return {
    lineId: row.line_id,
    emailAddress: row.address,
    imap: { host: row.imap_host, port: row.imap_port, tls: row.imap_tls, username: row.imap_username },
    smtp: { host: row.smtp_host, port: row.smtp_port, tls: row.smtp_tls, username: row.smtp_username },
    credentialsVersion: row.credentials_version,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
