import { Module } from '@nestjs/common';
import { ListEmailAccountsTool } from './email-accounts.tool';
import { MailboxHealthController } from './mailbox-health.controller';
import { MailboxHealthRepository } from './mailbox-health.repository';
import { MailboxHealthService } from './mailbox-health.service';

/** Email account health from sync reports: email_account.health_changed, edge-triggered. */
@Module({
  controllers: [MailboxHealthController],
  providers: [MailboxHealthRepository, MailboxHealthService, ListEmailAccountsTool],
  exports: [MailboxHealthService],
})
export class MailboxHealthModule {}
