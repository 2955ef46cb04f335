import { Module } from '@nestjs/common';
import { MailboxHealthController } from './mailbox-health.controller';
import { MailboxHealthService } from './mailbox-health.service';

/** Email account health from sync reports: email_account.health_changed, edge-triggered. */
@Module({
  controllers: [MailboxHealthController],
  providers: [MailboxHealthService],
})
export class MailboxHealthModule {}
