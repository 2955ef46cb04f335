/**
 * Webhook signature helper shared by the service's signer and by subscribers: the legacy
 * `X-Service-Signature` scheme and Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature` with `v1` HMAC-SHA256 and `v1a` ed25519 entries).
 *
 * Standalone on purpose: no Nest import and no dependency beyond `node:crypto`, so a subscriber
 * can copy this single file into a receiver. The service signs with `signWebhook` from this file,
 * so both sides share one definition of the scheme.
 *
 * Scheme (docs/webhooks.md, "Verifying signatures" and "Rotating a secret without downtime"):
 *
 *   X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]
 *   v1 = lowercase hex HMAC-SHA256(key = secret, message = `${t}.` + raw body bytes)
 *
 * - One `v1` per valid secret, current first: during the 24 h after a rotation the header carries
 *   `v1=<current>,v1=<previous>`; a receiver holding either secret verifies.
 * - The secret is the 64-character hex string handed out by `register_webhook` /
 *   `rotate_webhook_secret`, used AS THAT STRING (its UTF-8 bytes) as the HMAC key. It is NOT
 *   hex-decoded into 32 raw bytes. In Python: `hmac.new(secret.encode("utf-8"), ...)`, never
 *   `bytes.fromhex(secret)`.
 * - The digest is compared exactly as lowercase hex: an uppercase digest does not verify.
 * - Header keys other than `t` and `v1` (e.g. a future `v2`, or `v0`) are ignored, so the scheme
 *   can grow without breaking receivers.
 *
 * Standard Webhooks (docs/webhooks.md, "Standard Webhooks"; the Standard Webhooks specification 1.0):
 *
 *   webhook-id: evt_...            the envelope's id, reused by retries
 *   webhook-timestamp: <unix s>    the same t as X-Service-Signature
 *   webhook-signature: v1,<base64> [v1,<base64> ...]    or    v1a,<base64> [v1a,<base64> ...]
 *   signed content = `${webhook-id}.${webhook-timestamp}.` + raw body bytes
 *
 * - `v1`: base64 HMAC-SHA256 keyed with the secret's bytes. `whsec_<base64>` names those bytes;
 *   the service's `whsec_` form of a 64-hex secret is `whsec_` + base64(UTF-8 bytes of the hex
 *   string), so the same key signs both headers. `symmetricKey` accepts either form.
 * - `v1a`: base64 ed25519 signature; the public key is `whpk_` + base64(raw 32 bytes).
 */
import { createHmac, createPrivateKey, createPublicKey, KeyObject, sign as edSign, timingSafeEqual, verify as edVerify } from 'node:crypto';

/** The HTTP header that carries the signature. Header names are case-insensitive on the wire. */
export const SIGNATURE_HEADER = 'X-Service-Signature';
/** Maximum allowed |receiver clock - t|, in seconds (spec "Limits": signature tolerance). */
export const DEFAULT_TOLERANCE_SECONDS = 300;
/** The signature scheme label this helper produces and checks. */
export const SIGNATURE_SCHEME = 'v1';

export type WebhookMode = 'concise' | 'verbose';

/** The body of every webhook POST (spec "Event envelope"). `data` depends on `type` and `mode`. */
export interface WebhookEnvelope<T = unknown> {
  /** `evt_` + 32 hex chars; unique per delivery, reused by retries: the dedup key. */
  id: string;
  /** The event kind, e.g. `message.received`. */
  type: string;
  /** ISO 8601 UTC timestamp with milliseconds. */
  createdAt: string;
  /** The receiving endpoint. */
  endpointId: string;
  mode: WebhookMode;
  data: T;
}

