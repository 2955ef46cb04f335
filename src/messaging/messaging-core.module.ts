import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { AttachmentStorage } from './attachments/attachment-storage';
import { AttachmentStorageRepository } from './attachments/attachment-storage.repository';
import { ConversationsRepository } from './conversations/conversations.repository';
import { ConversationsService } from './conversations/conversations.service';
import { EmailMessagesRepository } from './email/email-messages.repository';
import { Mailer } from './email/mailer';
import { SmsIngestController } from './ingest/sms-ingest.controller';
import { MailServers } from './mailboxes/mail-servers';
import { MessageDataBuilder } from './message-data.builder';
import { MessageDataRepository } from './message-data.repository';
import { OutboundProcessor } from './outbound/outbound.processor';
import { OutboundRepository } from './outbound/outbound.repository';
import { SendIdempotencyKeysRepository } from './outbound/send-idempotency-keys.repository';
import { OUTBOUND_QUEUE, OutboundService } from './outbound/outbound.service';
import { ReplyToThreadTool, SendSmsTool } from './outbound/outbound.tools';
import { SmsCarrier } from './outbound/sms-carrier';
import { TwilioApi } from './sms-providers/twilio-api';
import { ThreadAccessRepository } from './threads/thread-access.repository';

/** Threads, messages, inbound recording and outbound hand-off: what the other messaging parts build on. */
@Module({
  // WebhooksModule: the host resolver the mail servers of mailboxes are checked with, and the URL
  // policy the media of Twilio's inbound messages are fetched through.
  imports: [BullModule.registerQueue({ name: OUTBOUND_QUEUE }), WebhooksModule],
  controllers: [SmsIngestController],
  providers: [
    MessageDataRepository,
    MessageDataBuilder,
    AttachmentStorageRepository,
    AttachmentStorage,
    ConversationsRepository,
    ConversationsService,
    ThreadAccessRepository,
    OutboundRepository,
    SendIdempotencyKeysRepository,
    OutboundService,
    OutboundProcessor,
    SmsCarrier,
    TwilioApi,
    EmailMessagesRepository,
    Mailer,
    MailServers,
    SendSmsTool,
    ReplyToThreadTool,
  ],
  exports: [
    MessageDataBuilder,
    AttachmentStorage,
    ConversationsService,
    ThreadAccessRepository,
    OutboundRepository,
    OutboundService,
    EmailMessagesRepository,
    MailServers,
    TwilioApi,
  ],
})
export class MessagingCoreModule {}
