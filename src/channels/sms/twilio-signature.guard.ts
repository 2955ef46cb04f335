import { CanActivate, ExecutionContext, Inject, Injectable, Logger } from '@nestjs/common';
import { Request } from 'express';
import { ForbiddenError, ValidationError } from '../../common/errors';
import { SecretBox } from '../../common/secret-box';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { SealedAccountRow, SmsProvidersRepository } from './sms-providers.repository';
import { TwilioParams, twilioSignatureMatches } from './twilio-signature';

/** A form Twilio signed: its parameters, and the lines of the account whose token the signature matched. */
export interface SignedTwilioRequest {
  accountSid: string;
  /** Every parameter; a name given more than once has all its values. */
  params: TwilioParams;
  /** The live lines connected to the account with the token that signed (usually one per number of the account). */
  lines: Array<{ lineId: string; orgId: string; address: string; authToken: string }>;
}

export const TWILIO_SIGNATURE_HEADER = 'x-twilio-signature';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Authenticates what Twilio posts (docs/twilio.md, "Signatures"): the request's `AccountSid` names
 * the account, and `X-Twilio-Signature` must be Twilio's HMAC-SHA1, keyed with that account's auth
 * token, of PUBLIC_BASE_URL + the path and query + every POST parameter sorted by name
 * (twilioSignatureMatches, which also accepts the URL with and without its port).
 * Runs after the body was read (the route is @SignedBody()); anything else is 403 with nothing done.
 */
@Injectable()
export class TwilioSignatureGuard implements CanActivate {
  private readonly logger = new Logger(TwilioSignatureGuard.name);

  constructor(
    private readonly providers: SmsProvidersRepository,
    private readonly box: SecretBox,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request & { twilio?: SignedTwilioRequest }>();
    const signature = request.headers[TWILIO_SIGNATURE_HEADER];
    if (typeof signature !== 'string' || signature === '') {
      throw new ForbiddenError('X-Twilio-Signature is required: this route takes only requests Twilio signed', 'X-Twilio-Signature');
    }
    const params = formParams(request);
    const accountSid = typeof params.AccountSid === 'string' ? params.AccountSid : '';
    const url = `${this.config.publicBaseUrl}${request.originalUrl}`;
    const lines: SignedTwilioRequest['lines'] = [];
    if (accountSid !== '') {
      // One check per distinct token, however many lines the account has (the SID is not a secret:
      // a forged request must not cost a signature per line).
      const byToken = new Map<string, SealedAccountRow[]>();
      for (const row of await this.providers.byAccountSid(accountSid)) {
        let authToken: string;
        try {
          authToken = this.box.open(row.auth_token_sealed);
        } catch {
          this.logger.error(`the auth token of the SMS provider of line ${row.line_id} cannot be opened with SECRETS_KEY`);
          continue;
        }
        byToken.set(authToken, [...(byToken.get(authToken) ?? []), row]);
      }
      for (const [authToken, rows] of byToken) {
        if (!twilioSignatureMatches(authToken, signature, url, params)) continue;
        for (const row of rows) lines.push({ lineId: row.line_id, orgId: row.org_id, address: row.address, authToken });
      }
    }
    if (lines.length === 0) {
      throw new ForbiddenError(
        'X-Twilio-Signature does not match: the request was not signed with the auth token of an account connected to a line, for this URL and these parameters',
        'X-Twilio-Signature',
      );
    }
    request.twilio = { accountSid, params, lines };
    return true;
  }
}

/** The form's parameters (the body was read raw); not a UTF-8 form is 400 naming Content-Type. */
function formParams(request: Request): TwilioParams {
  if (!request.is('application/x-www-form-urlencoded')) {
    throw new ValidationError('the body must be a form (application/x-www-form-urlencoded), as Twilio sends it', 'Content-Type');
  }
  const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new ValidationError('the form is not UTF-8', 'body');
  }
  // No prototype: a parameter named __proto__ is a parameter like any other.
  const params: TwilioParams = Object.create(null) as TwilioParams;
  for (const [name, value] of new URLSearchParams(text)) {
    const known = params[name];
    if (known === undefined) params[name] = value;
    else if (Array.isArray(known)) known.push(value);
    else params[name] = [known, value];
  }
  return params;
}
