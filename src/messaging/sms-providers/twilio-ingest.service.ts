import { BadGatewayException, Injectable, Logger } from '@nestjs/common';
import { extension } from 'mime-types';
import { E164 } from '../../accounts/account.types';
import { NotFoundError, ValidationError } from '../../common/errors';
import { ConversationsService, InboundAttachment, InboundResult } from '../conversations/conversations.service';
import { MessageStatus } from '../outbound/outbound.repository';
import { OutboundService } from '../outbound/outbound.service';
import { SmsProvidersRepository } from './sms-providers.repository';
import { errorText, TwilioApi, TwilioError } from './twilio-api';
import { SignedTwilioRequest } from './twilio-signature.guard';

/** Media items of one inbound message (Twilio sends at most 10). */
const MAX_MEDIA = 10;
const MAX_BODY_CHARS = 10_000;
const SID = /^[A-Za-z0-9_-]{1,200}$/;

/**
 * What Twilio's status callbacks say, as the spec's message statuses: `delivered` (and `read`)
 * moves a SENT message to DELIVERED, `undelivered`, `failed` and `canceled` to FAILED with the
 * ErrorCode kept; the statuses before (`accepted`, `queued`, `sending`, `sent`, ...) change
 * nothing, since the message is SENT once Twilio accepted it.
 */
const REPORTS: Record<string, 'DELIVERED' | 'FAILED' | undefined> = {
  delivered: 'DELIVERED',
  read: 'DELIVERED',
  undelivered: 'FAILED',
  failed: 'FAILED',
  canceled: 'FAILED',
};

/**
 * Twilio's requests, once their signature is checked (TwilioSignatureGuard): an inbound message
 * takes the inbound path of every SMS (once per MessageSid), its media fetched and stored as
 * attachments; a status callback moves an outbound message (docs/twilio.md).
 */
@Injectable()
export class TwilioIngestService {
  private readonly logger = new Logger(TwilioIngestService.name);

  constructor(
    private readonly conversations: ConversationsService,
    private readonly outbound: OutboundService,
    private readonly providers: SmsProvidersRepository,
    private readonly api: TwilioApi,
  ) {}

  async receive(signed: SignedTwilioRequest): Promise<InboundResult> {
    const to = text(signed, 'To', E164, 'an E.164 phone number');
    const from = text(signed, 'From', E164, 'an E.164 phone number');
    const sid = text(signed, 'MessageSid', SID, "Twilio's message SID");
    const body = signed.params.Body === undefined ? '' : text(signed, 'Body');
    if (body.length > MAX_BODY_CHARS) throw new ValidationError(`Body is longer than ${MAX_BODY_CHARS} characters`, 'Body');
    const numMedia = signed.params.NumMedia === undefined ? 0 : Number(text(signed, 'NumMedia', /^\d{1,2}$/, 'a number of media items'));
    if (numMedia > MAX_MEDIA) throw new ValidationError(`NumMedia is more than ${MAX_MEDIA}`, 'NumMedia');
    const line = signed.lines.find((l) => l.address === to);
    if (!line) throw new NotFoundError(`no phone line connected to Twilio account ${signed.accountSid} has the number ${to}`, 'To');

    // A repeat (Twilio retrying) is answered from what was stored, without fetching the media again.
    const attachments = (await this.providers.inboundRecorded(line.lineId, sid)) ? [] : await this.media(signed, line.authToken, sid, numMedia);
    return this.conversations.recordInbound({ to, channel: 'SMS', from: { kind: 'PHONE', value: from }, body, providerMessageId: sid, attachments });
  }

  async status(signed: SignedTwilioRequest): Promise<{ messageId: string; status: MessageStatus; changed: boolean }> {
    const sid = text(signed, 'MessageSid', SID, "Twilio's message SID");
    const reported = text(signed, 'MessageStatus', /^[a-z_]{1,40}$/, "one of Twilio's message statuses");
    const code = signed.params.ErrorCode === undefined || signed.params.ErrorCode === '' ? null : text(signed, 'ErrorCode', /^\d{1,10}$/, 'a number');
    const message = signed.params.ErrorMessage === undefined ? null : text(signed, 'ErrorMessage').slice(0, 500);
    const lineIds = signed.lines.map((l) => l.lineId);
    const status = REPORTS[reported];
    try {
      if (status === undefined) return await this.outbound.smsReportUnchanged(sid, lineIds);
      const error = status === 'FAILED' ? (code ? errorText(code, message) : `Twilio status ${reported}`) : undefined;
      return await this.outbound.applySmsReport({ providerMessageId: sid, status, error }, lineIds);
    } catch (error) {
      if (error instanceof NotFoundError) throw new NotFoundError(`no outbound SMS of account ${signed.accountSid} has MessageSid ${sid}`, 'MessageSid');
      throw error;
    }
  }

  /**
   * The message's media as attachments. A media item that will never be fetched (a refused
   * address, a 4xx, too large) is left out with a warning, so the message itself is not lost; one
   * that failed for now (network, 5xx) fails the request with 502, nothing recorded, so Twilio's
   * retry or fallback URL can deliver the whole message again.
   */
  private async media(signed: SignedTwilioRequest, authToken: string, sid: string, count: number): Promise<InboundAttachment[]> {
    const account = { accountSid: signed.accountSid, authToken };
    const attachments: InboundAttachment[] = [];
    for (let i = 0; i < count; i++) {
      const field = `MediaUrl${i}`;
      const url = text(signed, field);
      try {
        const media = await this.api.fetchMedia(account, url, field);
        const declared = typeof signed.params[`MediaContentType${i}`] === 'string' ? String(signed.params[`MediaContentType${i}`]) : '';
        const mimeType = /^[\w.+-]+\/[\w.+-]+$/.test(declared) ? declared.toLowerCase() : media.mimeType;
        attachments.push({ filename: `${sid}-${i}.${extension(mimeType) || 'bin'}`, mimeType, content: media.content });
      } catch (error) {
        if (error instanceof TwilioError && !error.retryable) {
          this.logger.warn(`inbound SMS ${sid}: ${error.message}; the message is recorded without it`);
          continue;
        }
        throw new BadGatewayException(`${(error as Error).message}; nothing was recorded, the same request may be sent again`);
      }
    }
    return attachments;
  }
}

/** A single-valued parameter, matching `pattern` when given: else 400 naming it. */
function text(signed: SignedTwilioRequest, name: string, pattern?: RegExp, what?: string): string {
  const value = signed.params[name];
  if (value === undefined) throw new ValidationError(`${name} is required`, name);
  if (typeof value !== 'string') throw new ValidationError(`${name} is given more than once`, name);
  if (pattern && !pattern.test(value)) throw new ValidationError(`${name} must be ${what}`, name);
  return value;
}
