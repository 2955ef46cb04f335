import { twilioSignature, twilioSignatureMatches } from './twilio-signature';

/**
 * Signatures computed by Twilio, not by this code base: the worked example of Twilio's webhook
 * security page, and the vectors of the validation tests of Twilio's Node library (twilio-node,
 * spec/validation.spec.js), which cover the port variants and repeated parameters.
 */
const TOKEN = '12345';
const SIGNED_URL = 'https://mycompany.com/myapp.php?foo=1&bar=2';
const DOCS_EXAMPLE = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
const LIBRARY_PARAMS = { CallSid: 'CA1234567890ABCDE', Caller: '+14158675309', Digits: '1234', From: '+14158675309', To: '+18005551212' };

describe('Twilio request signatures', () => {
  it("computes the signature of Twilio's documented example", () => {
    expect(twilioSignature(TOKEN, SIGNED_URL, DOCS_EXAMPLE)).toBe('0/KCTR6DLpKmkAf8muzZqo1nDgQ=');
    expect(twilioSignatureMatches(TOKEN, '0/KCTR6DLpKmkAf8muzZqo1nDgQ=', SIGNED_URL, DOCS_EXAMPLE)).toBe(true);
  });

  it.each([
    ['the URL as signed', 'RSOYDt4T1cUTdK1PDd93/VVr8B8=', SIGNED_URL, LIBRARY_PARAMS],
    ['an https URL with a port, signed without it', 'RSOYDt4T1cUTdK1PDd93/VVr8B8=', SIGNED_URL.replace('.com', '.com:1234'), LIBRARY_PARAMS],
    [
      'an http URL with a port, signed with it',
      'Zmvh+3yNM1Phv2jhDCwEM3q5ebU=',
      SIGNED_URL.replace('.com', '.com:1234').replace('https', 'http'),
      LIBRARY_PARAMS,
    ],
    ['an https URL without a port, signed with :443', 'kvajT1Ptam85bY51eRf/AJRuM3w=', SIGNED_URL, LIBRARY_PARAMS],
    ['an http URL without a port, signed with :80', '0ZXoZLH/DfblKGATFgpif+LLRf4=', SIGNED_URL.replace('https', 'http'), LIBRARY_PARAMS],
    ['a URL with credentials', 'CukzLTc1tT5dXEDIHm/tKBanW10=', 'https://user:pass@mycompany.com/myapp.php?foo=1&bar=2', LIBRARY_PARAMS],
    ['a URL with credentials, signed with :443', 'ZQFR1PTIZXF2MXB8ZnKCvnnA+rI=', 'https://user:pass@mycompany.com/myapp.php?foo=1&bar=2', LIBRARY_PARAMS],
    ['a repeated parameter', '83O6e2vORAoJHUNzJjDWN1jz+BA=', SIGNED_URL, { 'MessagingBinding.Address': ['+1325xxxxxxx', '+1415xxxxxxx'] }],
    ['a repeated parameter in another order', '83O6e2vORAoJHUNzJjDWN1jz+BA=', SIGNED_URL, { 'MessagingBinding.Address': ['+1415xxxxxxx', '+1325xxxxxxx'] }],
    ['a value given twice', 'IK+Dwps556ElfBT0I3Rgjkr1wJU=', SIGNED_URL, { Sid: 'CA123', SidAccount: 'AC123', Digits: ['5678', '1234', '1234'] }],
  ])("accepts Twilio's signature of %s", (_what, signature, url, params) => {
    expect(twilioSignatureMatches(TOKEN, signature, url, params)).toBe(true);
  });

  it.each([
    ['a changed parameter', TOKEN, SIGNED_URL, { ...DOCS_EXAMPLE, Digits: '1235' }],
    ['an added parameter', TOKEN, SIGNED_URL, { ...DOCS_EXAMPLE, Body: '' }],
    ['another query', TOKEN, SIGNED_URL.replace('bar=2', 'bar=3'), DOCS_EXAMPLE],
    ['another path', TOKEN, SIGNED_URL.replace('myapp', 'other'), DOCS_EXAMPLE],
    ['another scheme', TOKEN, SIGNED_URL.replace('https', 'http'), DOCS_EXAMPLE],
    ['another host', TOKEN, SIGNED_URL.replace('mycompany', 'mycompany2'), DOCS_EXAMPLE],
    ['another token', '54321', SIGNED_URL, DOCS_EXAMPLE],
  ])('refuses the example with %s', (_what, token, url, params) => {
    expect(twilioSignatureMatches(token, '0/KCTR6DLpKmkAf8muzZqo1nDgQ=', url, params)).toBe(false);
  });

  it('refuses a signature that is empty, truncated, padded or of another length, without throwing', () => {
    for (const signature of ['', '0/KCTR6DLpKmkAf8muzZqo1nDgQ', '0/KCTR6DLpKmkAf8muzZqo1nDgQ==', '0/KCTR6DLpKmkAf8muzZqo1nDgQ= ', 'é'.repeat(14)]) {
      expect(twilioSignatureMatches(TOKEN, signature, SIGNED_URL, DOCS_EXAMPLE)).toBe(false);
    }
  });

  it('signs names and values of any text as UTF-8, and a parameter named __proto__ like any other', () => {
    const params = Object.assign(Object.create(null) as Record<string, string>, { Body: 'héllo 👋', ['__proto__']: 'x' });
    const signature = twilioSignature(TOKEN, SIGNED_URL, params);
    expect(twilioSignatureMatches(TOKEN, signature, SIGNED_URL, params)).toBe(true);
    expect(twilioSignatureMatches(TOKEN, signature, SIGNED_URL, { Body: 'héllo 👋' })).toBe(false);
  });
});
