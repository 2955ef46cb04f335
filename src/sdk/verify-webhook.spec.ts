import { createHmac, generateKeyPairSync, KeyObject, sign as cryptoSign, verify as cryptoVerify } from 'node:crypto';
import {
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_HEADER,
  WebhookVerificationError,
  WebhookVerificationErrorCode,
  parseSignatureHeader,
  publicKeyFromJwk,
  publicKeyFromString,
  rememberedIds,
  signStandardWebhook,
  signWebhook,
  symmetricKey,
  toPublicKeyString,
  toStandardSecret,
  verifyStandardWebhook,
  verifyWebhook,
  verifyWebhookRequest,
} from './index';

// Secrets as handed out by register_webhook / rotate_webhook_secret: 64 hex characters.
const CURRENT = 'a3f1c2e4b5d6978812345678909abcdeffedcba0987654321aabbccddeeff001';
const PREVIOUS = '0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0';
const OTHER = '1111111111111111111111111111111111111111111111111111111111111111';

const T = 1_750_000_000;
const AT_T = new Date(T * 1000);

const envelope = {
  id: 'evt_0123456789abcdef0123456789abcdef',
  type: 'message.received',
  createdAt: '2025-06-15T15:06:40.123Z',
  endpointId: 'wep_1',
  mode: 'concise',
  data: { thread: { id: 'thr_1', subject: 'Héllo ✓', lastMessageAt: null, messageCount: 1 }, labels: [] },
};
const BODY = JSON.stringify(envelope);

