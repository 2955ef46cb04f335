import { Module } from '@nestjs/common';
import { AgentsModule } from './agents/agents.module';
import { AttachmentsModule } from './attachments/attachments.module';
import { ContactsModule } from './contacts/contacts.module';
import { EmailModule } from './email/email.module';
import { MessagingCoreModule } from './messaging-core.module';

/** The messaging domain: conversations, contacts, attachments, email, agents; it publishes the ten event kinds. */
@Module({
  imports: [MessagingCoreModule, EmailModule, AttachmentsModule, ContactsModule, AgentsModule],
})
export class MessagingModule {}
