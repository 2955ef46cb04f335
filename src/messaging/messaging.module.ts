import { Module } from '@nestjs/common';
import { AgentsModule } from './agents/agents.module';
import { AttachmentsModule } from './attachments/attachments.module';
import { ContactsModule } from './contacts/contacts.module';
import { EmailModule } from './email/email.module';
import { MailboxHealthModule } from './mailbox-health/mailbox-health.module';
import { MailboxesModule } from './mailboxes/mailboxes.module';
import { MessagingCoreModule } from './messaging-core.module';
import { SearchModule } from './search/search.module';
import { SmsProvidersModule } from './sms-providers/sms-providers.module';
import { ThreadsModule } from './threads/threads.module';

/** The messaging domain: conversations, contacts, attachments, email and synced mailboxes, SMS providers, agents, search; it publishes the ten event kinds. */
@Module({
  imports: [
    MessagingCoreModule,
    EmailModule,
    AttachmentsModule,
    ContactsModule,
    AgentsModule,
    ThreadsModule,
    MailboxHealthModule,
    MailboxesModule,
    SmsProvidersModule,
    SearchModule,
  ],
})
export class MessagingModule {}
