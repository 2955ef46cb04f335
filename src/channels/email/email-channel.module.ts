import { Module } from '@nestjs/common';
import { AccountsModule } from '../../accounts/accounts.module';
import { ConversationsModule } from '../../conversations/conversations.module';
import { OutboundHttpModule } from '../../outbound-http/outbound-http.module';
import { EmailIngestController } from './email-ingest.controller';
import { EmailIngestService } from './email-ingest.service';
import { EmailMessagesRepository } from './email-messages.repository';
import { EmailOpensRepository } from './email-opens.repository';
import { EmailOpensService } from './email-opens.service';
import { EmailOutboundService } from './email-outbound.service';
import { SendEmailTool } from './email.tools';
import { ListEmailAccountsTool } from './mailbox-health/email-accounts.tool';
import { MailboxHealthController } from './mailbox-health/mailbox-health.controller';
import { MailboxHealthRepository } from './mailbox-health/mailbox-health.repository';
import { MailboxHealthService } from './mailbox-health/mailbox-health.service';
import { MailServers } from './mailboxes/mail-servers';
import { MailboxSync } from './mailboxes/mailbox-sync';
import { MailboxesRepository } from './mailboxes/mailboxes.repository';
import { MailboxesService } from './mailboxes/mailboxes.service';
import { mailRelayProvider } from './mail-relays';
import { Mailer } from './mailer';
import { OpenTrackingController } from './open-tracking.controller';

/**
 * Email: inbound raw messages, send_email, the SMTP hand-off (registered with conversations as the
 * EMAIL outbound channel), open tracking, and email account lines connected to their mailboxes over
 * IMAP and SMTP with their sync and health (docs/mailboxes.md).
 */
@Module({
  // ConversationsModule: where mail is recorded and sent from; OutboundHttpModule: the host resolver mail
  // servers are checked with; AccountsModule: the live role of a person who connects a mailbox.
  imports: [ConversationsModule, OutboundHttpModule, AccountsModule],
  controllers: [EmailIngestController, OpenTrackingController, MailboxHealthController],
  providers: [
    EmailMessagesRepository,
    EmailIngestService,
    EmailOutboundService,
    EmailOpensRepository,
    EmailOpensService,
    SendEmailTool,
    Mailer,
    mailRelayProvider,
    MailServers,
    MailboxHealthRepository,
    MailboxHealthService,
    ListEmailAccountsTool,
    MailboxesRepository,
    MailboxesService,
    MailboxSync,
  ],
  exports: [MailboxesService],
})
export class EmailChannelModule {}
