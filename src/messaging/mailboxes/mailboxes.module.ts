import { Module } from '@nestjs/common';
import { AccountsModule } from '../../accounts/accounts.module';
import { EmailModule } from '../email/email.module';
import { MailboxHealthModule } from '../mailbox-health/mailbox-health.module';
import { MessagingCoreModule } from '../messaging-core.module';
import { MailboxSync } from './mailbox-sync';
import { MailboxesRepository } from './mailboxes.repository';
import { MailboxesService } from './mailboxes.service';

/** Email account lines connected to their mailboxes over IMAP and SMTP, and their sync (docs/mailboxes.md). */
@Module({
  // MessagingCoreModule: MailServers (the address policy and clients of mail servers, which the
  // hand-off of outbound email uses too); EmailModule: the inbound path synced mail takes;
  // MailboxHealthModule: the health its outcomes drive (and Settings → Mailboxes shows);
  // AccountsModule: the live role of a person who connects one from the web app.
  imports: [MessagingCoreModule, EmailModule, MailboxHealthModule, AccountsModule],
  providers: [MailboxesRepository, MailboxesService, MailboxSync],
  exports: [MailboxesService],
})
export class MailboxesModule {}
