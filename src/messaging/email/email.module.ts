import { Module } from '@nestjs/common';
import { MessagingCoreModule } from '../messaging-core.module';
import { EmailIngestController } from './email-ingest.controller';
import { EmailIngestService } from './email-ingest.service';
import { EmailOpensRepository } from './email-opens.repository';
import { EmailOpensService } from './email-opens.service';
import { EmailOutboundService } from './email-outbound.service';
import { SendEmailTool } from './email.tools';
import { OpenTrackingController } from './open-tracking.controller';

/**
 * Email: inbound raw messages from the mail server, send_email, and open tracking. The SMTP
 * hand-off itself (Mailer, and EmailMessagesRepository, which it reads with) is provided by
 * MessagingCoreModule, whose hand-off job calls it.
 */
@Module({
  imports: [MessagingCoreModule],
  controllers: [EmailIngestController, OpenTrackingController],
  providers: [EmailIngestService, EmailOutboundService, EmailOpensRepository, EmailOpensService, SendEmailTool],
  exports: [EmailIngestService],
})
export class EmailModule {}
