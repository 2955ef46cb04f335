import { Controller, Get, Logger, Param, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Request, Response } from 'express';
import { Public } from '../../identity/auth.decorators';
import { stringFault } from '../../common/well-formed';
import { SkipWellFormedCheck } from '../../common/well-formed-request';
import { RateLimitPerIp } from '../../limits/ip-rate-limit.guard';
import { EmailOpensService } from './email-opens.service';

/** A transparent 1×1 GIF (43 bytes). */
export const TRACKING_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/** The open-tracking pixel of emails sent with readReceipt. Public: mail clients fetch it. */
@ApiExcludeController()
@Public()
@SkipWellFormedCheck()
@RateLimitPerIp('pixel')
@Controller('t/o')
export class OpenTrackingController {
  private readonly logger = new Logger(OpenTrackingController.name);

  constructor(private readonly opens: EmailOpensService) {}

  /**
   * Always the GIF, whatever the token and whatever happens while recording, so a mail client never
   * shows a broken image and the answer says nothing about which tokens exist. HEAD is not an open.
   * A token that is not well-formed text (U+0000, a lone surrogate) was never issued: no lookup.
   */
  @Get(':token')
  async pixel(@Param('token') token: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    if (req.method === 'GET' && stringFault(token) === null) {
      try {
        await this.opens.recordFetch(token, req.get('user-agent') ?? null);
      } catch (error) {
        this.logger.error(`could not record an open: ${(error as Error).message}`);
      }
    }
    res
      .status(200)
      .set({
        'Content-Type': 'image/gif',
        'Content-Length': String(TRACKING_GIF.length),
        'Cache-Control': 'no-store, no-cache, must-revalidate, private, max-age=0',
        Pragma: 'no-cache',
        Expires: '0',
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
      })
      .end(req.method === 'HEAD' ? undefined : TRACKING_GIF);
  }
}
