import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import { Response } from 'express';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { IngestOnly } from '../../identity/auth.decorators';
import { ConversationsService } from '../../conversations/conversations.service';
import { SmsDeliveryService } from './sms-delivery.service';
import { SmsKeywordsService } from './sms-keywords.service';
import { InboundSmsDto, SmsStatusDto } from './sms-ingest.dto';

/** What the SMS carrier calls: inbound messages and delivery reports. */
@ApiTags('ingest')
@ApiBearerAuth()
@IngestOnly()
@Controller('ingest/sms')
export class SmsIngestController {
  constructor(
    private readonly conversations: ConversationsService,
    private readonly sms: SmsDeliveryService,
    private readonly keywords: SmsKeywordsService,
  ) {}

  /** 201 the first time, 200 for a repeat of the same providerMessageId (nothing created twice); STOP, START and HELP are applied (docs/opt-out.md). */
  @Post('inbound')
  async inbound(@Body() body: InboundSmsDto, @Res({ passthrough: true }) res: Response) {
    const result = await this.conversations.recordInbound({
      to: body.to,
      channel: 'SMS',
      from: { kind: 'PHONE', value: body.from },
      body: body.body,
      providerMessageId: body.providerMessageId,
      attachments: (body.media ?? []).map((m) => ({ filename: m.filename, mimeType: m.mimeType, content: Buffer.from(m.contentBase64, 'base64') })),
    });
    await this.keywords.afterInbound(body, result);
    res.status(result.duplicate ? 200 : 201);
    return result;
  }

  @Post('status')
  @HttpCode(200)
  status(@Body() body: SmsStatusDto) {
    return this.sms.applyReport(body);
  }
}
