import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { createTransport, Transporter } from 'nodemailer';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';

/**
 * Sends a sign-in link by email through SMTP_URL (nodemailer, as messaging's Mailer does). In
 * development without SMTP_URL the link is written to the log instead: a convenience for a local
 * run, never done in production (where the link is not sent, and a warning says why).
 */
@Injectable()
export class SignInMailer implements OnApplicationShutdown {
  private readonly logger = new Logger(SignInMailer.name);
  private transport?: Transporter;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async send(to: string, url: string, expiresAt: Date): Promise<void> {
    if (this.config.smtpUrl) {
      this.transport ??= createTransport({ url: this.config.smtpUrl, connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 60_000 });
      await this.transport.sendMail({
        from: `Messaging Sync <no-reply@${new URL(this.config.publicBaseUrl).hostname}>`,
        to,
        subject: 'Your sign-in link',
        text: [
          'Open this link to sign in to Messaging Sync:',
          '',
          url,
          '',
          `It works once, until ${expiresAt.toISOString()} (15 minutes).`,
          'If you did not ask for it, ignore this email.',
        ].join('\n'),
      });
      return;
    }
    if (this.config.isDevelopment) {
      this.logger.log(`sign-in link for ${to} (development without SMTP_URL, so it is logged instead of sent): ${url}`);
      return;
    }
    this.logger.warn('a sign-in link was asked for but not sent: SMTP_URL is not set');
  }

  onApplicationShutdown(): void {
    this.transport?.close();
  }
}
