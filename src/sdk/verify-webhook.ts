/**
 * Webhook signature helper shared by the service's signer and by subscribers.
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
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

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
  | 'INVALID_PAYLOAD';

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
 *   the hex string as handed out, used as-is (UTF-8 bytes) as the HMAC key, not hex-decoded.
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
  const body = toBytes(rawBody);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (typeof tolerance !== 'number' || !Number.isFinite(tolerance) || tolerance < 0) {
    throw new RangeError('toleranceSeconds must be a finite number >= 0');
  }
  const nowSeconds = Math.floor(nowMillis(options.now) / 1000);

  const { timestamp, rawTimestamp, signatures } = parseSignatureHeader(header);
  if (Math.abs(nowSeconds - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      'TIMESTAMP_OUT_OF_TOLERANCE',
      `timestamp ${timestamp} is more than ${tolerance} s away from the receiver clock (${nowSeconds})`,
    );
  }

  const received = signatures.map((signature) => Buffer.from(signature, 'utf8'));
  let verified = false;
  for (const secret of secrets) {
    const expected = Buffer.from(hmacHex(secret, rawTimestamp, body), 'utf8');
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
  return [`t=${t}`, ...secrets.map((secret) => `${SIGNATURE_SCHEME}=${hmacHex(secret, t, body)}`)].join(',');
}

function hmacHex(secret: string, rawTimestamp: string, body: Buffer): string {
  // The secret's UTF-8 bytes are the key (the hex string is not decoded). The message is the
  // timestamp, a dot, then the body bytes as they are: no re-encoding of the body.
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${rawTimestamp}.`, 'utf8').update(body).digest('hex');
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
