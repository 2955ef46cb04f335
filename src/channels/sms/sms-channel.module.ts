import { Module } from '@nestjs/common';
import { AccountsModule } from '../../accounts/accounts.module';
import { ConversationsModule } from '../../conversations/conversations.module';
import { OutboundHttpModule } from '../../outbound-http/outbound-http.module';
import { SmsCarrier } from './sms-carrier';
import { SmsDeliveryService } from './sms-delivery.service';
import { SmsKeywordsService } from './sms-keywords.service';
import { OptOutsModule } from '../../opt-outs/opt-outs.module';
import { smsGatewayProvider } from './sms-gateways';
import { SmsIngestController } from './sms-ingest.controller';
import { SmsMessagesRepository } from './sms-messages.repository';
import { SmsProvidersRepository } from './sms-providers.repository';
import { SmsProvidersService } from './sms-providers.service';
import { TwilioApi } from './twilio-api';
import { TwilioIngestController } from './twilio-ingest.controller';
import { TwilioIngestService } from './twilio-ingest.service';
import { TwilioSignatureGuard } from './twilio-signature.guard';

/**
 * SMS: the carrier-neutral inbound and status routes, phone number lines connected to Twilio or a
 * Twilio-compatible provider (docs/twilio.md), and the hand-off of outbound SMS (registered with
 * conversations as the SMS outbound channel) with its delivery reports.
 */
@Module({
  // ConversationsModule: where inbound SMS are recorded and outbound ones move; OutboundHttpModule: the
  // URL policy Twilio's media are fetched through; AccountsModule: the live role of whoever connects a provider.
  // OptOutsModule: STOP, START and HELP of inbound SMS (sms-keywords.service.ts).
  imports: [ConversationsModule, OutboundHttpModule, AccountsModule, OptOutsModule],
  controllers: [SmsIngestController, TwilioIngestController],
  providers: [
    SmsCarrier,
    smsGatewayProvider,
    TwilioApi,
    SmsMessagesRepository,
    SmsDeliveryService,
    SmsKeywordsService,
    SmsProvidersRepository,
    SmsProvidersService,
    TwilioIngestService,
    TwilioSignatureGuard,
  ],
  exports: [SmsProvidersService],
})
export class SmsChannelModule {}
