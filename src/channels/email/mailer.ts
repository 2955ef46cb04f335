import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { SendMailOptions } from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { DomainError } from '../../common/errors';
import { SecretBox } from '../../common/secret-box';
import { MailRelay } from './mail-relays';
import { MailServers, MailServerSettings } from './mailboxes/mail-servers';
import { newMessageId } from '../../conversations/outbound/email-format';
import { OutboundChannel, OutboundChannels } from '../../conversations/outbound/outbound-channels';
import { HANDOFF_ATTEMPTS, OutboundService } from '../../conversations/outbound/outbound.service';
import { EmailMessagesRepository, MailboxServers, MailRow } from './email-messages.repository';

/** What became of one hand-off attempt that did not throw. */
export type MailOutcome = { status: 'SENT' } | { status: 'FAILED'; error: string };

/**
 * Hands a QUEUED email to the mail server over SMTP with nodemailer: the SMTP server of the line's
 * own mailbox when it has one (then the message is also copied to the mailbox's Sent folder,
 * docs/mailboxes.md), else the MailRelay (SMTP_URL, or in development without it the development
 * mailer: mail-relays.ts). A transient
 * failure (no connection, timeout, 4xx) throws so the job is retried, unless it was the last
 * attempt; a permanent one (5xx) is a FAILED outcome at once. Registered with conversations as
 * the EMAIL outbound channel; it records the outcome through OutboundService.transition.
 */
@Injectable()
export class Mailer implements OutboundChannel, OnModuleInit {
  private readonly logger = new Logger(Mailer.name);

  constructor(
    private readonly messages: EmailMessagesRepository,
    private readonly servers: MailServers,
    private readonly box: SecretBox,
    private readonly relay: MailRelay,
    private readonly channels: OutboundChannels,
    private readonly outbound: OutboundService,
  ) {}

  onModuleInit(): void {
    this.channels.register('EMAIL', this);
  }

  /** Hands a QUEUED email over and records the outcome; throws on a transient failure with attempts left, so Bull retries. */
  async handOff(messageId: string, attemptsMade: number): Promise<void> {
    const outcome = await this.send(messageId, attemptsMade + 1 >= HANDOFF_ATTEMPTS);
    await this.outbound.transition(messageId, 'QUEUED', outcome.status, outcome.status === 'FAILED' ? { error: outcome.error } : {});
  }

  private async send(messageId: string, lastAttempt: boolean): Promise<MailOutcome> {
    const mail = await this.load(messageId);
    if (!mail.mailbox && this.relay.reason) return { status: 'FAILED', error: this.relay.reason };
    const options: SendMailOptions = {
      from: mail.from_value,
      to: mail.to_value,
      subject: mail.subject ?? '',
      text: mail.body,
      ...(mail.html ? { html: mail.html } : {}),
      messageId: mail.header_message_id!,
      ...(mail.header_in_reply_to ? { inReplyTo: mail.header_in_reply_to } : {}),
      ...(mail.header_references.length > 0 ? { references: mail.header_references } : {}),
    };
    try {
      if (mail.mailbox) await this.sendThroughMailbox(messageId, mail.mailbox, options);
      else await this.relay.send(options);
      return { status: 'SENT' };
    } catch (error) {
      // The mailbox's server refused by the address policy: no retry changes that.
      if (error instanceof DomainError) return { status: 'FAILED', error: `the mailbox's mail server cannot be used: ${error.message}` };
      const e = error as SmtpError;
      const description = describe(e);
      if (isPermanent(e)) return { status: 'FAILED', error: `the mail server refused the message: ${description}` };
      if (lastAttempt) return { status: 'FAILED', error: `the mail server could not take the message after every attempt: ${description}` };
      this.logger.warn(`hand-off of email ${messageId} failed, will retry: ${description}`);
      throw error;
    }
  }

  /**
   * Through the mailbox's own SMTP server (checked by the address policy at every attempt), then
   * into its Sent folder: the same bytes, so the copy is what the recipient got.
   */
  private async sendThroughMailbox(messageId: string, mailbox: MailboxServers, options: SendMailOptions): Promise<void> {
    const raw = await new MailComposer(options).compile().build();
    const smtp = this.opened(mailbox.smtp);
    const transport = this.servers.smtpTransport(smtp, await this.servers.address('smtp', smtp.host));
    try {
      await transport.sendMail({ envelope: { from: options.from as string, to: options.to as string }, raw });
    } finally {
      transport.close();
    }
    // The message has left: a failed copy is logged, never a reason to send it again.
    await this.servers
      .appendToSent(this.opened(mailbox.imap), raw)
      .catch((error: unknown) => this.logger.warn(`email ${messageId} was sent; copying it to the mailbox's Sent folder failed: ${(error as Error).message}`));
  }

  private opened(server: MailboxServers['smtp']): MailServerSettings {
    return { host: server.host, port: server.port, tls: server.tls, username: server.username, password: this.box.open(server.passwordSealed) };
  }

  /** The message, with a Message-ID fixed before the first attempt (so every retry sends the same one). */
  private async load(messageId: string): Promise<MailRow> {
    const mail = await this.messages.mail(messageId);
    if (!mail) throw new Error(`message ${messageId} does not exist`);
    if (!mail.header_message_id) mail.header_message_id = await this.messages.fixMessageId(messageId, newMessageId(mail.from_value));
    return mail;
  }
}

interface SmtpError extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
  permanent?: boolean;
}

/** 5xx replies (nodemailer's `permanent`), and errors no retry can fix (bad configuration or envelope). */
function isPermanent(e: SmtpError): boolean {
  if (typeof e.permanent === 'boolean') return e.permanent;
  if (e.responseCode) return e.responseCode >= 500 && e.responseCode < 600;
  return e.code === 'ECONFIG' || e.code === 'EENVELOPE';
}

function describe(e: SmtpError): string {
  return (e.response ?? e.message ?? String(e)).slice(0, 500);
}
