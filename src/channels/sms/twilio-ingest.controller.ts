import { Controller, Header, HttpCode, Post, Req, UseGuards } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Request } from 'express';
import { SignedBody } from '../../identity/auth.decorators';
import { ReadsBody } from '../../common/request-body';
import { TwilioIngestService } from './twilio-ingest.service';
import { SignedTwilioRequest, TwilioSignatureGuard } from './twilio-signature.guard';

/** Twilio's forms are a few hundred bytes (a 1,600-character body and ten media URLs fit many times over). */
export const TWILIO_FORM_MAX_BYTES = 64 * 1024;

/** TwiML that tells Twilio to do nothing more: the message is taken, no reply is sent from here. */
export const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

type TwilioRequest = Request & { twilio: SignedTwilioRequest };

/** What Twilio posts for phone lines connected to it (docs/twilio.md): inbound messages and status callbacks. */
@ApiTags('ingest')
@ApiHeader({ name: 'X-Twilio-Signature', required: true, description: "Twilio's signature with the account's auth token" })
@SignedBody('X-Twilio-Signature')
@UseGuards(TwilioSignatureGuard)
@ReadsBody({ as: 'raw', limit: TWILIO_FORM_MAX_BYTES, unauthenticated: true })
@Controller('ingest/twilio')
export class TwilioIngestController {
  constructor(private readonly twilio: TwilioIngestService) {}

  @Post('sms')
  @HttpCode(200)
  @Header('Content-Type', 'text/xml; charset=utf-8')
  @ApiOperation({ summary: 'A number\'s inbound message (Twilio\'s "A message comes in" webhook); answered with empty TwiML' })
  async sms(@Req() request: TwilioRequest): Promise<string> {
    await this.twilio.receive(request.twilio);
    return EMPTY_TWIML;
  }

  @Post('status')
  @HttpCode(200)
  @ApiOperation({ summary: "An outbound message's status callback" })
  status(@Req() request: TwilioRequest) {
    return this.twilio.status(request.twilio);
  }
}
