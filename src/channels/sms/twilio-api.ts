import { Inject, Injectable } from '@nestjs/common';
import { Agent, request } from 'undici';
import { UnprocessableError } from '../../common/errors';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { pinnedLookup, UrlPolicy } from '../../outbound-http';

/** An account's credentials, the token in clear only in memory. */
export interface TwilioAccount {
  accountSid: string;
  authToken: string;
}

/** Why a call to the provider failed; `retryable` is false when the provider refused (repeating cannot help). */
export class TwilioError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** Twilio's statuses of an outbound message (Messages resource, `status`). */
export type TwilioMessageStatus =
  'accepted' | 'scheduled' | 'queued' | 'sending' | 'sent' | 'delivered' | 'undelivered' | 'failed' | 'read' | 'canceled' | 'receiving' | 'received';

export interface TwilioMedia {
  content: Buffer;
  /** The type the provider served (or was told in MediaContentType<n>), without parameters. */
  mimeType: string;
}

const API_VERSION = '2010-04-01';
const API_TIMEOUT_MS = 10_000;
/** Largest media item fetched (Twilio limits an MMS to 5 MB). */
export const MAX_MEDIA_BYTES = 5 * 1024 * 1024;
const MAX_MEDIA_REDIRECTS = 3;
/**
 * All the media of one inbound message must be fetched within this (Twilio waits 15 s for the
 * answer; after that a 502 reaches nobody and its retry or fallback never comes).
 */
export const MEDIA_DEADLINE_MS = 12_000;
/** A lookup failure that may pass (the resolver's answer, not the name's absence). */
const TRANSIENT_LOOKUP = /could not be resolved \((EAI_AGAIN|ETIMEOUT|ETIMEDOUT|ESERVFAIL|ECONNREFUSED|ECONNRESET)\)/;

/**
 * Twilio's REST API (TWILIO_API_BASE_URL, so Twilio-compatible providers work too): checking an
 * account's credentials, creating a message, fetching an inbound message's media. Basic auth with
 * the Account SID and auth token, form-encoded bodies, as Twilio documents its API (docs/twilio.md).
 *
 * Media URLs come in requests, so they go through the webhook address policy (resolve, check, pin;
 * WEBHOOK_ALLOWED_CIDRS): a signed request must not make the service fetch from a private network.
 * The credentials go only to the API's own origin, never to a host a redirect leads to.
 */
