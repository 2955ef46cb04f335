import { randomBytes } from 'node:crypto';
import { ExecutionContext } from '@nestjs/common';
import { ForbiddenError } from '../../common/errors';
import { SecretBox } from '../../common/secret-box';
import { AppConfig } from '../../config/app-config';
import { SealedAccountRow, SmsProvidersRepository } from './sms-providers.repository';
import { twilioSignature } from './twilio-signature';
import { SignedTwilioRequest, TwilioSignatureGuard } from './twilio-signature.guard';

/**
 * The worked example of Twilio's webhook security page (auth token 12345, the request below), with
 * an AccountSid added (it names the account); twilio-signature.spec.ts checks the signing itself
 * against Twilio's own signatures.
 */
const VECTOR = {
  authToken: '12345',
  origin: 'https://mycompany.com',
  pathAndQuery: '/myapp.php?foo=1&bar=2',
  body: 'CallSid=CA1234567890ABCDE&Caller=%2B12349013030&Digits=1234&From=%2B12349013030&To=%2B18005551212&AccountSid=AC1',
};

describe('TwilioSignatureGuard', () => {
  const box = new SecretBox({ secretsKey: randomBytes(32), secretsKeyFallbacks: [] });

  /** The guard with one connected line whose account AC1 has `token`; the example's params lack AccountSid, so it is added to both. */
  function guard(token: string) {
    const rows: SealedAccountRow[] = [{ line_id: 'line-1', address: '+18005551212', org_id: 'org-1', account_sid: 'AC1', auth_token_sealed: box.seal(token) }];
    const providers = { byAccountSid: async (sid: string) => (sid === 'AC1' ? rows : []) } as unknown as SmsProvidersRepository;
    return new TwilioSignatureGuard(providers, box, { publicBaseUrl: VECTOR.origin } as AppConfig);
  }

  function context(body: string, signature: string | undefined, pathAndQuery = VECTOR.pathAndQuery) {
    const request = {
      headers: signature === undefined ? {} : { 'x-twilio-signature': signature },
      originalUrl: pathAndQuery,
      body: Buffer.from(body),
      is: (type: string) => type === 'application/x-www-form-urlencoded',
    } as unknown as { twilio?: SignedTwilioRequest };
    const ctx = { switchToHttp: () => ({ getRequest: () => request }) } as unknown as ExecutionContext;
    return { ctx, request };
  }

  it('lets through a request signed with the account token, with its lines and parameters', async () => {
    const signed = twilioSignature(VECTOR.authToken, `${VECTOR.origin}${VECTOR.pathAndQuery}`, Object.fromEntries(new URLSearchParams(VECTOR.body)));
    const { ctx, request } = context(VECTOR.body, signed);
    await expect(guard(VECTOR.authToken).canActivate(ctx)).resolves.toBe(true);
    expect(request.twilio).toMatchObject({
      accountSid: 'AC1',
      params: { Digits: '1234', To: '+18005551212' },
      lines: [{ lineId: 'line-1', authToken: '12345' }],
    });
  });

  it.each([
    ['a changed parameter', VECTOR.body.replace('Digits=1234', 'Digits=1235'), VECTOR.pathAndQuery, VECTOR.authToken],
    ['another query', VECTOR.body, '/myapp.php?foo=1&bar=3', VECTOR.authToken],
    ['another token', VECTOR.body, VECTOR.pathAndQuery, '54321'],
    ['an unknown account', VECTOR.body.replace('AccountSid=AC1', 'AccountSid=AC2'), VECTOR.pathAndQuery, VECTOR.authToken],
  ])('refuses %s with 403 naming X-Twilio-Signature', async (_what, body, pathAndQuery, token) => {
    const signed = twilioSignature(VECTOR.authToken, `${VECTOR.origin}${VECTOR.pathAndQuery}`, Object.fromEntries(new URLSearchParams(VECTOR.body)));
    const { ctx } = context(body, signed, pathAndQuery);
    await expect(guard(token).canActivate(ctx)).rejects.toMatchObject({ constructor: ForbiddenError, field: 'X-Twilio-Signature' });
  });

  it('refuses a request without the header', async () => {
    await expect(guard(VECTOR.authToken).canActivate(context(VECTOR.body, undefined).ctx)).rejects.toThrow(/X-Twilio-Signature is required/);
  });

  it('keeps every value of a repeated parameter, and a parameter named __proto__ as a parameter', async () => {
    const body = `${VECTOR.body}&Tag=a&Tag=b&__proto__=x`;
    const signed = twilioSignature(VECTOR.authToken, `${VECTOR.origin}${VECTOR.pathAndQuery}`, {
      ...Object.fromEntries(new URLSearchParams(VECTOR.body)),
      Tag: ['a', 'b'],
      ['__proto__']: 'x',
    });
    const { ctx, request } = context(body, signed);
    await expect(guard(VECTOR.authToken).canActivate(ctx)).resolves.toBe(true);
    expect(request.twilio!.params.Tag).toEqual(['a', 'b']);
    expect(Object.getOwnPropertyDescriptor(request.twilio!.params, '__proto__')?.value).toBe('x');
  });
});
