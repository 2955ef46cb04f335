import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { createTransport, Transporter } from 'nodemailer';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';

/** An email the service itself sends to a person (not a user's message): plain text. */
export interface ServiceEmail {
  to: string;
  subject: string;
  text: string;
}

/** sent: handed to SMTP_URL; logged: development without SMTP_URL; unsent: production without it. */
export type ServiceEmailResult = 'sent' | 'logged' | 'unsent';

/**
 * Emails from the service to people (sign-in links, notices about their webhook endpoints),
 * through SMTP_URL with nodemailer. In development without SMTP_URL the email is written to the
 * log instead, a convenience for a local run; in production it is not sent, and a warning says why.
 */
@Injectable()
export class ServiceMailer implements OnApplicationShutdown {
  private readonly logger = new Logger(ServiceMailer.name);
  private relayTransport?: Transporter;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async send(email: ServiceEmail): Promise<ServiceEmailResult> {
    if (this.config.smtpUrl) {
      await this.transport().sendMail({ from: `Messaging Sync <no-reply@${new URL(this.config.publicBaseUrl).hostname}>`, ...email });
      return 'sent';
    }
    if (this.config.isDevelopment) {
      this.logger.log(`email to ${email.to} (development without SMTP_URL, so it is logged instead of sent): ${email.subject}\n${email.text}`);
      return 'logged';
    }
    this.logger.warn(`an email (${email.subject.split(':')[0]}) was not sent: SMTP_URL is not set`);
    return 'unsent';
  }

  /** The one pooled transport to SMTP_URL (set): these emails and users' outbound email without a mailbox of their own share it. */
  transport(): Transporter {
    this.relayTransport ??= createTransport({ url: this.config.smtpUrl!, connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 60_000 });
    return this.relayTransport;
  }

  onApplicationShutdown(): void {
    this.relayTransport?.close();
  }
}