@Injectable()
export class TwilioApi {
  private readonly baseUrl: string;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly policy: UrlPolicy,
  ) {
    this.baseUrl = config.twilio.apiBaseUrl;
  }

  /**
   * Fetches the account with its credentials, then looks the number up among the account's own
   * (IncomingPhoneNumbers): throws UnprocessableError naming `authToken` when the provider refuses
   * the credentials, or `accountSid` when the account cannot be used or the number is not its.
   */
  async verify(account: TwilioAccount, phoneNumber: string): Promise<void> {
    const accountPath = `/${API_VERSION}/Accounts/${encodeURIComponent(account.accountSid)}`;
    const { statusCode, answer } = await this.checkGet(account, `${accountPath}.json`);
    if (statusCode === 401 || statusCode === 403) {
      throw new UnprocessableError(`the SMS provider refused the Account SID and auth token (${statusCode}): check both in its console`, 'authToken');
    }
    if (statusCode === 404) throw new UnprocessableError(`the SMS provider has no account ${account.accountSid}`, 'accountSid');
    if (statusCode >= 300)
      throw new UnprocessableError(`the SMS provider answered ${statusCode}${providerError(answer)} when the account was checked`, 'accountSid');
    const status = typeof answer?.status === 'string' ? answer.status : 'active';
    if (status !== 'active') throw new UnprocessableError(`the SMS provider account ${account.accountSid} is ${status}, not active`, 'accountSid');

    // The number must be one of the account's: else a request signed by that account could speak for a number it does not have.
    const numbers = await this.checkGet(account, `${accountPath}/IncomingPhoneNumbers.json?${new URLSearchParams({ PhoneNumber: phoneNumber })}`);
    if (numbers.statusCode >= 300) {
      throw new UnprocessableError(
        `the SMS provider answered ${numbers.statusCode}${providerError(numbers.answer)} when the number was looked up`,
        'accountSid',
      );
    }
    const listed = numbers.answer?.incoming_phone_numbers;
    if (!Array.isArray(listed) || !listed.some((n: { phone_number?: unknown } | null) => n?.phone_number === phoneNumber)) {
      throw new UnprocessableError(`${phoneNumber} is not a phone number of the SMS provider account ${account.accountSid}`, 'accountSid');
    }
  }

  /** A GET of the API while connecting: the provider not answering is 422 naming `accountSid`. */
  private async checkGet(account: TwilioAccount, path: string): Promise<{ statusCode: number; answer: Record<string, unknown> | null }> {
    let response;
    try {
      response = await request(`${this.baseUrl}${path}`, {
        method: 'GET',
        headers: { authorization: basic(account) },
        signal: AbortSignal.timeout(API_TIMEOUT_MS),
      });
    } catch (error) {
      throw new UnprocessableError(`the SMS provider at ${this.baseUrl} could not be reached: ${describe(error)}`, 'accountSid');
    }
    return { statusCode: response.statusCode, answer: await readJson(response.body) };
  }

  /** Creates an outbound message (POST …/Messages.json); answers its SID and the provider's first status. */
  async send(
    account: TwilioAccount,
    message: { from: string; to: string; body: string; statusCallback: string },
  ): Promise<{ sid: string; status: TwilioMessageStatus; error: string | null }> {
    const url = `${this.baseUrl}/${API_VERSION}/Accounts/${encodeURIComponent(account.accountSid)}/Messages.json`;
    const form = new URLSearchParams({ To: message.to, From: message.from, Body: message.body, StatusCallback: message.statusCallback });
    let response;
    try {
      response = await request(url, {
        method: 'POST',
        headers: { authorization: basic(account), 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        signal: AbortSignal.timeout(API_TIMEOUT_MS),
      });
    } catch (error) {
      throw new TwilioError(`the SMS provider could not be reached: ${describe(error)}`, true);
    }
    const answer = await readJson(response.body);
    if (response.statusCode === 429 || response.statusCode >= 500) {
      throw new TwilioError(`the SMS provider answered ${response.statusCode}${providerError(answer)}`, true);
    }
    if (response.statusCode >= 300) throw new TwilioError(`the SMS provider refused the message (${response.statusCode})${providerError(answer)}`, false);
    const sid = answer?.sid;
    if (typeof sid !== 'string' || sid === '') throw new TwilioError('the SMS provider answered without a message sid', false);
    const code = answer?.error_code;
    const error = code === null || code === undefined ? null : errorText(String(code), typeof answer?.error_message === 'string' ? answer.error_message : null);
    return { sid, status: String(answer?.status ?? 'queued') as TwilioMessageStatus, error };
  }

  /**
   * Fetches one media item of an inbound message, until `signal` aborts. Throws TwilioError:
   * retryable when the provider could not answer now (network, a lookup that failed for now,
   * timeout, 5xx, 429), not when it never will (a refused address, 4xx, too large).
   */
  async fetchMedia(account: TwilioAccount, rawUrl: string, field: string, signal: AbortSignal): Promise<TwilioMedia> {
    let url = rawUrl;
    for (let redirects = 0; ; redirects++) {
      let checked;
      try {
        checked = await this.policy.check(url);
      } catch (error) {
        const message = (error as Error).message;
        throw new TwilioError(`${field} ${message}`, TRANSIENT_LOOKUP.test(message));
      }
      if (signal.aborted) throw new TwilioError(`${field} could not be fetched within ${MEDIA_DEADLINE_MS} ms`, true);
      // Pinning: the socket goes to the address the policy checked, whatever the name says later.
      const dispatcher = new Agent({ connect: { lookup: pinnedLookup(checked.addresses[0]) } as object });
      try {
        const sameOrigin = checked.url.origin === new URL(this.baseUrl).origin;
        let response;
        try {
          response = await request(checked.url, {
            method: 'GET',
            dispatcher,
            headers: sameOrigin ? { authorization: basic(account) } : {},
            signal,
          });
        } catch (error) {
          if (signal.aborted) throw new TwilioError(`${field} could not be fetched within ${MEDIA_DEADLINE_MS} ms`, true);
          throw new TwilioError(`${field} could not be fetched: ${describe(error)}`, true);
        }
        if (response.statusCode >= 300 && response.statusCode < 400 && response.headers.location) {
          await response.body.dump();
          if (redirects >= MAX_MEDIA_REDIRECTS) throw new TwilioError(`${field} redirected more than ${MAX_MEDIA_REDIRECTS} times`, false);
          url = new URL(String(response.headers.location), checked.url).href;
          continue;
        }
        if (response.statusCode !== 200) {
          await response.body.dump();
          const retryable = response.statusCode === 429 || response.statusCode >= 500;
          throw new TwilioError(`${field} answered ${response.statusCode}`, retryable);
        }
        const declared = Number(response.headers['content-length'] ?? Number.NaN);
        if (declared > MAX_MEDIA_BYTES) {
          await response.body.dump();
          throw new TwilioError(`${field} is ${declared} bytes, more than ${MAX_MEDIA_BYTES}`, false);
        }
        const chunks: Buffer[] = [];
        let size = 0;
        try {
          for await (const chunk of response.body) {
            size += (chunk as Buffer).length;
            if (size > MAX_MEDIA_BYTES) {
              response.body.destroy();
              throw new TwilioError(`${field} is more than ${MAX_MEDIA_BYTES} bytes`, false);
            }
            chunks.push(chunk as Buffer);
          }
        } catch (error) {
          if (error instanceof TwilioError) throw error;
          if (signal.aborted) throw new TwilioError(`${field} could not be fetched within ${MEDIA_DEADLINE_MS} ms`, true);
          throw new TwilioError(`${field} could not be read: ${describe(error)}`, true);
        }
        const mimeType = String(response.headers['content-type'] ?? 'application/octet-stream')
          .split(';')[0]
          .trim()
          .toLowerCase();
        return { content: Buffer.concat(chunks), mimeType };
      } finally {
        void dispatcher.close().catch(() => undefined);
      }
    }
  }
}

