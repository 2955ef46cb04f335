import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { ContactsRepository } from './contacts/contacts.repository';
import { ContactsService } from './contacts/contacts.service';
import { CONTACT_TOOLS } from './contacts/contacts.tools';
import { ConversationsRepository } from './conversations.repository';
import { ConversationsService } from './conversations.service';
import { InboundAttachments } from './inbound-attachments';
import { MessageDataBuilder } from './message-data.builder';
import { MessageDataRepository } from './message-data.repository';
import { DevelopmentOutboxService } from './outbound/development-outbox.service';
import { OutboundChannels } from './outbound/outbound-channels';
import { OutboundProcessor } from './outbound/outbound.processor';
import { OutboundRepository } from './outbound/outbound.repository';
import { OUTBOUND_QUEUE, OutboundService } from './outbound/outbound.service';
import { DraftHolds } from './outbound/draft-holds';
import { SendGate } from './outbound/send-gate';
import { SendGateRepository } from './outbound/send-gate.repository';
import { OptOutsModule } from '../opt-outs/opt-outs.module';
import { ScheduledSends } from './outbound/scheduled-sends';
import { CancelScheduledMessageTool } from './outbound/scheduled-sends.tools';
import { ReplyToThreadTool, SendSmsTool } from './outbound/outbound.tools';
import { SendIdempotencyKeysRepository } from './outbound/send-idempotency-keys.repository';
import { SendPoliciesModule } from '../send-policies/send-policies.module';
import { SearchRepository } from './search/search.repository';
import { SearchService } from './search/search.service';
import { SearchMessagesTool } from './search/search.tools';
import { LABEL_TOOLS } from './threads/labels.tools';
import { ThreadAccessRepository } from './threads/thread-access.repository';
import { ThreadsRepository } from './threads/threads.repository';
import { ThreadsService } from './threads/threads.service';
import { THREAD_TOOLS } from './threads/threads.tools';

/**
 * Conversations: threads, messages, identities and contacts, labels, search, the data events carry,
 * inbound recording and the outbound queue with its hand-off job. It knows no provider: the
 * channels register how they send (OutboundChannels) and attachments where files go
 * (InboundAttachments); channels, attachments and agents import this module, never the reverse.
 */
@Module({
  // The send gate's rules: SendPoliciesModule (a credential's send policy), OptOutsModule (opted_out).
  imports: [BullModule.registerQueue({ name: OUTBOUND_QUEUE }), SendPoliciesModule, OptOutsModule],
  providers: [
    MessageDataRepository,
    MessageDataBuilder,
    ConversationsRepository,
    ConversationsService,
    InboundAttachments,
    ThreadAccessRepository,
    ThreadsRepository,
    ThreadsService,
    DevelopmentOutboxService,
    ...THREAD_TOOLS,
    ...LABEL_TOOLS,
    ContactsRepository,
    ContactsService,
    ...CONTACT_TOOLS,
    SearchRepository,
    SearchService,
    SearchMessagesTool,
    OutboundRepository,
    SendIdempotencyKeysRepository,
    OutboundChannels,
    OutboundService,
    SendGate,
    SendGateRepository,
    ScheduledSends,
    CancelScheduledMessageTool,
    DraftHolds,
    OutboundProcessor,
    SendSmsTool,
    ReplyToThreadTool,
  ],
  exports: [
    MessageDataBuilder,
    ConversationsService,
    InboundAttachments,
    ThreadAccessRepository,
    ThreadsService,
    ContactsService,
    SearchService,
    OutboundRepository,
    OutboundChannels,
    OutboundService,
    ScheduledSends,
    DraftHolds,
    DevelopmentOutboxService,
  ],
})
export class ConversationsModule {}
