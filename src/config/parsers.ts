import * as ipaddr from 'ipaddr.js';
import { ReadContext, Refused } from './settings';

/** The items of a comma-separated value, trimmed, empty ones dropped. */
export function list(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

export function isCidr(value: string): boolean {
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `1m,5m,30m,2h,12h` → milliseconds; `none` means no retries. */
export function parseDurations(value: string): number[] {
  if (value.trim() === 'none') return [];
  return list(value).map((item) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(item);
    if (!match) throw new Refused(`${item} is not a duration such as 30s, 5m or 2h`);
    return Math.round(Number(match[1]) * UNIT_MS[match[2]]);
  });
}

/** Express's `trust proxy`: false, a number of proxy hops, or the addresses of trusted proxies. */
export type TrustProxy = false | number | string[];

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * `false` (the default): the client IP is the connection's peer. A number: that many proxy hops
 * are trusted (X-Forwarded-For read from the right). Otherwise a list of proxy addresses, CIDRs or
 * Express's names loopback, linklocal, uniquelocal. `true` is refused: trusting every hop lets any
 * client choose its own IP, and so its own per-IP rate-limit bucket.
 */
export function parseTrustProxy(value: string): TrustProxy {
  const trimmed = value.trim().toLowerCase();
  if (trimmed === '' || trimmed === 'false') return false;
  if (trimmed === 'true') throw new Refused("true would believe any X-Forwarded-For; give the number of proxy hops or the proxies' addresses");
  if (/^\d+$/.test(trimmed)) {
    const hops = Number(trimmed);
    if (hops < 1 || hops > 10) throw new Refused(`${trimmed} hops: give 1 to 10`);
    return hops;
  }
  const entries = list(trimmed);
  for (const entry of entries) {
    if (!PROXY_NAMES.has(entry) && !ipaddr.isValid(entry) && !isCidr(entry)) {
      throw new Refused(`${entry} is not an IP address, a CIDR or one of loopback, linklocal, uniquelocal`);
    }
  }
  return entries;
}

/** Loopback receivers (a local webhook receiver, the demo) are allowed in development unless the operator says otherwise. */
export const DEVELOPMENT_ALLOWED_CIDRS = ['127.0.0.0/8', '::1/128'];

/** An allowlist of CIDRs: unset, loopback in development and nothing in production; `none`, nothing. */
export function allowedCidrs(value: string | undefined, context: ReadContext): string[] {
  if (value === undefined) return context.isDevelopment ? [...DEVELOPMENT_ALLOWED_CIDRS] : [];
  if (value.trim().toLowerCase() === 'none') return [];
  const cidrs = list(value);
  const bad = cidrs.filter((cidr) => !isCidr(cidr));
  if (bad.length) throw new Refused(...bad.map((cidr) => `${cidr} is not a CIDR such as 127.0.0.0/8`));
  return cidrs;
}

/** A bearer token an operator sets (admin, ingest, metrics): long enough to guess at, and sendable in a header. */
export const BEARER_TOKEN = { pattern: /^\S{16,}$/, message: 'must be at least 16 characters with no spaces' };
