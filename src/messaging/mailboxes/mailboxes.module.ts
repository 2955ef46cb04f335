import { Module } from '@nestjs/common';
import { WebhooksModule } from '../../webhooks/webhooks.module';
import { MailServers } from './mail-servers';
import { MailboxesRepository } from './mailboxes.repository';
import { MailboxesService } from './mailboxes.service';

/** Email account lines connected to their mailboxes over IMAP and SMTP (docs/mailboxes.md). */
@Module({
  // The host resolver: mail servers are judged by the addresses their names resolve to, like webhook URLs.
  imports: [WebhooksModule],
  providers: [MailServers, MailboxesRepository, MailboxesService],
  exports: [MailboxesService],
})
export class MailboxesModule {}
