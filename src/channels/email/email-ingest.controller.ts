import { Controller, Post, Req, Res, UnsupportedMediaTypeException } from '@nestjs/common';
import { ApiBearerAuth, ApiConsumes, ApiTags } from '@nestjs/swagger';
import { Request, Response } from 'express';
import { IngestOnly } from '../../identity/auth.decorators';
import { SkipWellFormedCheck } from '../../common/well-formed-request';
import { ReadsBody } from '../../common/request-body';
import { EmailIngestService } from './email-ingest.service';

/** Largest raw message accepted (413 above it): common provider limits are 25-50 MB with attachments. */
export const EMAIL_INBOUND_MAX_BYTES = 25 * 1024 * 1024;

/** What the mail server calls for each message it receives for one of our email accounts. */
@ApiTags('ingest')
@ApiBearerAuth()
@IngestOnly()
@Controller('ingest/email')
export class EmailIngestController {
  constructor(private readonly ingest: EmailIngestService) {}

  /**
   * The raw RFC 5322 message as the body (`Content-Type: message/rfc822`). 201 the first time,
   * 200 for a repeat of the same Message-ID (nothing created twice). Never refused for its text:
   * the parser removes U+0000 and repairs lone surrogates (a mail server would retry a refusal forever).
   */
  @Post('inbound')
  @SkipWellFormedCheck()
  @ApiConsumes('message/rfc822')
  @ReadsBody({ as: 'raw', limit: EMAIL_INBOUND_MAX_BYTES })
  async inbound(@Req() req: Request, @Res({ passthrough: true }) res: Response) {
    // req.is answers null when there is no body at all: that is the parser's 400 (empty message).
    if (req.is('message/rfc822') === false) throw new UnsupportedMediaTypeException('Content-Type must be message/rfc822 (the raw message)');
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const result = await this.ingest.receive(raw);
    res.status(result.duplicate ? 200 : 201);
    return result;
  }
}