/** How a provider's error code reads on a message: `Twilio error 30003: Unreachable destination handset`. */
export function errorText(code: string, message: string | null): string {
  return `Twilio error ${code}${message ? `: ${message}` : ''}`.slice(0, 1000);
}

function basic(account: TwilioAccount): string {
  return `Basic ${Buffer.from(`${account.accountSid}:${account.authToken}`).toString('base64')}`;
}

/** The provider's answer as JSON (at most 64 KiB read), or null. */
async function readJson(body: AsyncIterable<Buffer> & { dump: () => Promise<void> }): Promise<Record<string, unknown> | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > 64 * 1024) break;
    chunks.push(chunk);
  }
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** `: Twilio error 21211: The 'To' number … is not a valid phone number.` from Twilio's error answer, or nothing. */
function providerError(answer: Record<string, unknown> | null): string {
  if (!answer || answer.code === undefined) return '';
  return `: ${errorText(String(answer.code), typeof answer.message === 'string' ? answer.message : null)}`;
}

function describe(error: unknown): string {
  const e = error as { name?: string; code?: string; message?: string; cause?: { code?: string } };
  if (e?.name === 'TimeoutError' || e?.code === 'UND_ERR_HEADERS_TIMEOUT') return 'no answer in time';
  return [e?.code ?? e?.cause?.code, e?.message].filter(Boolean).join(': ').slice(0, 300) || 'network error';
}
