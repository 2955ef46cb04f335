import { Inject, Injectable } from '@nestjs/common';
import { ImapFlow } from 'imapflow';
import { createTransport } from 'nodemailer';
import { UnprocessableError, ValidationError } from '../../../common/errors';
import { AppConfig } from '../../../config/app-config';
import { APP_CONFIG } from '../../../config/config.module';
import { classify, describeAddress, HOST_RESOLVER, HostResolver } from '../../../outbound-http';
import { MailTls } from './mailbox.entity';

export type MailServerRole = 'imap' | 'smtp';

/** Where and how to log in to one mail server; the password in clear only in memory. */
export interface MailServerSettings {
  host: string;
  port: number;
  tls: MailTls;
  username: string;
  password: string;
}

/** Why a login or a session with a mail server failed, in the words an operator acts on. */
export type MailLoginFailure = 'auth' | 'rate_limit' | 'connection' | 'tls' | 'timeout';

/** 422: the server refused the login or could not be reached; `reason` says which, `field` names the server (`imap`, `smtp`). */
export class MailLoginError extends UnprocessableError {
  constructor(
    message: string,
    field: MailServerRole,
    readonly reason: MailLoginFailure,
  ) {
    super(message, field);
  }
}

/** Names mail clients give the Sent folder when the server marks none. */
const SENT_NAMES = /^(sent|sent items|sent messages|sent mail)$/i;
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_(GET|VERIFY)_)/;
const THROTTLED = /\[(LIMIT|UNAVAILABLE)\]|too many (connections|requests)|rate limit|throttl/i;
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ETIMEOUT', 'CONNECT_TIMEOUT', 'GREETING_TIMEOUT', 'NoConnection']);

/**
 * The mail servers of mailboxes, as the service reaches them (docs/mailboxes.md): a host must
 * resolve only to public addresses (or to MAIL_ALLOWED_CIDRS), since connecting to a private one
 * on an operator's say-so is server-side request forgery like a webhook URL would be; the
 * connection then goes to the address checked (resolve, check, pin), with the host name kept for
 * TLS. Plain-text connections are refused outside development.
 */
@Injectable()
export class MailServers {
  private readonly config: AppConfig['mail'];

  constructor(
    @Inject(HOST_RESOLVER) private readonly resolver: HostResolver,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.config = config.mail;
  }

  /** The settings' rules that need no network: TLS mode. Throws ValidationError naming `<role>.tls`. */
  checkSettings(role: MailServerRole, settings: MailServerSettings): void {
    if (settings.tls === 'none' && !this.config.allowPlaintext) {
      throw new ValidationError(`${role}.tls none sends the password in clear; it is allowed only in development: use implicit or starttls`, `${role}.tls`);
    }
  }

  /** The address to connect to: the host's (every one it resolves to must be allowed). Throws ValidationError naming `<role>.host`. */
  async address(role: MailServerRole, host: string): Promise<string> {
    const field = `${role}.host`;
    let addresses: string[];
    try {
      addresses = await this.resolver.resolve(host);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new ValidationError(`${field} ${host} could not be resolved${code ? ` (${code})` : ''}`, field);
    }
    if (addresses.length === 0) throw new ValidationError(`${field} ${host} does not resolve to any address`, field);
    for (const address of addresses) {
      const classification = classify(address, this.config.allowedCidrs);
      if (!classification.allowed) {
        throw new ValidationError(
          `${field} ${host} resolves to ${describeAddress(classification)}; mail servers must be public (or in MAIL_ALLOWED_CIDRS)`,
          field,
        );
      }
    }
    return addresses[0];
  }

  /** Logs in to the IMAP server at `address` (from `address()`) and out again. Throws MailLoginError (422) saying why it failed. */
  async verifyImap(settings: MailServerSettings, address: string): Promise<void> {
    const client = this.imapClient(settings, address);
    client.on('error', () => undefined); // a late socket error after the answer below
    try {
      await client.connect();
    } catch (error) {
      throw this.loginError('imap', settings, error);
    }
    await client.logout().catch(() => client.close());
  }

  /** Greets the SMTP server at `address` (from `address()`) and authenticates. Throws MailLoginError (422) saying why it failed. */
  async verifySmtp(settings: MailServerSettings, address: string): Promise<void> {
    const transport = this.smtpTransport(settings, address);
    try {
      await transport.verify();
    } catch (error) {
      throw this.loginError('smtp', settings, error);
    } finally {
      transport.close();
    }
  }

