import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Response } from 'express';
import { Public } from '../identity/auth.decorators';
import { RateLimitPerIp } from '../limits/ip-rate-limit.guard';
import { AttachmentsService } from './attachments.service';

/**
 * Signed attachment downloads (links from webhooks and read_attachment, valid 1 hour). No API key:
 * the signature says whom the link was minted for, and it works while that holder may see the line.
 */
@ApiTags('attachments')
@Public()
@RateLimitPerIp('attachment')
@Controller('attachments')
export class AttachmentDownloadController {
  constructor(private readonly attachments: AttachmentsService) {}

  @Get(':id/download')
  @ApiOperation({
    summary:
      'The file behind a signed link: 200 with its bytes, 403 for a bad or expired signature, 404 if it no longer exists or whoever the link was minted for may no longer see its line, 409 if its bytes were not stored (the org had reached its attachment storage quota)',
  })
  async download(
    @Param('id') id: string,
    @Query('for') holder: unknown,
    @Query('expires') expires: unknown,
    @Query('sig') sig: unknown,
    @Res() res: Response,
  ): Promise<void> {
    const file = await this.attachments.download(id, { for: stringOrUndefined(holder), expires: stringOrUndefined(expires), sig: stringOrUndefined(sig) });
    res.status(200);
    res.setHeader('Content-Type', safeContentType(file.mimeType));
    res.setHeader('Content-Disposition', contentDisposition(file.filename));
    res.setHeader('Content-Length', String(file.content.length));
    // The file is the sender's, not ours: never sniffed, rendered or run in our origin, kept out of shared caches.
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    res.setHeader('Cache-Control', 'private, no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.end(file.content);
  }
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function safeContentType(mimeType: string): string {
  return /^[\w.+-]+\/[\w.+-]+$/.test(mimeType) ? mimeType : 'application/octet-stream';
}

/**
 * RFC 6266: `attachment`, an ASCII `filename` fallback for old clients, and the exact name as
 * `filename*` in RFC 8187 (UTF-8, percent-encoded).
 */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_') || 'attachment';
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
