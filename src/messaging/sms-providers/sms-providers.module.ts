import { Module } from '@nestjs/common';
import { AccountsModule } from '../../accounts/accounts.module';
import { MessagingCoreModule } from '../messaging-core.module';
import { SmsProvidersRepository } from './sms-providers.repository';
import { SmsProvidersService } from './sms-providers.service';
import { TwilioIngestController } from './twilio-ingest.controller';
import { TwilioIngestService } from './twilio-ingest.service';
import { TwilioSignatureGuard } from './twilio-signature.guard';

/** Phone number lines connected to Twilio or a Twilio-compatible provider (docs/twilio.md). */
@Module({
  // MessagingCoreModule: the inbound path, outbound status moves, and TwilioApi (which the hand-off of outbound SMS uses too).
  imports: [AccountsModule, MessagingCoreModule],
  controllers: [TwilioIngestController],
  providers: [SmsProvidersRepository, SmsProvidersService, TwilioIngestService, TwilioSignatureGuard],
  exports: [SmsProvidersService],
})
export class SmsProvidersModule {}
