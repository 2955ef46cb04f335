import { Global, Module } from '@nestjs/common';
import { AttachmentUrls } from './attachment-urls';
import { Clock, SystemClock } from './clock';
import { KeysetCursors } from './keyset-cursor';
import { SecretBox } from './secret-box';
import { ServiceMailer } from './service-mailer';

/**
 * Small shared services: one clock (tests move it), sealed secrets, signed attachment links, signed
 * list cursors, the service's own emails, and the check that every REST input is well-formed text.
 */
@Global()
@Module({
  providers: [{ provide: Clock, useClass: SystemClock }, SecretBox, AttachmentUrls, KeysetCursors, ServiceMailer],
  exports: [Clock, SecretBox, AttachmentUrls, KeysetCursors, ServiceMailer],
})
export class CommonModule {}
