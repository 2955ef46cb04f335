import { Logger, Provider } from '@nestjs/common';
import { SendMailOptions } from 'nodemailer';
import { ServiceMailer } from '../../common/service-mailer';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';

/**
 * Where the email of a line without a mailbox of its own goes: SMTP_URL; without it, the
 * development mailer in development, and nowhere in production (each such email FAILED with the
 * reason, and one warning at start). Chosen once, at start (mailRelayProvider).
 */
export abstract class MailRelay {
  /** Null when there is nowhere to send: `reason` says why. */
  abstract readonly reason: string | null;
  abstract send(options: SendMailOptions): Promise<void>;
}

/** SMTP_URL, over the pooled transport the service's own emails share. */
export class SmtpRelay extends MailRelay {
  readonly reason = null;

  constructor(private readonly mailer: ServiceMailer) {
    super();
  }

  async send(options: SendMailOptions): Promise<void> {
    await this.mailer.transport().sendMail(options);
  }
}

/**
 * Development without SMTP_URL: a mail server on this machine that takes every email and writes
 * one log line for it, so the message goes QUEUED → SENT with its events. The development outbox
 * page lists what was sent (docs/web.md).
 */
export class DevelopmentMailRelay extends MailRelay {
  readonly reason = null;
  private readonly logger = new Logger('DevelopmentMailer');

  send(options: SendMailOptions): Promise<void> {
    this.logger.log(
      `email ${String(options.messageId)} from ${String(options.from)} to ${String(options.to)} accepted by the development mailer (no SMTP_URL): ` +
        JSON.stringify(options.subject ?? ''),
    );
    return Promise.resolve();
  }
}

/** Production without SMTP_URL. */
export class NoMailRelay extends MailRelay {
  readonly reason = 'no mail server is configured: SMTP_URL is not set';

  send(): Promise<void> {
    return Promise.reject(new Error(this.reason));
  }
}

/** The relay for this configuration; production without SMTP_URL says so once, at start. */
export const mailRelayProvider: Provider = {
  provide: MailRelay,
  inject: [APP_CONFIG, ServiceMailer],
  useFactory: (config: AppConfig, mailer: ServiceMailer): MailRelay => {
    if (config.smtpUrl) return new SmtpRelay(mailer);
    if (config.isDevelopment) return new DevelopmentMailRelay();
    new Logger('Mailer').warn('SMTP_URL is not set: outbound email on lines without a mailbox of their own will be FAILED with "no mail server is configured"');
    return new NoMailRelay();
  },
};
