import { Global, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { AttachmentUrls } from './attachment-urls';
import { Clock, SystemClock } from './clock';
import { SecretBox } from './secret-box';
import { WellFormedInputInterceptor } from './well-formed.interceptor';

/**
 * Small shared services: one clock (tests move it), sealed secrets, signed attachment links, and
 * the check that every REST input is well-formed text.
 */
@Global()
@Module({
  providers: [
    { provide: Clock, useClass: SystemClock }, SecretBox, AttachmentUrls,
    { provide: APP_INTERCEPTOR, useClass: WellFormedInputInterceptor },
  ],
  exports: [Clock, SecretBox, AttachmentUrls],
})
export class CommonModule {}
