import { BadGatewayException, Injectable, Logger } from '@nestjs/common';
import { extension } from 'mime-types';
import { E164 } from '../../identity/account.types';
import { NotFoundError, ValidationError } from '../../common/errors';
import { ConversationsService, InboundAttachment, InboundResult } from '../../conversations/conversations.service';
import { MessageStatus } from '../../conversations/message.entity';
import { SmsDeliveryService } from './sms-delivery.service';
import { SmsKeywordsService } from './sms-keywords.service';
import { SmsProvidersRepository } from './sms-providers.repository';
import { errorText, MEDIA_DEADLINE_MS, TwilioApi, TwilioError } from './twilio-api';
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
const REPORTS = new Map<string, 'DELIVERED' | 'FAILED'>([
  ['delivered', 'DELIVERED'],
  ['read', 'DELIVERED'],
  ['undelivered', 'FAILED'],
  ['failed', 'FAILED'],
  ['canceled', 'FAILED'],
]);

/** Twilio's own SIDs: an account `AC` + 32 hex digits, a message `SM` or `MM` + 32 (compatible providers may use others). */
const TWILIO_ACCOUNT_SID = /^AC[0-9a-f]{32}$/;
const TWILIO_MESSAGE_SID = /^(SM|MM)[0-9a-f]{32}$/;

/**
 * Twilio's requests, once their signature is checked (TwilioSignatureGuard): an inbound message
 * takes the inbound path of every SMS (once per MessageSid), its media fetched and stored as
 * attachments; a status callback moves an outbound message (docs/twilio.md).
 */
@Injectable()
export class TwilioIngestService {
  private readonly logger = new Logger(TwilioIngestService.name);
  /** Inbound messages being recorded by this process, by line and MessageSid: a repeat racing the first waits for it. */
  private readonly inFlight = new Map<string, Promise<InboundResult>>();

  constructor(
    private readonly conversations: ConversationsService,
    private readonly sms: SmsDeliveryService,
    private readonly providers: SmsProvidersRepository,
    private readonly api: TwilioApi,
    private readonly keywords: SmsKeywordsService,
  ) {}

  async receive(signed: SignedTwilioRequest): Promise<InboundResult> {
    const to = text(signed, 'To', E164, 'an E.164 phone number');
    const from = text(signed, 'From', E164, 'an E.164 phone number');
    const sid = messageSid(signed);
    const body = signed.params.Body === undefined ? '' : text(signed, 'Body');
    if (body.length > MAX_BODY_CHARS) throw new ValidationError(`Body is longer than ${MAX_BODY_CHARS} characters`, 'Body');
    const numMedia = signed.params.NumMedia === undefined ? 0 : Number(text(signed, 'NumMedia', /^\d{1,2}$/, 'a number of media items'));
    if (numMedia > MAX_MEDIA) throw new ValidationError(`NumMedia is more than ${MAX_MEDIA}`, 'NumMedia');
    const line = signed.lines.find((l) => l.address === to);
    if (!line) throw new NotFoundError(`no phone line connected to Twilio account ${signed.accountSid} has the number ${to}`, 'To');

    const key = `${line.lineId}:${sid}`;
    const running = this.inFlight.get(key);
    if (running) return running;
    const recording = (async () => {
      // A repeat (Twilio retrying) is answered from what was stored, without fetching the media again.
      const attachments = (await this.providers.inboundRecorded(line.lineId, sid)) ? [] : await this.media(signed, line.authToken, sid, numMedia);
      const recorded = await this.conversations.recordInbound({
        to,
        channel: 'SMS',
        from: { kind: 'PHONE', value: from },
        body,
        providerMessageId: sid,
        attachments,
      });
      // STOP, START and HELP: the opt-out is recorded here; Twilio answers the sender itself (docs/twilio.md, "Opt-out keywords").
      await this.keywords.afterInbound({ to, from, body }, recorded);
      return recorded;
    })();
    this.inFlight.set(key, recording);
    try {
      return await recording;
    } finally {
      this.inFlight.delete(key);
    }
  }

