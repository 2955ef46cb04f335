import { Module } from '@nestjs/common';
import { WebhooksModule } from '../../webhooks/webhooks.module';
import { EmailModule } from '../email/email.module';
import { MailboxHealthModule } from '../mailbox-health/mailbox-health.module';
import { MailServers } from './mail-servers';
import { MailboxSync } from './mailbox-sync';
import { MailboxesRepository } from './mailboxes.repository';
import { MailboxesService } from './mailboxes.service';

/** Email account lines connected to their mailboxes over IMAP and SMTP, and their sync (docs/mailboxes.md). */
@Module({
  // WebhooksModule: the host resolver (mail servers are judged by the addresses their names resolve to, like webhook URLs).
  // EmailModule: the inbound path synced mail takes; MailboxHealthModule: the health its outcomes drive.
  imports: [WebhooksModule, EmailModule, MailboxHealthModule],
  providers: [MailServers, MailboxesRepository, MailboxesService, MailboxSync],
  exports: [MailboxesService],
})
export class MailboxesModule {}
