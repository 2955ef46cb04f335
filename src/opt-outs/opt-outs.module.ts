import { Module } from '@nestjs/common';
import { OptOutsRepository } from './opt-outs.repository';
import { OptOutsService } from './opt-outs.service';

/**
 * SMS opt-out (docs/opt-out.md): who texted STOP to which line, the org's HELP text, and the
 * send gate's rule opted_out. It sits under conversations (whose send gate asks it); the SMS
 * channel applies the keywords of inbound messages and sends the answers.
 */
@Module({
  providers: [OptOutsRepository, OptOutsService],
  exports: [OptOutsService],
})
export class OptOutsModule {}
