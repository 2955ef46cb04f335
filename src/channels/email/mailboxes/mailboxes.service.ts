import { Injectable, OnModuleInit } from '@nestjs/common';
import { AccountsService } from '../../../accounts/accounts.service';
import { PrincipalRef } from '../../../identity/principal';
import { roleAtLeast, UserRole } from '../../../identity/roles';
import { ForbiddenError, NotFoundError, ValidationError } from '../../../common/errors';
import { SecretBox } from '../../../common/secret-box';
import { MailboxHealth, MailboxHealthService } from '../mailbox-health/mailbox-health.service';
import { MailServers, MailServerSettings } from './mail-servers';
import { MailboxesRepository, MailboxRow } from './mailboxes.repository';
import { LinesRepository } from '../../../identity/lines.repository';

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

/** An email account line of an org as Settings → Mailboxes lists it: its connection (if any) and its sync's health (if it reported). */
export interface EmailAccountMailbox {
  lineId: string;
  emailAddress: string;
  mailbox: MailboxView | null;
  /** The health the sync last reported; null while not connected or never reported. */
  health: MailboxHealth | null;
}

export type MailboxSettingsInput = { imap: MailServerSettings; smtp: MailServerSettings };

/** Who may connect, change and disconnect an org's mailboxes from the web app: an ADMIN, and an OWNER above. */
export const MAILBOX_MANAGER_ROLE: UserRole = 'ADMIN';

export function mayManageMailboxes(role: UserRole): boolean {
  return roleAtLeast(role, MAILBOX_MANAGER_ROLE);
}

/**
 * Connecting an email account line to its mailbox (docs/mailboxes.md): the servers must pass the
 * address policy and accept the login before anything is saved, so a stored mailbox is one that
 * worked at least once. Passwords are sealed with SECRETS_KEY and never shown again.
 *
 * Two surfaces, one rule: the operator (admin routes) acts on any org's line by id; a person
 * (Settings → Mailboxes) only on their own org's lines, and only as an OWNER or ADMIN (`…For`).
 */
@Injectable()
export class MailboxesService implements OnModuleInit {
  constructor(
    private readonly mailboxes: MailboxesRepository,
    private readonly servers: MailServers,
    private readonly box: SecretBox,
    private readonly accounts: AccountsService,
    private readonly lines: LinesRepository,
    private readonly health: MailboxHealthService,
  ) {}

  onModuleInit(): void {
    // A deleted line's mailbox goes with it: its passwords must not outlive it.
    this.accounts.lineDeleted.add('delete the mailbox', async (tx, lineId) => void (await this.mailboxes.delete(lineId, tx)));
  }

  async connect(lineId: string, input: MailboxSettingsInput): Promise<MailboxView> {
    await this.emailLine(lineId);
    return this.verifyAndSave(lineId, input);
  }

  async get(lineId: string): Promise<MailboxView> {
    await this.emailLine(lineId);
    const row = await this.mailboxes.find(lineId);
    if (!row) throw new NotFoundError(`line ${lineId} has no mailbox connected`, 'lineId');
    return toView(row);
  }

  async disconnect(lineId: string): Promise<void> {
    await this.emailLine(lineId);
    await this.deleteConnection(lineId);
  }

  /** The person's org's email account lines, by address, with their connections and health. Forbidden below ADMIN. */
  async listFor(person: PrincipalRef): Promise<EmailAccountMailbox[]> {
    await this.checkManager(person);
    const accounts = await this.mailboxes.emailAccountsOf(person.orgId);
    const health = await this.health.healthOf(accounts.filter((a) => a.mailbox).map((a) => a.lineId));
    return accounts.map((a) => ({
      lineId: a.lineId,
      emailAddress: a.address,
      mailbox: a.mailbox ? toView(a.mailbox) : null,
      health: health.get(a.lineId) ?? null,
    }));
  }

  /** One email account line of the person's org, connected or not. Another org's line is not found. */
  async getFor(person: PrincipalRef, lineId: string): Promise<EmailAccountMailbox> {
    await this.checkManager(person);
    const line = await this.emailLine(lineId, person.orgId);
    const row = await this.mailboxes.find(lineId);
    const health = row ? await this.health.healthOf([lineId]) : new Map<string, MailboxHealth>();
    return { lineId, emailAddress: line.address, mailbox: row ? toView(row) : null, health: health.get(lineId) ?? null };
  }

  /** `connect` for a person: a line of their org, as an OWNER or ADMIN. */
  async connectFor(person: PrincipalRef, lineId: string, input: MailboxSettingsInput): Promise<MailboxView> {
    await this.checkManager(person);
    await this.emailLine(lineId, person.orgId);
    return this.verifyAndSave(lineId, input);
  }

  /** `disconnect` for a person: a line of their org, as an OWNER or ADMIN. */
  async disconnectFor(person: PrincipalRef, lineId: string): Promise<void> {
    await this.checkManager(person);
    await this.emailLine(lineId, person.orgId);
    await this.deleteConnection(lineId);
  }

  /** Saves the connection once both servers pass the address policy and accept the login. */
  private async verifyAndSave(lineId: string, input: MailboxSettingsInput): Promise<MailboxView> {
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
    // Deleted while the logins were checked: nothing is stored.
    if (!row) throw NotFoundError.of('line', lineId, 'lineId');
    return toView(row);
  }

  private async deleteConnection(lineId: string): Promise<void> {
    if (!(await this.mailboxes.delete(lineId))) throw new NotFoundError(`line ${lineId} has no mailbox connected`, 'lineId');
  }

  /** A live EMAIL_ACCOUNT line (of `orgId` when given: another org's line is not found). */
  private async emailLine(lineId: string, orgId?: string): Promise<{ address: string }> {
    const line = await this.lines.liveLine(lineId, { orgId });
    if (!line) throw NotFoundError.of('line', lineId, 'lineId');
    if (line.type !== 'EMAIL_ACCOUNT') throw new ValidationError(`line ${lineId} is a ${line.type} line: only EMAIL_ACCOUNT lines have a mailbox`, 'lineId');
    return line;
  }

  /** The person's role as it is now (a session's may be older than a demotion) must be ADMIN or OWNER. */
  private async checkManager(person: PrincipalRef): Promise<void> {
    const user = await this.accounts.getUser(person.userId);
    if (user.orgId !== person.orgId || !mayManageMailboxes(user.role)) {
      throw new ForbiddenError('only an OWNER or ADMIN of the organization may connect and disconnect its mailboxes');
    }
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
