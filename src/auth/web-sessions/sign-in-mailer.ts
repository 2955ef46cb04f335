import { Injectable } from '@nestjs/common';
import { ServiceMailer } from '../../common/service-mailer';

/** Sends a sign-in link by email (ServiceMailer: logged instead in development without SMTP_URL). */
@Injectable()
export class SignInMailer {
  constructor(private readonly mailer: ServiceMailer) {}

  async send(to: string, url: string, expiresAt: Date): Promise<void> {
    await this.mailer.send({
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
  }
}