  /**
   * Appends a sent message to the mailbox's Sent folder, marked seen, as a mail client does after
   * sending: the folder the server marks \Sent (RFC 6154), else one named like it, else a new
   * `Sent`. Answers the folder's path.
   */
  async appendToSent(settings: MailServerSettings, raw: Buffer): Promise<string> {
    const client = this.imapClient(settings, await this.address('imap', settings.host));
    client.on('error', () => undefined);
    await client.connect();
    try {
      const folders = await client.list();
      let sent = folders.find((f) => f.specialUse === '\\Sent')?.path ?? folders.find((f) => SENT_NAMES.test(f.name))?.path;
      if (!sent) {
        await client.mailboxCreate('Sent');
        sent = 'Sent';
      }
      await client.append(sent, raw, ['\\Seen']);
      return sent;
    } finally {
      await client.logout().catch(() => client.close());
    }
  }

  /** An IMAP client for the checked address; TLS checks the certificate against the host name. */
  imapClient(settings: MailServerSettings, address: string): ImapFlow {
    return new ImapFlow({
      host: address,
      port: settings.port,
      secure: settings.tls === 'implicit',
      doSTARTTLS: settings.tls === 'starttls' ? true : settings.tls === 'none' ? false : undefined,
      servername: settings.host,
      tls: { servername: settings.host, rejectUnauthorized: true },
      auth: { user: settings.username, pass: settings.password },
      connectionTimeout: this.config.connectTimeoutMs,
      greetingTimeout: this.config.connectTimeoutMs,
      socketTimeout: 5 * 60_000,
      logger: false,
    });
  }

  smtpTransport(settings: MailServerSettings, address: string) {
    return createTransport({
      host: address,
      port: settings.port,
      secure: settings.tls === 'implicit',
      requireTLS: settings.tls === 'starttls',
      ignoreTLS: settings.tls === 'none',
      tls: { servername: settings.host, rejectUnauthorized: true },
      auth: { user: settings.username, pass: settings.password },
      connectionTimeout: this.config.connectTimeoutMs,
      greetingTimeout: this.config.connectTimeoutMs,
      socketTimeout: this.config.connectTimeoutMs,
    });
  }

  private loginError(role: MailServerRole, settings: MailServerSettings, error: unknown): MailLoginError {
    const reason = mailFailureOf(role, error);
    const where = `${settings.host}:${settings.port}`;
    const detail = errorText(error);
    const words: Record<MailLoginFailure, string> = {
      auth: `${where} refused the login of ${settings.username} (wrong username or password)`,
      rate_limit: `${where} is throttling this account; try again later`,
      connection: `${where} could not be reached`,
      tls: `the TLS handshake with ${where} failed`,
      timeout: `${where} did not answer within ${this.config.connectTimeoutMs} ms`,
    };
    return new MailLoginError(`${role}: ${words[reason]}${detail ? `: ${detail}` : ''}`, role, reason);
  }
}

/**
 * What a mail server's error means, for the connection check and the sync alike: throttling
 * (RFC 5530's [LIMIT] / [UNAVAILABLE], or the usual words), a refused login, TLS, a timeout, or
 * otherwise a connection that failed. Throttling comes first: servers throttle by refusing the
 * login (Dovecot answers `NO [LIMIT] Maximum number of connections from user+IP exceeded`, which
 * imapflow reports as a failed authentication), and those credentials are not wrong.
 */
export function mailFailureOf(role: MailServerRole, error: unknown): MailLoginFailure {
  const e = error as { code?: string; authenticationFailed?: boolean; responseText?: string; response?: string; message?: string };
  if (THROTTLED.test(`${e.responseText ?? ''} ${e.response ?? ''} ${e.message ?? ''}`)) return 'rate_limit';
  if (role === 'imap' ? e.authenticationFailed === true : e.code === 'EAUTH') return 'auth';
  const code = e.code ?? '';
  if (TLS_CODES.test(code) || /certificate|TLS|SSL/i.test(e.message ?? '')) return 'tls';
  if (TIMEOUT_CODES.has(code) || /timed? ?out/i.test(e.message ?? '')) return 'timeout';
  return 'connection';
}

/** The error's own words, short, on one line: never the password (no library puts it there). */
export function errorText(error: unknown): string {
  const e = error as { code?: string; response?: string; responseText?: string; message?: string };
  const text = e.responseText ?? e.response ?? e.message ?? '';
  const oneLine = String(text).replace(/\s+/g, ' ').trim().slice(0, 200);
  return [e.code, oneLine].filter(Boolean).join(' ');
}
