import { Global, Module } from '@nestjs/common';
import { AttachmentUrls } from './attachment-urls';
import { Clock, SystemClock } from './clock';
import { SecretBox } from './secret-box';

/** Small shared services: one clock (tests move it), sealed secrets, signed attachment links. */
@Global()
@Module({
  providers: [{ provide: Clock, useClass: SystemClock }, SecretBox, AttachmentUrls],
  exports: [Clock, SecretBox, AttachmentUrls],
})
export class CommonModule {}
