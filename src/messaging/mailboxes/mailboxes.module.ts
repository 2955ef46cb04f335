import { Module } from '@nestjs/common';
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
  // MailboxHealthModule: the health its outcomes drive.
  imports: [MessagingCoreModule, EmailModule, MailboxHealthModule],
  providers: [MailboxesRepository, MailboxesService, MailboxSync],
  exports: [MailboxesService],
})
export class MailboxesModule {}