export type WebhookVerificationErrorCode =
  /** The signature header is absent or blank. */
  | 'MISSING_HEADER'
  /** The header is not a list of `key=value` items, or carries `t` more than once. */
  | 'MALFORMED_HEADER'
  /** `t` is missing, empty, not all ASCII digits, or too large to be a timestamp. */
  | 'INVALID_TIMESTAMP'
  /** |now - t| exceeds the tolerance (in either direction). */
  | 'TIMESTAMP_OUT_OF_TOLERANCE'
  /** The header carries no `v1` entry. */
  | 'NO_SIGNATURES'
  /** No `v1` matches any of the secrets. */
  | 'SIGNATURE_MISMATCH'
  /** The receiver was given no secrets, or an empty / non-string secret. */
  | 'NO_SECRETS'
  /** The signature is valid but the body is not UTF-8 JSON shaped like an envelope. */
  | 'INVALID_PAYLOAD'
  /** A key is not a 64-hex secret, a `whsec_` secret or a `whpk_` public key, or its base64 is broken. */
  | 'INVALID_KEY'
  /** `webhook-id` is missing, blank or carries a `.` (Standard Webhooks only). */
  | 'INVALID_ID'
  /** The signature verified, but the receiver has already accepted this `webhook-id` (see `isNewId`). */
  | 'REPLAYED_ID';

/** Thrown by `verifyWebhook`; `code` says why. Answer HTTP 400 (or any non-2xx) on it. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';

  constructor(
    readonly code: WebhookVerificationErrorCode,
    message: string,
  ) {
    super(message);
    // Keeps `instanceof` working if a subscriber compiles this file down to ES5.
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

export interface VerifyWebhookOptions {
  /** Allowed clock skew in seconds, both directions. Default 300. */
  toleranceSeconds?: number;
  /** The receiver's clock: a Date, or milliseconds since the epoch (like `Date.now()`). */
  now?: Date | number;
}

export interface ParsedSignatureHeader {
  /** `t` as an integer number of seconds. */
  timestamp: number;
  /** `t` exactly as it appeared in the header: this string is what was signed. */
  rawTimestamp: string;
  /** Every `v1` value, in header order (current secret first). */
  signatures: string[];
}

export type RawBody = string | Buffer | Uint8Array;

const DIGITS = /^[0-9]+$/;

/**
 * Parses an `X-Service-Signature` value. Items are comma-separated `key=value` pairs (whitespace
 * around items, keys and values is trimmed, so a value joined from repeated headers with ", " still
 * parses). `t` must occur exactly once and be all ASCII digits; every `v1` is collected; other keys
 * are ignored.
 */
export function parseSignatureHeader(header: string | undefined | null): ParsedSignatureHeader {
  if (typeof header !== 'string' || header.trim() === '') {
    throw new WebhookVerificationError('MISSING_HEADER', `missing ${SIGNATURE_HEADER} header`);
  }
  const timestamps: string[] = [];
  const signatures: string[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    const key = eq === -1 ? '' : item.slice(0, eq).trim();
    if (key === '') {
      throw new WebhookVerificationError('MALFORMED_HEADER', `${SIGNATURE_HEADER} must be comma-separated key=value items`);
    }
    const value = item.slice(eq + 1).trim();
    if (key === 't') timestamps.push(value);
    else if (key === SIGNATURE_SCHEME) signatures.push(value);
    // Any other key (v0, a future v2, ...) is ignored on purpose.
  }
  if (timestamps.length > 1) {
    throw new WebhookVerificationError('MALFORMED_HEADER', `${SIGNATURE_HEADER} carries t more than once`);
  }
  const rawTimestamp = timestamps[0];
  if (rawTimestamp === undefined) {
    throw new WebhookVerificationError('INVALID_TIMESTAMP', `${SIGNATURE_HEADER} carries no t`);
  }
  const timestamp = Number(rawTimestamp);
  if (!DIGITS.test(rawTimestamp) || !Number.isSafeInteger(timestamp)) {
    throw new WebhookVerificationError('INVALID_TIMESTAMP', 't must be a unix timestamp in seconds (digits only)');
  }
  if (signatures.length === 0) {
    throw new WebhookVerificationError('NO_SIGNATURES', `${SIGNATURE_HEADER} carries no ${SIGNATURE_SCHEME} signature`);
  }
  return { timestamp, rawTimestamp, signatures };
}

