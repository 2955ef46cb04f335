import { createHmac, timingSafeEqual } from 'node:crypto';

/** A form's parameters; a name given more than once has all its values. */
export type TwilioParams = Record<string, string | string[]>;

/**
 * Twilio's `X-Twilio-Signature` of a request (docs/twilio.md, "Signatures"): base64 of the
 * HMAC-SHA1, keyed with the auth token, of the URL followed by every POST parameter sorted by name,
 * each name immediately followed by its value. A repeated name signs each distinct value, sorted.
 * Names and values are compared as JavaScript sorts strings (UTF-16 code units), as Twilio's own
 * Node library does.
 */
export function twilioSignature(authToken: string, url: string, params: TwilioParams): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name];
    for (const one of Array.isArray(value) ? [...new Set(value)].sort() : [value]) data += name + one;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/**
 * Whether `signature` is Twilio's for this request: the URL as received, with and without its
 * port (Twilio signs an https URL with a port either way, and a URL without one with or without
 * the scheme's default port), compared in constant time.
 */
export function twilioSignatureMatches(authToken: string, signature: string, url: string, params: TwilioParams): boolean {
  const given = Buffer.from(signature, 'utf8');
  let matched = false;
  for (const candidate of new Set([withoutPort(url), withDefaultPort(url)])) {
    const expected = Buffer.from(twilioSignature(authToken, candidate, params), 'utf8');
    // The length of a valid signature is fixed (28 characters) and not secret.
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched;
}

/** `scheme://` and the authority of a URL, split without normalising anything (the path and query stay as signed). */
function splitUrl(url: string): { scheme: string; userInfo: string; host: string; port: string; rest: string } | undefined {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)/i.exec(url);
  if (!match) return undefined;
  const [prefix, scheme, authority] = match;
  const at = authority.lastIndexOf('@');
  const hostAndPort = authority.slice(at + 1);
  // A colon starts the port only after the closing bracket of an IPv6 literal.
  const colon = hostAndPort.indexOf(':', hostAndPort.lastIndexOf(']') + 1);
  return {
    scheme,
    userInfo: authority.slice(0, at + 1),
    host: colon === -1 ? hostAndPort : hostAndPort.slice(0, colon),
    port: colon === -1 ? '' : hostAndPort.slice(colon),
    rest: url.slice(prefix.length),
  };
}

function withoutPort(url: string): string {
  const parts = splitUrl(url);
  return parts ? parts.scheme + parts.userInfo + parts.host + parts.rest : url;
}

function withDefaultPort(url: string): string {
  const parts = splitUrl(url);
  if (!parts || parts.port) return url;
  return parts.scheme + parts.userInfo + parts.host + (parts.scheme.toLowerCase() === 'https://' ? ':443' : ':80') + parts.rest;
}
