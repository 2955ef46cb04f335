import { Module } from '@nestjs/common';
import { MessagingCoreModule } from '../messaging-core.module';

@Module({
  imports: [MessagingCoreModule],
})
export class AttachmentsModule {}