/**
 * Verifies a delivery and returns its parsed envelope, or throws `WebhookVerificationError`.
 *
 * @param rawBody the request body exactly as received (a Buffer from `express.raw()`, or the
 *   string). Never a re-serialised object: any byte change breaks the signature.
 * @param header the `X-Service-Signature` header value.
 * @param secrets the endpoint secrets, newest first (after a rotation: [new, previous]). Each is
 *   the hex string as handed out, used as-is (UTF-8 bytes) as the HMAC key, not hex-decoded, or
 *   its `whsec_` form (the same key).
 *
 * Order of checks: secrets present, header syntax, `t`, clock skew, signatures, and only then
 * `JSON.parse` of the body.
 */
export function verifyWebhook<T = unknown>(
  rawBody: RawBody,
  header: string | undefined | null,
  secrets: string[],
  options: VerifyWebhookOptions = {},
): WebhookEnvelope<T> {
  assertSecrets(secrets, (message) => new WebhookVerificationError('NO_SECRETS', message));
  const keys = secrets.map((secret) => symmetricKey(secret));
  const body = toBytes(rawBody);
  const tolerance = toleranceOf(options);
  const { timestamp, rawTimestamp, signatures } = parseSignatureHeader(header);
  assertFresh(timestamp, tolerance, options);

  const received = signatures.map((signature) => Buffer.from(signature, 'utf8'));
  let verified = false;
  for (const key of keys) {
    const expected = Buffer.from(hmacHex(key, rawTimestamp, body), 'utf8');
    // Constant-time comparison per candidate; a length mismatch is simply "not equal".
    if (received.some((candidate) => candidate.length === expected.length && timingSafeEqual(candidate, expected))) {
      verified = true;
      break;
    }
  }
  if (!verified) {
    throw new WebhookVerificationError('SIGNATURE_MISMATCH', 'no signature matches any of the secrets');
  }

  return parseEnvelope<T>(body);
}

/**
 * Produces the `X-Service-Signature` value for `rawBody` at `timestamp` (unix seconds): `t=<ts>`
 * followed by one `v1` per secret, in the given order (current secret first). The service signs
 * exactly the bytes it sends with this function.
 */
export function signWebhook(rawBody: RawBody, secrets: string[], timestamp: number): string {
  assertSecrets(secrets, (message) => new TypeError(message));
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new RangeError('timestamp must be a non-negative integer number of unix seconds');
  }
  const body = toBytes(rawBody);
  const t = String(timestamp);
  return [`t=${t}`, ...secrets.map((secret) => `${SIGNATURE_SCHEME}=${hmacHex(Buffer.from(secret, 'utf8'), t, body)}`)].join(',');
}

function hmacHex(key: Buffer, rawTimestamp: string, body: Buffer): string {
  // The message is the timestamp, a dot, then the body bytes as they are: no re-encoding of the body.
  return createHmac('sha256', key).update(`${rawTimestamp}.`, 'utf8').update(body).digest('hex');
}

