import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { AttachmentStorage } from './attachments/attachment-storage';
import { ConversationsService } from './conversations/conversations.service';
import { Mailer } from './email/mailer';
import { SmsIngestController } from './ingest/sms-ingest.controller';
import { MessageDataBuilder } from './message-data.builder';
import { OutboundProcessor } from './outbound/outbound.processor';
import { OUTBOUND_QUEUE, OutboundService } from './outbound/outbound.service';
import { SendSmsTool } from './outbound/outbound.tools';
import { SmsCarrier } from './outbound/sms-carrier';

/** Threads, messages, inbound recording and outbound hand-off: what the other messaging parts build on. */
@Module({
  imports: [BullModule.registerQueue({ name: OUTBOUND_QUEUE })],
  controllers: [SmsIngestController],
  providers: [MessageDataBuilder, AttachmentStorage, ConversationsService, OutboundService, OutboundProcessor, SmsCarrier, Mailer, SendSmsTool],
  exports: [MessageDataBuilder, AttachmentStorage, ConversationsService, OutboundService],
})
export class MessagingCoreModule {}