  async status(signed: SignedTwilioRequest): Promise<{ messageId: string | null; status: MessageStatus | null; changed: boolean; held: boolean }> {
    const sid = messageSid(signed);
    const reported = text(signed, 'MessageStatus', /^[a-z_]{1,40}$/, "one of Twilio's message statuses");
    const code = signed.params.ErrorCode === undefined || signed.params.ErrorCode === '' ? null : text(signed, 'ErrorCode', /^\d{1,10}$/, 'a number');
    const message = signed.params.ErrorMessage === undefined ? null : text(signed, 'ErrorMessage').slice(0, 500);
    const status = REPORTS.get(reported);
    if (status === undefined) {
      const state = await this.sms.reportState(
        sid,
        signed.lines.map((l) => l.lineId),
      );
      if (!state) throw new NotFoundError(`no outbound SMS of account ${signed.accountSid} has MessageSid ${sid}`, 'MessageSid');
      return { ...state, held: false };
    }
    // The sending line: the callback's From is our number.
    const from = signed.params.From;
    const line = signed.lines.find((l) => l.address === from);
    if (!line) throw new NotFoundError(`no phone line connected to Twilio account ${signed.accountSid} has the number From ${String(from)}`, 'From');
    const error = status === 'FAILED' ? (code ? errorText(code, message) : `Twilio status ${reported}`) : undefined;
    return this.sms.applyOrHoldReport({ providerMessageId: sid, status, error }, line.lineId);
  }

  /**
   * The message's media as attachments. A media item that will never be fetched (a refused
   * address, a 4xx, too large) is left out with a warning, so the message itself is not lost; one
   * that failed for now (network, 5xx) fails the request with 502, nothing recorded, so Twilio's
   * retry or fallback URL can deliver the whole message again.
   */
  private async media(signed: SignedTwilioRequest, authToken: string, sid: string, count: number): Promise<InboundAttachment[]> {
    const account = { accountSid: signed.accountSid, authToken };
    // All at once, within one deadline: the answer must reach Twilio before it gives up (15 s).
    const signal = AbortSignal.timeout(MEDIA_DEADLINE_MS);
    const fetched = await Promise.allSettled(
      Array.from({ length: count }, async (_, i): Promise<InboundAttachment> => {
        const field = `MediaUrl${i}`;
        const media = await this.api.fetchMedia(account, text(signed, field), field, signal);
        const declared = typeof signed.params[`MediaContentType${i}`] === 'string' ? String(signed.params[`MediaContentType${i}`]) : '';
        const mimeType = /^[\w.+-]+\/[\w.+-]+$/.test(declared) ? declared.toLowerCase() : media.mimeType;
        return { filename: `${sid}-${i}.${extension(mimeType) || 'bin'}`, mimeType, content: media.content };
      }),
    );
    const attachments: InboundAttachment[] = [];
    for (const outcome of fetched) {
      if (outcome.status === 'fulfilled') {
        attachments.push(outcome.value);
        continue;
      }
      const error = outcome.reason as Error;
      if (error instanceof TwilioError && !error.retryable) {
        this.logger.warn(`inbound SMS ${sid}: ${error.message}; the message is recorded without it`);
        continue;
      }
      if (!(error instanceof TwilioError)) throw error;
      throw new BadGatewayException(`${error.message}; nothing was recorded, the same request may be sent again`);
    }
    return attachments;
  }
}

/**
 * The request's MessageSid. Twilio signs names and values joined with nothing between them, so a
 * captured request can be re-sent with a parameter's boundary moved (`MessageSid=SM…NumMedia0`
 * signs like `MessageSid=SM…&NumMedia=0`): the SIDs Twilio repeats (SmsSid, SmsMessageSid) must
 * agree with it, and an account of Twilio's own must use Twilio's SID format.
 */
function messageSid(signed: SignedTwilioRequest): string {
  const sid = text(signed, 'MessageSid', SID, "Twilio's message SID");
  if (TWILIO_ACCOUNT_SID.test(signed.accountSid) && !TWILIO_MESSAGE_SID.test(sid)) {
    throw new ValidationError('MessageSid must be a Twilio message SID (SM or MM and 32 hexadecimal digits)', 'MessageSid');
  }
  for (const name of ['SmsSid', 'SmsMessageSid']) {
    if (signed.params[name] !== undefined && signed.params[name] !== sid) throw new ValidationError(`${name} must be the same as MessageSid`, name);
  }
  return sid;
}

/** A single-valued parameter, matching `pattern` when given: else 400 naming it. */
function text(signed: SignedTwilioRequest, name: string, pattern?: RegExp, what?: string): string {
  const value = signed.params[name];
  if (value === undefined) throw new ValidationError(`${name} is required`, name);
  if (typeof value !== 'string') throw new ValidationError(`${name} is given more than once`, name);
  if (pattern && !pattern.test(value)) throw new ValidationError(`${name} must be ${what}`, name);
  return value;
}