/** The Standard Webhooks header names (lowercase, as Node hands them over). */
export const STANDARD_HEADERS = { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' } as const;
export const SECRET_PREFIX = 'whsec_';
export const PUBLIC_KEY_PREFIX = 'whpk_';

export type StandardSignatureVersion = 'v1' | 'v1a';

/**
 * A key that signs Standard Webhooks: `v1` with any secret bytes (an endpoint secret's UTF-8
 * bytes, or the bytes of a client-supplied `whsec_` secret), `v1a` with an ed25519 private key.
 */
export type SigningKey = { version: 'v1'; secret: Uint8Array } | { version: 'v1a'; privateKey: KeyObject };

/**
 * The HMAC key a secret names: a `whsec_` secret's base64-decoded bytes, or any other string's
 * UTF-8 bytes (the 64-hex secret as handed out, used as that string).
 */
export function symmetricKey(secret: string): Buffer {
  if (typeof secret !== 'string' || secret === '') throw new WebhookVerificationError('INVALID_KEY', 'a secret must be a non-empty string');
  if (!secret.startsWith(SECRET_PREFIX)) return Buffer.from(secret, 'utf8');
  const encoded = secret.slice(SECRET_PREFIX.length);
  const bytes = Buffer.from(encoded, 'base64');
  if (encoded === '' || !BASE64.test(encoded) || bytes.length === 0) {
    throw new WebhookVerificationError('INVALID_KEY', `a ${SECRET_PREFIX} secret must be followed by standard base64`);
  }
  return bytes;
}

/** The `whsec_` form of a secret: `whsec_` + base64 of the key bytes (for the service's hex secrets, their UTF-8 bytes). */
export function toStandardSecret(secret: string | Uint8Array): string {
  const bytes = typeof secret === 'string' ? symmetricKey(secret) : Buffer.from(secret);
  return `${SECRET_PREFIX}${bytes.toString('base64')}`;
}

/** `whpk_` + base64 of the raw 32-byte ed25519 public key. */
export function toPublicKeyString(publicKey: KeyObject): string {
  const jwk = publicKey.export({ format: 'jwk' });
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new TypeError('not an ed25519 public key');
  return `${PUBLIC_KEY_PREFIX}${Buffer.from(jwk.x, 'base64url').toString('base64')}`;
}

/** The ed25519 public key of a `whpk_` string (a JWK's `x` in base64url works too via `publicKeyFromJwk`). */
export function publicKeyFromString(whpk: string): KeyObject {
  const encoded = typeof whpk === 'string' && whpk.startsWith(PUBLIC_KEY_PREFIX) ? whpk.slice(PUBLIC_KEY_PREFIX.length) : null;
  const raw = encoded === null || !BASE64.test(encoded) ? null : Buffer.from(encoded, 'base64');
  if (raw === null || raw.length !== 32) {
    throw new WebhookVerificationError('INVALID_KEY', `a public key must be ${PUBLIC_KEY_PREFIX} followed by the base64 of 32 bytes`);
  }
  return publicKeyFromJwk({ kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') });
}

/** An ed25519 public key from a JWK (RFC 8037: kty OKP, crv Ed25519, x base64url), e.g. from the endpoint's JWK Set. */
export function publicKeyFromJwk(jwk: { kty: string; crv: string; x: string }): KeyObject {
  if (jwk?.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') {
    throw new WebhookVerificationError('INVALID_KEY', 'a JWK must be kty OKP, crv Ed25519, with x');
  }
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
  } catch {
    throw new WebhookVerificationError('INVALID_KEY', 'the JWK is not a valid ed25519 public key');
  }
}

/** An ed25519 private key from its PKCS#8 DER bytes in base64 (how the service stores it, sealed). */
export function privateKeyFromPkcs8(base64: string): KeyObject {
  return createPrivateKey({ key: Buffer.from(base64, 'base64'), format: 'der', type: 'pkcs8' });
}

/**
 * The `webhook-signature` value: one `<version>,<base64>` entry per key, space-separated, in the
 * given order (current key first). `webhookId` must be non-empty without a `.`, `timestamp` unix seconds.
 */
export function signStandardWebhook(rawBody: RawBody, webhookId: string, timestamp: number, keys: SigningKey[]): string {
  if (!Array.isArray(keys) || keys.length === 0) throw new TypeError('no signing keys');
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new RangeError('timestamp must be a non-negative integer number of unix seconds');
  }
  if (!validId(webhookId)) throw new TypeError('webhookId must be a non-empty string without "." or whitespace');
  const content = signedContent(webhookId, String(timestamp), toBytes(rawBody));
  return keys
    .map((key) => {
      if (key.version === 'v1') {
        if (key.secret.length === 0) throw new TypeError('an empty secret cannot sign');
        return `v1,${createHmac('sha256', key.secret).update(content).digest('base64')}`;
      }
      return `v1a,${edSign(null, content, key.privateKey).toString('base64')}`;
    })
    .join(' ');
}

/** A request's headers: Node's `req.headers` (lowercase names), a plain object, or a fetch `Headers`. */
export type HeaderSource = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface VerifyStandardWebhookOptions extends VerifyWebhookOptions {
  /**
   * Called with the `webhook-id` once its signature verified and its timestamp is fresh, with the
   * time (ms since the epoch) until which it must be remembered; answers false if this id was
   * accepted before, and verification then fails with REPLAYED_ID. `rememberedIds()` is one.
   */
  isNewId?: (webhookId: string, rememberUntilMs: number) => boolean;
}

export interface VerifiedWebhook<T = unknown> {
  /** The `webhook-id`: the dedup key (the envelope's id). */
  webhookId: string;
  /** `webhook-timestamp` in unix seconds. */
  timestamp: number;
  /** Which version verified: v1 (a secret) or v1a (a public key). */
  version: StandardSignatureVersion;
  /**
   * Until when (ms since the epoch) to remember `webhookId` to refuse a replay: after it the
   * timestamp is out of tolerance and the request is refused anyway.
   */
  rememberUntilMs: number;
  envelope: WebhookEnvelope<T>;
}

/**
 * Verifies a Standard Webhooks delivery and returns its id, timestamp and envelope, or throws
 * `WebhookVerificationError`.
 *
 * @param keys what the receiver trusts, newest first: secrets (64-hex or `whsec_`) verify `v1`
 *   entries, public keys (`whpk_`, or KeyObjects from the JWK Set) verify `v1a` entries. Any one
 *   matching entry verifies; entries of other versions are ignored.
 */
export function verifyStandardWebhook<T = unknown>(
  rawBody: RawBody,
  headers: HeaderSource,
  keys: Array<string | KeyObject>,
  options: VerifyStandardWebhookOptions = {},
): VerifiedWebhook<T> {
  if (!Array.isArray(keys) || keys.length === 0) throw new WebhookVerificationError('NO_SECRETS', 'no webhook secrets or public keys configured');
  const secrets: Buffer[] = [];
  const publicKeys: KeyObject[] = [];
  for (const key of keys) {
    if (key instanceof KeyObject) publicKeys.push(key);
    else if (typeof key === 'string' && key.startsWith(PUBLIC_KEY_PREFIX)) publicKeys.push(publicKeyFromString(key));
    else secrets.push(symmetricKey(key));
  }
  const body = toBytes(rawBody);
  const tolerance = toleranceOf(options);

  const webhookId = header(headers, STANDARD_HEADERS.id);
  const rawTimestamp = header(headers, STANDARD_HEADERS.timestamp);
  const signature = header(headers, STANDARD_HEADERS.signature);
  for (const [name, value] of [
    [STANDARD_HEADERS.id, webhookId],
    [STANDARD_HEADERS.timestamp, rawTimestamp],
    [STANDARD_HEADERS.signature, signature],
  ] as const) {
    if (value === undefined || value.trim() === '') throw new WebhookVerificationError('MISSING_HEADER', `missing ${name} header`);
  }
  if (!validId(webhookId!)) throw new WebhookVerificationError('INVALID_ID', `${STANDARD_HEADERS.id} must not carry "." or whitespace`);
  const timestamp = Number(rawTimestamp);
  if (!DIGITS.test(rawTimestamp!) || !Number.isSafeInteger(timestamp)) {
    throw new WebhookVerificationError('INVALID_TIMESTAMP', `${STANDARD_HEADERS.timestamp} must be a unix timestamp in seconds (digits only)`);
  }
  assertFresh(timestamp, tolerance, options);

  const entries = signature!
    .split(' ')
    .filter((entry) => entry !== '')
    .map((entry) => {
      const comma = entry.indexOf(',');
      if (comma <= 0) throw new WebhookVerificationError('MALFORMED_HEADER', `${STANDARD_HEADERS.signature} entries must be <version>,<base64>`);
      return { version: entry.slice(0, comma), value: entry.slice(comma + 1) };
    });
  const v1 = entries.filter((e) => e.version === 'v1').map((e) => Buffer.from(e.value, 'utf8'));
  const v1a = entries.filter((e) => e.version === 'v1a' && BASE64.test(e.value)).map((e) => Buffer.from(e.value, 'base64'));
  if ((secrets.length > 0 && v1.length > 0) || (publicKeys.length > 0 && v1a.length > 0)) {
    const content = signedContent(webhookId!, rawTimestamp!, body);
    let version: StandardSignatureVersion | null = null;
    for (const secret of secrets) {
      const expected = Buffer.from(createHmac('sha256', secret).update(content).digest('base64'), 'utf8');
      if (v1.some((candidate) => candidate.length === expected.length && timingSafeEqual(candidate, expected))) version = 'v1';
      if (version) break;
    }
    for (const publicKey of version ? [] : publicKeys) {
      if (v1a.some((candidate) => candidate.length === 64 && edVerify(null, content, publicKey, candidate))) version = 'v1a';
      if (version) break;
    }
    if (version) {
      const rememberUntilMs = (timestamp + tolerance + 1) * 1000;
      const envelope = parseEnvelope<T>(body);
      if (options.isNewId && !options.isNewId(webhookId!, rememberUntilMs)) {
        throw new WebhookVerificationError('REPLAYED_ID', `${STANDARD_HEADERS.id} ${webhookId} was accepted before (a replay)`);
      }
      return { webhookId: webhookId!, timestamp, version, rememberUntilMs, envelope };
    }
    throw new WebhookVerificationError('SIGNATURE_MISMATCH', 'no signature matches any of the keys');
  }
  if (entries.length === 0) throw new WebhookVerificationError('NO_SIGNATURES', `${STANDARD_HEADERS.signature} carries no signature`);
  // Signatures of a version the receiver holds no key for: the receiver's keys cannot verify this delivery.
  throw new WebhookVerificationError(
    'SIGNATURE_MISMATCH',
    `no ${secrets.length > 0 ? 'v1' : 'v1a'} signature for the keys given (signed with ${[...new Set(entries.map((e) => e.version))].join(', ')})`,
  );
}

/**
 * An in-memory memory of accepted webhook ids for `isNewId`, each kept until its time passes. A
 * receiver running several processes keeps them in a shared store instead (e.g. Redis
 * `SET <id> 1 NX PXAT <rememberUntilMs>`).
 */
export function rememberedIds(clock: () => number = Date.now): (webhookId: string, rememberUntilMs: number) => boolean {
  const seen = new Map<string, number>();
  return (webhookId, rememberUntilMs) => {
    const now = clock();
    for (const [id, until] of seen) if (until <= now) seen.delete(id);
    if (seen.has(webhookId)) return false;
    seen.set(webhookId, rememberUntilMs);
    return true;
  };
}

/**
 * Verifies a delivery in whichever form it carries: Standard Webhooks when `webhook-signature` is
 * present (keys: secrets and/or public keys), else the legacy `X-Service-Signature` (secrets
 * only). When the Standard Webhooks check fails and the legacy header is there too, the secrets
 * are tried on it: a receiver holding only the secret keeps working when its endpoint switches to
 * v1a with the legacy header on. The same key signs both, so this accepts nothing the secret did
 * not sign; the Standard Webhooks error is the one thrown when both fail.
 */
export function verifyWebhookRequest<T = unknown>(
  rawBody: RawBody,
  headers: HeaderSource,
  keys: Array<string | KeyObject>,
  options: VerifyStandardWebhookOptions = {},
): VerifiedWebhook<T> | { webhookId: string; timestamp: number; version: 'legacy'; rememberUntilMs: number; envelope: WebhookEnvelope<T> } {
  const legacy = header(headers, SIGNATURE_HEADER.toLowerCase());
  const secrets = keys.filter((key): key is string => typeof key === 'string' && !key.startsWith(PUBLIC_KEY_PREFIX));
  if (header(headers, STANDARD_HEADERS.signature) !== undefined) {
    try {
      return verifyStandardWebhook<T>(rawBody, headers, keys, options);
    } catch (error) {
      const retry = error instanceof WebhookVerificationError && error.code === 'SIGNATURE_MISMATCH' && legacy !== undefined && secrets.length > 0;
      if (!retry) throw error;
      try {
        return verifyLegacy<T>(rawBody, legacy, secrets, options);
      } catch {
        throw error;
      }
    }
  }
  return verifyLegacy<T>(rawBody, legacy, secrets, options);
}

function verifyLegacy<T>(
  rawBody: RawBody,
  legacy: string | undefined,
  secrets: string[],
  options: VerifyStandardWebhookOptions,
): { webhookId: string; timestamp: number; version: 'legacy'; rememberUntilMs: number; envelope: WebhookEnvelope<T> } {
  const envelope = verifyWebhook<T>(rawBody, legacy, secrets, options);
  const { timestamp } = parseSignatureHeader(legacy);
  const rememberUntilMs = (timestamp + toleranceOf(options) + 1) * 1000;
  if (options.isNewId && !options.isNewId(envelope.id, rememberUntilMs)) {
    throw new WebhookVerificationError('REPLAYED_ID', `event ${envelope.id} was accepted before (a replay)`);
  }
  return { webhookId: envelope.id, timestamp, version: 'legacy', rememberUntilMs, envelope };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function validId(id: string): boolean {
  return typeof id === 'string' && id !== '' && !/[.\s]/.test(id);
}

function signedContent(webhookId: string, rawTimestamp: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${webhookId}.${rawTimestamp}.`, 'utf8'), body]);
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(', ') : value;
}

function toleranceOf(options: VerifyWebhookOptions): number {
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (typeof tolerance !== 'number' || !Number.isFinite(tolerance) || tolerance < 0) {
    throw new RangeError('toleranceSeconds must be a finite number >= 0');
  }
  return tolerance;
}

function assertFresh(timestamp: number, tolerance: number, options: VerifyWebhookOptions): void {
  const nowSeconds = Math.floor(nowMillis(options.now) / 1000);
  if (Math.abs(nowSeconds - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      'TIMESTAMP_OUT_OF_TOLERANCE',
      `timestamp ${timestamp} is more than ${tolerance} s away from the receiver clock (${nowSeconds})`,
    );
  }
}

function toBytes(rawBody: RawBody): Buffer {
  if (typeof rawBody === 'string') return Buffer.from(rawBody, 'utf8');
  if (Buffer.isBuffer(rawBody)) return rawBody;
  if (rawBody instanceof Uint8Array) return Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  // Most often: a JSON body parser ran before the webhook route, so the bytes are gone.
  throw new TypeError('rawBody must be the raw request body (string, Buffer or Uint8Array); ' + 'was a JSON body parser applied before the webhook route?');
}

function assertSecrets(secrets: string[], fail: (message: string) => Error): void {
  if (!Array.isArray(secrets) || secrets.length === 0) {
    throw fail('no webhook secrets configured');
  }
  // An empty key would let anyone produce a "valid" signature: refuse it rather than skip it.
  if (secrets.some((secret) => typeof secret !== 'string' || secret === '')) {
    throw fail('every webhook secret must be a non-empty string');
  }
}

function nowMillis(now: Date | number | undefined): number {
  const millis = now === undefined ? Date.now() : now instanceof Date ? now.getTime() : now;
  if (typeof millis !== 'number' || !Number.isFinite(millis)) {
    throw new RangeError('now must be a valid Date or a number of milliseconds since the epoch');
  }
  return millis;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseEnvelope<T>(body: Buffer): WebhookEnvelope<T> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8.decode(body));
  } catch {
    throw new WebhookVerificationError('INVALID_PAYLOAD', 'body is not UTF-8 JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new WebhookVerificationError('INVALID_PAYLOAD', 'body is not a JSON object');
  }
  const envelope = parsed as Record<string, unknown>;
  const problems: string[] = [];
  for (const field of ['id', 'type'] as const) {
    if (typeof envelope[field] !== 'string' || envelope[field] === '') problems.push(`${field} must be a non-empty string`);
  }
  for (const field of ['createdAt', 'endpointId'] as const) {
    if (typeof envelope[field] !== 'string') problems.push(`${field} must be a string`);
  }
  if (envelope.mode !== 'concise' && envelope.mode !== 'verbose') problems.push('mode must be concise or verbose');
  if (!('data' in envelope)) problems.push('data is missing');
  if (problems.length > 0) {
    throw new WebhookVerificationError('INVALID_PAYLOAD', `body is not an event envelope: ${problems.join('; ')}`);
  }
  return envelope as unknown as WebhookEnvelope<T>;
}
