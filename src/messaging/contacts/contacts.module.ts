import { Module } from '@nestjs/common';
import { MessagingCoreModule } from '../messaging-core.module';
import { ContactsRepository } from './contacts.repository';
import { ContactsService } from './contacts.service';
import { CONTACT_TOOLS } from './contacts.tools';

/** Contacts and their identities: list_contacts, create_contact, update_contact, merge_contacts (contact.merged). */
@Module({
  imports: [MessagingCoreModule],
  providers: [ContactsRepository, ContactsService, ...CONTACT_TOOLS],
})
export class ContactsModule {}