/** Independent of the code under test: the spec's formula written out with node:crypto. */
function hmac(secret: string, t: number | string, body: string | Buffer): string {
  return createHmac('sha256', secret)
    .update(Buffer.concat([Buffer.from(`${t}.`), Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8')]))
    .digest('hex');
}

function codeOf(run: () => unknown): WebhookVerificationErrorCode {
  try {
    run();
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.code;
    throw error;
  }
  throw new Error('expected a WebhookVerificationError, but verification passed');
}

describe('verifyWebhook', () => {
  describe('happy path', () => {
    it('returns the envelope for a header signed independently with node:crypto', () => {
      const header = `t=${T},v1=${hmac(CURRENT, T, BODY)}`;
      expect(verifyWebhook(BODY, header, [CURRENT], { now: AT_T })).toEqual(envelope);
    });

    it('accepts the body as a Buffer and as a Uint8Array slice, hashing the bytes as they are', () => {
      const bytes = Buffer.from(BODY, 'utf8');
      const header = `t=${T},v1=${hmac(CURRENT, T, bytes)}`;
      expect(verifyWebhook(bytes, header, [CURRENT], { now: AT_T })).toEqual(envelope);

      // A view into a larger buffer: only the viewed bytes are the body.
      const backing = Buffer.concat([Buffer.from('xxxx'), bytes, Buffer.from('yyyy')]);
      const view = new Uint8Array(backing.buffer, backing.byteOffset + 4, bytes.length);
      expect(verifyWebhook(view, header, [CURRENT], { now: AT_T })).toEqual(envelope);
    });

    it('does not re-encode a Buffer body: non-UTF-8 bytes are signed as bytes (and then refused as payload)', () => {
      const bytes = Buffer.concat([Buffer.from('{"id":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
      const header = `t=${T},v1=${hmac(CURRENT, T, bytes)}`;
      // Signature passes on the raw bytes; the payload check then refuses invalid UTF-8.
      expect(codeOf(() => verifyWebhook(bytes, header, [CURRENT], { now: AT_T }))).toBe('INVALID_PAYLOAD');
      // Had the bytes been re-encoded (U+FFFD replacement), the signature would not have matched.
      const reencoded = Buffer.from(bytes.toString('utf8'), 'utf8');
      expect(codeOf(() => verifyWebhook(reencoded, header, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    });

    it('uses the secret as its UTF-8 string, not hex-decoded', () => {
      const hexDecodedKey = createHmac('sha256', Buffer.from(CURRENT, 'hex')).update(`${T}.${BODY}`).digest('hex');
      expect(codeOf(() => verifyWebhook(BODY, `t=${T},v1=${hexDecodedKey}`, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    });

    it('uses the system clock when now is not given', () => {
      const t = Math.floor(Date.now() / 1000);
      expect(verifyWebhook(BODY, `t=${t},v1=${hmac(CURRENT, t, BODY)}`, [CURRENT]).id).toBe(envelope.id);
    });

    it('accepts now as milliseconds since the epoch', () => {
      expect(verifyWebhook(BODY, `t=${T},v1=${hmac(CURRENT, T, BODY)}`, [CURRENT], { now: T * 1000 }).id).toBe(envelope.id);
    });

    it('tolerates whitespace around items, as when repeated headers are joined with ", "', () => {
      const header = ` t=${T} , v1=${hmac(OTHER, T, BODY)}, v1=${hmac(CURRENT, T, BODY)} `;
      expect(verifyWebhook(BODY, header, [CURRENT], { now: AT_T }).id).toBe(envelope.id);
    });
  });

  describe('body integrity', () => {
    const header = `t=${T},v1=${hmac(CURRENT, T, BODY)}`;

    it('a whitespace change in the body breaks the signature', () => {
      const pretty = JSON.stringify(envelope, null, 2);
      expect(codeOf(() => verifyWebhook(pretty, header, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
      expect(codeOf(() => verifyWebhook(`${BODY} `, header, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    });

    it('a different t breaks the signature even within tolerance', () => {
      const moved = `t=${T + 1},v1=${hmac(CURRENT, T, BODY)}`;
      expect(codeOf(() => verifyWebhook(BODY, moved, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    });

    it('a wrong secret or a truncated digest does not verify', () => {
      expect(codeOf(() => verifyWebhook(BODY, header, [OTHER], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
      const truncated = `t=${T},v1=${hmac(CURRENT, T, BODY).slice(0, 63)}`;
      expect(codeOf(() => verifyWebhook(BODY, truncated, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
      expect(codeOf(() => verifyWebhook(BODY, `t=${T},v1=`, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    });

    it('compares lowercase hex exactly: an uppercase digest is rejected', () => {
      const upper = `t=${T},v1=${hmac(CURRENT, T, BODY).toUpperCase()}`;
      expect(codeOf(() => verifyWebhook(BODY, upper, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    });
  });

  describe('timestamp tolerance', () => {
    const header = `t=${T},v1=${hmac(CURRENT, T, BODY)}`;
    const at = (seconds: number) => ({ now: new Date((T + seconds) * 1000) });

    it(`defaults to ${DEFAULT_TOLERANCE_SECONDS} s`, () => {
      expect(DEFAULT_TOLERANCE_SECONDS).toBe(300);
    });

    it('passes at exactly 300 s behind and ahead, fails at 301 s either way', () => {
      expect(verifyWebhook(BODY, header, [CURRENT], at(300)).id).toBe(envelope.id);
      expect(verifyWebhook(BODY, header, [CURRENT], at(-300)).id).toBe(envelope.id);
      expect(codeOf(() => verifyWebhook(BODY, header, [CURRENT], at(301)))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
      // t in the receiver's future (sender clock ahead) is skew too.
      expect(codeOf(() => verifyWebhook(BODY, header, [CURRENT], at(-301)))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    });

    it('compares in whole seconds of the receiver clock', () => {
      expect(verifyWebhook(BODY, header, [CURRENT], { now: (T + 300) * 1000 + 999 }).id).toBe(envelope.id);
      expect(codeOf(() => verifyWebhook(BODY, header, [CURRENT], { now: (T + 301) * 1000 }))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    });

    it('honours a custom toleranceSeconds', () => {
      expect(verifyWebhook(BODY, header, [CURRENT], { ...at(10), toleranceSeconds: 10 }).id).toBe(envelope.id);
      expect(codeOf(() => verifyWebhook(BODY, header, [CURRENT], { ...at(11), toleranceSeconds: 10 }))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    });

    it('checks the clock before the signature (a stale replay of a valid delivery is refused)', () => {
      expect(codeOf(() => verifyWebhook(BODY, header, [CURRENT], at(3600)))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    });

    it('refuses an invalid tolerance or clock as a programming error', () => {
      expect(() => verifyWebhook(BODY, header, [CURRENT], { now: AT_T, toleranceSeconds: -1 })).toThrow(RangeError);
      expect(() => verifyWebhook(BODY, header, [CURRENT], { now: new Date('nope') })).toThrow(RangeError);
    });
  });

  describe('header parsing', () => {
    const sig = hmac(CURRENT, T, BODY);

    it.each([undefined, null, '', '   '])('header %p → MISSING_HEADER', (header) => {
      expect(codeOf(() => verifyWebhook(BODY, header, [CURRENT], { now: AT_T }))).toBe('MISSING_HEADER');
    });

    it.each([
      ['t=abc', `t=abc,v1=${sig}`],
      ['t=12a', `t=12a,v1=${sig}`],
      ['t= (empty)', `t=,v1=${sig}`],
      ['t=-5', `t=-5,v1=${sig}`],
      ['t=1.5', `t=1.5,v1=${sig}`],
      ['t=1e9', `t=1e9,v1=${sig}`],
      ['t=0x10', `t=0x10,v1=${sig}`],
      ['non-ASCII digits', `t=١٧٥٠٠٠٠٠٠٠,v1=${sig}`],
      ['t beyond a safe integer', `t=99999999999999999999,v1=${sig}`],
      ['missing t', `v1=${sig}`],
    ])('%s → INVALID_TIMESTAMP', (_label, header) => {
      expect(codeOf(() => verifyWebhook(BODY, header, [CURRENT], { now: AT_T }))).toBe('INVALID_TIMESTAMP');
    });

    it('two t entries → MALFORMED_HEADER, even when both are equal', () => {
      expect(codeOf(() => verifyWebhook(BODY, `t=${T},t=${T},v1=${sig}`, [CURRENT], { now: AT_T }))).toBe('MALFORMED_HEADER');
      expect(codeOf(() => verifyWebhook(BODY, `t=${T},v1=${sig},t=${T + 1}`, [CURRENT], { now: AT_T }))).toBe('MALFORMED_HEADER');
    });

    it.each([
      ['an item without =', `t=${T},${sig}`],
      ['an empty item', `t=${T},,v1=${sig}`],
      ['an empty key', `t=${T},=${sig}`],
      ['garbage', 'not a signature'],
    ])('%s → MALFORMED_HEADER', (_label, header) => {
      expect(codeOf(() => verifyWebhook(BODY, header, [CURRENT], { now: AT_T }))).toBe('MALFORMED_HEADER');
    });

    it('no v1 → NO_SIGNATURES', () => {
      expect(codeOf(() => verifyWebhook(BODY, `t=${T}`, [CURRENT], { now: AT_T }))).toBe('NO_SIGNATURES');
      expect(codeOf(() => verifyWebhook(BODY, `t=${T},v0=${sig}`, [CURRENT], { now: AT_T }))).toBe('NO_SIGNATURES');
    });

    it('ignores unknown keys (v0, a future v2, anything else)', () => {
      const header = `t=${T},v0=deadbeef,v1=${sig},v2=whatever,foo=bar=baz`;
      expect(verifyWebhook(BODY, header, [CURRENT], { now: AT_T }).id).toBe(envelope.id);
    });

    it('does not accept the right digest under an unknown key', () => {
      expect(codeOf(() => verifyWebhook(BODY, `t=${T},v0=${sig},v1=00`, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    });

    it('parseSignatureHeader exposes t as signed and every v1 in order', () => {
      expect(parseSignatureHeader(`t=${T},v1=aa,v0=zz,v1=bb`)).toEqual({
        timestamp: T,
        rawTimestamp: String(T),
        signatures: ['aa', 'bb'],
      });
    });
  });

  describe('rotation (several v1, several secrets)', () => {
    // The service's header during the 24 h overlap: current first, then previous.
    const rotated = `t=${T},v1=${hmac(CURRENT, T, BODY)},v1=${hmac(PREVIOUS, T, BODY)}`;

    it('verifies for a receiver that already holds the new secret', () => {
      expect(verifyWebhook(BODY, rotated, [CURRENT], { now: AT_T }).id).toBe(envelope.id);
    });

    it('verifies for a receiver that still holds only the previous secret', () => {
      expect(verifyWebhook(BODY, rotated, [PREVIOUS], { now: AT_T }).id).toBe(envelope.id);
    });

    it('verifies for a receiver holding [new, previous] whichever single v1 the header carries', () => {
      const onlyCurrent = `t=${T},v1=${hmac(CURRENT, T, BODY)}`;
      const onlyPrevious = `t=${T},v1=${hmac(PREVIOUS, T, BODY)}`;
      expect(verifyWebhook(BODY, onlyCurrent, [CURRENT, PREVIOUS], { now: AT_T }).id).toBe(envelope.id);
      expect(verifyWebhook(BODY, onlyPrevious, [CURRENT, PREVIOUS], { now: AT_T }).id).toBe(envelope.id);
    });

    it('tries the secrets in the given order and stops at the first that matches', () => {
      const onlyPrevious = `t=${T},v1=${hmac(PREVIOUS, T, BODY)}`;
      // Observe which keys the verifier hands to createHmac, in call order.
      const crypto = jest.requireActual<typeof import('node:crypto')>('node:crypto');
      const spy = jest.spyOn(crypto, 'createHmac');
      try {
        expect(verifyWebhook(BODY, onlyPrevious, [CURRENT, PREVIOUS, OTHER], { now: AT_T }).id).toBe(envelope.id);
        const keys = spy.mock.calls.map(([, key]) => Buffer.from(key as Buffer).toString('utf8'));
        expect(keys).toEqual([CURRENT, PREVIOUS]);
      } finally {
        spy.mockRestore();
      }
    });

    it('fails when no secret matches any v1', () => {
      expect(codeOf(() => verifyWebhook(BODY, rotated, [OTHER], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    });
  });

  describe('secrets', () => {
    const header = `t=${T},v1=${hmac(CURRENT, T, BODY)}`;

    it('no secrets → NO_SECRETS', () => {
      expect(codeOf(() => verifyWebhook(BODY, header, [], { now: AT_T }))).toBe('NO_SECRETS');
    });

    it('an empty secret (e.g. WEBHOOK_SECRETS unset) → NO_SECRETS, never an empty HMAC key', () => {
      const forged = `t=${T},v1=${hmac('', T, BODY)}`;
      expect(codeOf(() => verifyWebhook(BODY, forged, [''], { now: AT_T }))).toBe('NO_SECRETS');
      expect(codeOf(() => verifyWebhook(BODY, forged, [CURRENT, ''], { now: AT_T }))).toBe('NO_SECRETS');
    });

    it('reports NO_SECRETS before looking at the request', () => {
      expect(codeOf(() => verifyWebhook(BODY, undefined, [], { now: AT_T }))).toBe('NO_SECRETS');
    });
  });

  describe('payload', () => {
    const signed = (body: string) => `t=${T},v1=${hmac(CURRENT, T, body)}`;

    it('a validly signed non-JSON body → INVALID_PAYLOAD', () => {
      const body = 'hello, not json';
      expect(codeOf(() => verifyWebhook(body, signed(body), [CURRENT], { now: AT_T }))).toBe('INVALID_PAYLOAD');
    });

    it.each([
      ['an array', '[1,2]'],
      ['null', 'null'],
      ['a number', '42'],
      ['an object without id', JSON.stringify({ ...envelope, id: undefined })],
      ['a numeric id', JSON.stringify({ ...envelope, id: 7 })],
      ['an empty type', JSON.stringify({ ...envelope, type: '' })],
      ['a missing createdAt', JSON.stringify({ ...envelope, createdAt: undefined })],
      ['an unknown mode', JSON.stringify({ ...envelope, mode: 'loud' })],
      ['no data', JSON.stringify({ ...envelope, data: undefined })],
    ])('a validly signed body that is %s → INVALID_PAYLOAD', (_label, body) => {
      expect(codeOf(() => verifyWebhook(body, signed(body), [CURRENT], { now: AT_T }))).toBe('INVALID_PAYLOAD');
    });

    it('does not parse the body before the signature verifies', () => {
      const parse = jest.spyOn(JSON, 'parse');
      try {
        expect(codeOf(() => verifyWebhook('not json', signed(BODY), [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
        expect(parse).not.toHaveBeenCalled();
      } finally {
        parse.mockRestore();
      }
    });

    it('refuses an already-parsed body as a programming error', () => {
      expect(() => verifyWebhook(envelope as unknown as string, signed(BODY), [CURRENT], { now: AT_T })).toThrow(TypeError);
    });
  });

  describe('WebhookVerificationError', () => {
    it('is an Error with a name and a code', () => {
      let caught: unknown;
      try {
        verifyWebhook(BODY, undefined, [CURRENT]);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(Error);
      expect(caught).toBeInstanceOf(WebhookVerificationError);
      expect(caught).toMatchObject({ name: 'WebhookVerificationError', code: 'MISSING_HEADER' });
      expect((caught as Error).message).toContain(SIGNATURE_HEADER);
    });
  });
});

describe('signWebhook', () => {
  it('produces t and one lowercase v1 per secret, in order, matching an independent HMAC', () => {
    expect(signWebhook(BODY, [CURRENT, PREVIOUS], T)).toBe(`t=${T},v1=${hmac(CURRENT, T, BODY)},v1=${hmac(PREVIOUS, T, BODY)}`);
    expect(signWebhook(Buffer.from(BODY), [CURRENT], T)).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  });

  it('round-trips through verifyWebhook', () => {
    const header = signWebhook(BODY, [CURRENT, PREVIOUS], T);
    expect(verifyWebhook(Buffer.from(BODY), header, [PREVIOUS], { now: AT_T })).toEqual(envelope);
  });

  it('refuses no secrets, an empty secret and a non-integer timestamp', () => {
    expect(() => signWebhook(BODY, [], T)).toThrow(TypeError);
    expect(() => signWebhook(BODY, [''], T)).toThrow(TypeError);
    expect(() => signWebhook(BODY, [CURRENT], 1.5)).toThrow(RangeError);
    expect(() => signWebhook(BODY, [CURRENT], -1)).toThrow(RangeError);
  });
});

describe('Standard Webhooks', () => {
  const ID = envelope.id;
  const headersOf = (signature: string, id = ID, t: number | string = T) => ({
    'webhook-id': id,
    'webhook-timestamp': String(t),
    'webhook-signature': signature,
  });
  /** Independent of the code under test: the specification's formula written out with node:crypto. */
  const v1 = (key: Buffer, id = ID, t: number | string = T, body = BODY) => `v1,${createHmac('sha256', key).update(`${id}.${t}.${body}`).digest('base64')}`;
  const v1a = (privateKey: KeyObject, id = ID, t: number | string = T, body = BODY) =>
    `v1a,${cryptoSign(null, Buffer.from(`${id}.${t}.${body}`), privateKey).toString('base64')}`;
  const pair = generateKeyPairSync('ed25519');
  const otherPair = generateKeyPairSync('ed25519');
  const whpk = (key: KeyObject) => `whpk_${Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url').toString('base64')}`;

  it('maps a hex secret to whsec_ + base64 of its UTF-8 bytes, and back to the same HMAC key', () => {
    const whsec = toStandardSecret(CURRENT);
    expect(whsec).toBe(`whsec_${Buffer.from(CURRENT, 'utf8').toString('base64')}`);
    expect(symmetricKey(whsec)).toEqual(Buffer.from(CURRENT, 'utf8'));
    expect(symmetricKey(CURRENT)).toEqual(Buffer.from(CURRENT, 'utf8'));
    expect(codeOf(() => symmetricKey('whsec_not base64!'))).toBe('INVALID_KEY');
  });

  it('signs v1 entries as the specification says, current key first, space-separated', () => {
    const header = signStandardWebhook(BODY, ID, T, [
      { version: 'v1', secret: Buffer.from(CURRENT) },
      { version: 'v1', secret: Buffer.from(PREVIOUS) },
    ]);
    expect(header).toBe(`${v1(Buffer.from(CURRENT))} ${v1(Buffer.from(PREVIOUS))}`);
    expect(() => signStandardWebhook(BODY, 'evt.1', T, [{ version: 'v1', secret: Buffer.from(CURRENT) }])).toThrow(TypeError);
  });

  it('signs v1a entries that node:crypto verifies with the public key', () => {
    const header = signStandardWebhook(BODY, ID, T, [{ version: 'v1a', privateKey: pair.privateKey }]);
    const [version, signature] = header.split(',');
    expect(version).toBe('v1a');
    expect(cryptoVerify(null, Buffer.from(`${ID}.${T}.${BODY}`), pair.publicKey, Buffer.from(signature, 'base64'))).toBe(true);
    expect(toPublicKeyString(pair.publicKey)).toBe(whpk(pair.publicKey));
  });

  it('verifies v1 with the whsec_ form or the hex secret, from either entry during a rotation', () => {
    const signature = `${v1(Buffer.from(CURRENT))} ${v1(Buffer.from(PREVIOUS))}`;
    for (const key of [CURRENT, toStandardSecret(CURRENT), PREVIOUS, toStandardSecret(PREVIOUS)]) {
      const result = verifyStandardWebhook(BODY, headersOf(signature), [key], { now: AT_T });
      expect(result).toEqual({ webhookId: ID, timestamp: T, version: 'v1', rememberUntilMs: (T + 301) * 1000, envelope });
    }
    expect(codeOf(() => verifyStandardWebhook(BODY, headersOf(signature), [OTHER], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
  });

  it('verifies v1a with a whpk_ public key or a key from a JWK, and refuses another key', () => {
    const signature = `${v1a(pair.privateKey)} ${v1a(otherPair.privateKey)}`;
    expect(verifyStandardWebhook(BODY, headersOf(signature), [whpk(otherPair.publicKey)], { now: AT_T }).version).toBe('v1a');
    const jwk = pair.publicKey.export({ format: 'jwk' }) as { kty: string; crv: string; x: string };
    expect(verifyStandardWebhook(BODY, headersOf(v1a(pair.privateKey)), [publicKeyFromJwk(jwk)], { now: AT_T }).envelope).toEqual(envelope);
    expect(codeOf(() => verifyStandardWebhook(BODY, headersOf(v1a(pair.privateKey)), [whpk(otherPair.publicKey)], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    // A secret cannot verify a v1a-only delivery, and a public key no v1 one.
    expect(codeOf(() => verifyStandardWebhook(BODY, headersOf(v1a(pair.privateKey)), [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    expect(codeOf(() => verifyStandardWebhook(BODY, headersOf(v1(Buffer.from(CURRENT))), [whpk(pair.publicKey)], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    expect(codeOf(() => publicKeyFromString('whpk_AAAA'))).toBe('INVALID_KEY');
  });

  it('refuses a tampered body, id or timestamp, an old or future timestamp, and missing or malformed headers', () => {
    const good = v1(Buffer.from(CURRENT));
    const verify =
      (body: string, headers: Record<string, string>, now = AT_T) =>
      () =>
        verifyStandardWebhook(body, headers, [CURRENT], { now });
    expect(codeOf(verify(`${BODY} `, headersOf(good)))).toBe('SIGNATURE_MISMATCH');
    expect(codeOf(verify(BODY, headersOf(good, 'evt_other')))).toBe('SIGNATURE_MISMATCH');
    expect(codeOf(verify(BODY, headersOf(v1(Buffer.from(CURRENT), ID, T - 10), ID, T - 10), new Date((T + 301) * 1000)))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(codeOf(verify(BODY, headersOf(good), new Date((T - 301) * 1000)))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(codeOf(verify(BODY, { 'webhook-timestamp': String(T), 'webhook-signature': good }))).toBe('MISSING_HEADER');
    expect(codeOf(verify(BODY, headersOf(good, 'evt.1')))).toBe('INVALID_ID');
    expect(codeOf(verify(BODY, headersOf(good, ID, '17e8')))).toBe('INVALID_TIMESTAMP');
    expect(codeOf(verify(BODY, headersOf('v1')))).toBe('MALFORMED_HEADER');
    expect(codeOf(() => verifyStandardWebhook(BODY, headersOf(good), [], { now: AT_T }))).toBe('NO_SECRETS');
  });

  it('answers when to forget the id, and refuses a replayed id through isNewId', () => {
    let clock = T * 1000;
    const isNewId = rememberedIds(() => clock);
    const headers = headersOf(v1(Buffer.from(CURRENT)));
    expect(verifyStandardWebhook(BODY, headers, [CURRENT], { now: AT_T, isNewId }).webhookId).toBe(ID);
    expect(codeOf(() => verifyStandardWebhook(BODY, headers, [CURRENT], { now: AT_T, isNewId }))).toBe('REPLAYED_ID');
    // Forgotten once the timestamp is out of tolerance, when the signature check refuses it anyway.
    clock = (T + 302) * 1000;
    expect(codeOf(() => verifyStandardWebhook(BODY, headers, [CURRENT], { now: clock, isNewId }))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
  });

  it('verifyWebhookRequest picks the form a request carries, and reads fetch Headers too', () => {
    const legacy = { 'x-service-signature': `t=${T},v1=${hmac(CURRENT, T, BODY)}` };
    expect(verifyWebhookRequest(BODY, legacy, [toStandardSecret(CURRENT)], { now: AT_T }).version).toBe('legacy');
    expect(verifyWebhookRequest(BODY, new Headers(headersOf(v1a(pair.privateKey))), [whpk(pair.publicKey)], { now: AT_T }).version).toBe('v1a');
    // A v1a delivery with the legacy header on verifies for a receiver holding only the secret, through the legacy header.
    const both = { ...headersOf(v1a(pair.privateKey)), ...legacy };
    expect(verifyWebhookRequest(BODY, both, [CURRENT], { now: AT_T }).version).toBe('legacy');
    expect(verifyWebhookRequest(BODY, both, [whpk(pair.publicKey)], { now: AT_T }).version).toBe('v1a');
    // Both fail: the Standard Webhooks error is the one thrown.
    expect(codeOf(() => verifyWebhookRequest(`${BODY} `, both, [CURRENT], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    expect(codeOf(() => verifyWebhookRequest(BODY, both, [OTHER], { now: AT_T }))).toBe('SIGNATURE_MISMATCH');
    const isNewId = rememberedIds(() => T * 1000);
    verifyWebhookRequest(BODY, legacy, [CURRENT], { now: AT_T, isNewId });
    expect(codeOf(() => verifyWebhookRequest(BODY, legacy, [CURRENT], { now: AT_T, isNewId }))).toBe('REPLAYED_ID');
  });
});
