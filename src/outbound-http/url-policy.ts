/**
 * The outbound HTTP policy (SSRF defence): written for webhook endpoints, applied to every URL the
 * service fetches on someone else's say-so (deliveries, the SMS carrier's media, mail servers,
 * OAuth client metadata documents). docs/webhooks.md, "URL rules", describes it for users.
 *
 * A webhook URL is accepted only when it is an absolute `https://` URL (`http://` too when the
 * service runs in development), carries no credentials, and every address its host resolves to
 * is a public unicast address. The check runs at registration and again at every delivery
 * attempt; the attempt then connects to an address this check returned (resolve, check, pin), so
 * a name that changes its answer between the check and the connect (DNS rebinding) cannot steer
 * the request anywhere the check did not see.
 *
 * Decisions:
 * - Fragment: stripped, not refused. A fragment is never sent over HTTP, so it is harmless; the
 *   returned `url` has none, and the caller should store `url.href`.
 * - Whitespace and control characters anywhere in the input are refused, although the WHATWG
 *   parser would silently drop tabs/newlines and trim the ends: what is stored is what was typed.
 * - Names: `localhost`, `*.localhost` (RFC 6761: resolvers may answer loopback without asking
 *   DNS), `*.local` (mDNS), `*.internal` (ICANN private-use TLD, e.g. `metadata.google.internal`)
 *   and `*.home.arpa` (RFC 8375) are refused by name before any lookup. They can only ever reach
 *   private networks; every other name is judged by the addresses it resolves to.
 * - Port: any port 1..65535 (WHATWG already refuses > 65535); port 0 is refused (nothing listens
 *   there and connecting to it is an error).
 * - IPv4-compatible IPv6 (`::a.b.c.d`, deprecated by RFC 4291) and the local-use NAT64 prefix
 *   `64:ff9b:1::/48` (RFC 8215; not globally routable and its IPv4 position depends on the local
 *   prefix length) are always refused. IPv4-mapped (`::ffff:a.b.c.d`), well-known NAT64
 *   (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses are accepted only when the embedded IPv4
 *   address is itself public. Teredo (`2001::/32`) is always refused.
 * - IPv6 must also lie inside global unicast `2000::/3`; ipaddr.js calls anything it has no name
 *   for `unicast` (e.g. `4000::1`), which IANA has not allocated.
 * - Operator allowlist (`allowedCidrs`): matched against the address as given and, for an
 *   IPv4-mapped address, against the IPv4 address it maps to (a socket to `::ffff:127.0.0.1`
 *   reaches 127.0.0.1). It is not applied to the IPv4 inside NAT64/6to4/IPv4-compatible forms:
 *   those reach a translator, not the allowlisted network, so they stay refused.
 */
import { Inject, Injectable } from '@nestjs/common';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import * as ipaddr from 'ipaddr.js';
import { UrlRefusedError } from '../common/errors';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Names (and every name under them) refused before any lookup; see the decisions above. */
export const LOCAL_ONLY_NAME_SUFFIXES: readonly string[] = ['localhost', 'local', 'internal', 'home.arpa'];

/** Resolves a host name to every address (A and AAAA) the HTTP client could connect to. */
export interface HostResolver {
  resolve(host: string): Promise<string[]>;
}

/** DI token for the `HostResolver` (tests provide a fake that makes any name resolve anywhere). */
export const HOST_RESOLVER = Symbol('HOST_RESOLVER');
/** DI token for `UrlPolicyOptions` when `UrlPolicy` is provided as a class rather than by a factory. */
export const URL_POLICY_OPTIONS = Symbol('URL_POLICY_OPTIONS');

export interface UrlPolicyOptions {
  /** True only when the service runs in development: `http://` is then accepted too. */
  allowHttp: boolean;
  /** Operator allowlist of CIDRs (e.g. `['127.0.0.0/8']`), empty by default; the only exception. */
  allowedCidrs: readonly string[];
  resolver: HostResolver;
}

export interface ParsedWebhookUrl {
  /** Normalized URL, fragment removed. Store `url.href`. */
  url: URL;
  /** Host without IPv6 brackets and without a trailing dot, lower case (e.g. `example.com`, `::1`). */
  host: string;
  /** Explicit port, or 443 / 80 by scheme. */
  port: number;
  hostKind: 'ipv4' | 'ipv6' | 'name';
}

export interface AddressClassification {
  allowed: boolean;
  /**
   * ipaddr.js range name (`unicast`, `loopback`, `private`, `carrierGradeNat`, `linkLocal`,
   * `uniqueLocal`, `multicast`, `broadcast`, `unspecified`, `reserved`, `teredo`, ...), or one of
   * ours: `ipv4Compatible`, `nat64LocalUse`, `notGlobalUnicast`, `invalid`. For an address that
   * embeds IPv4 (mapped, NAT64, 6to4) it is the range of the embedded IPv4 address.
   */
  range: string;
  /** Canonical text of the address (RFC 5952 for IPv6), or the input when it is not an address. */
  address: string;
  /** The IPv4 address an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 address embeds. */
  embeddedIpv4?: string;
  via?: 'ipv4Mapped' | 'ipv4Compatible' | 'nat64' | '6to4';
  /** True when allowed only because the operator allowlist covers it. */
  allowlisted?: boolean;
}

export interface CheckedWebhookUrl extends ParsedWebhookUrl {
  /**
   * Every address the host resolved to, each checked, duplicates removed, in the resolver's own
   * order (for `DnsHostResolver`, the order getaddrinfo prefers, as an ordinary HTTP client would
   * try them). Connect to `addresses[0]`; the rest are checked fallbacks. Never empty.
   */
  addresses: string[];
}

export type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/**
 * Default resolver. Uses `dns.lookup` (getaddrinfo) rather than `resolve4`/`resolve6` because
 * that is what Node's HTTP clients use to find the address they connect to: it honours
 * `/etc/hosts`, nsswitch and the search list. Whichever we chose, delivery connects to the
 * address this check returned and never looks the name up again, so the checked address is the
 * connected one; using the client's own lookup keeps registration answers the same as what a
 * plain HTTP client (curl, the subscriber's own test) would reach. `verbatim: true` keeps the
 * system's preference order, which becomes the pinning order.
 *
 * Caveat: getaddrinfo runs on libuv's thread pool (4 threads by default) and cannot be cancelled;
 * the timeout below only stops waiting. The module wraps it in CachingHostResolver, so a name
 * is looked up once per `OUTBOUND_DNS_CACHE_SECONDS`, not once per delivery attempt.
 */
@Injectable()
export class DnsHostResolver implements HostResolver {
  static readonly TIMEOUT_MS = 5_000;

  async resolve(host: string): Promise<string[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new Error(`lookup of ${host} timed out`) as NodeJS.ErrnoException;
        error.code = 'ETIMEOUT';
        reject(error);
      }, DnsHostResolver.TIMEOUT_MS);
      timer.unref();
    });
    try {
      const answers = await Promise.race([lookup(host, { all: true, verbatim: true }), timeout]);
      return answers.map((answer) => answer.address);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTFOUND' || code === 'ENODATA') return [];
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }
}

function refuse(message: string): never {
  throw new UrlRefusedError(message, 'url');
}

// eslint-disable-next-line no-control-regex
const WHITESPACE_OR_CONTROL = /[\u0000-\u0020\u007f-\u009f\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]/;

/**
 * Parses and normalizes a webhook URL without any lookup. Numeric IPv4 spellings
 * (`2130706433`, `0x7f.1`, `017700000001`, `127.1`, full-width digits, percent-encoded digits)
 * are normalized by the WHATWG parser to dotted decimal, and IPv6 literals to RFC 5952 text, so
 * the classification sees the address the HTTP client would connect to.
 */
export function parseWebhookUrl(raw: string, options: { allowHttp: boolean } = { allowHttp: false }): ParsedWebhookUrl {
  if (typeof raw !== 'string' || raw.length === 0) refuse('url is required');
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) refuse(`url is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  if (WHITESPACE_OR_CONTROL.test(raw)) refuse('url must not contain spaces or control characters');

  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('url is not a valid absolute URL');
  }

  if (url.protocol === 'http:') {
    if (!options.allowHttp) refuse('url must use https (http is accepted only when the service runs in development)');
  } else if (url.protocol !== 'https:') {
    refuse(`url scheme ${url.protocol.replace(/:$/, '')} is not allowed; webhook URLs must use https`);
  }
  if (url.username !== '' || url.password !== '') refuse('url must not contain credentials (user:password@)');
  if (url.hostname === '') refuse('url must have a host');
  if (url.port === '0') refuse('url port 0 is not allowed');

  url.hash = '';
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) {
    refuse(`url is longer than ${MAX_WEBHOOK_URL_LENGTH} characters once normalized`);
  }

  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const hostname = url.hostname;

  if (hostname.startsWith('[') && hostname.endsWith(']')) {
    return { url, host: hostname.slice(1, -1), port, hostKind: 'ipv6' };
  }
  if (isIP(hostname) === 4) {
    return { url, host: hostname, port, hostKind: 'ipv4' };
  }

  const host = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  const labels = host.split('.');
  if (host.length === 0 || host.length > 253 || labels.some((label) => label.length === 0 || label.length > 63)) {
    refuse(`url host ${hostname} is not a valid host name`);
  }
  const localOnly = LOCAL_ONLY_NAME_SUFFIXES.find((suffix) => host === suffix || host.endsWith(`.${suffix}`));
  if (localOnly) {
    refuse(`url host ${hostname} is a local-only name (.${localOnly}); webhook URLs must be public`);
  }
  return { url, host, port, hostKind: 'name' };
}

/** Parses operator CIDRs (`127.0.0.0/8`, `fd00::/8`); blank entries are ignored, bad ones throw. */
export function parseCidrs(cidrs: readonly string[]): Cidr[] {
  return cidrs
    .map((cidr) => cidr.trim())
    .filter((cidr) => cidr !== '')
    .map((cidr) => {
      try {
        return ipaddr.parseCIDR(cidr);
      } catch {
        throw new Error(`allowed CIDR ${cidr} is not a CIDR such as 127.0.0.0/8`);
      }
    });
}

function inCidrs(address: ipaddr.IPv4 | ipaddr.IPv6, cidrs: readonly Cidr[]): boolean {
  return cidrs.some(([network, bits]) => network.kind() === address.kind() && address.match(network, bits));
}

function ipv4From(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/** Strict parse: dotted-decimal IPv4 (no octal/hex/short forms) or IPv6 (brackets tolerated). */
function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const family = isIP(bare);
  if (family === 4 && ipaddr.IPv4.isValidFourPartDecimal(bare)) return ipaddr.IPv4.parse(bare);
  if (family === 6) return ipaddr.IPv6.parse(bare);
  return undefined;
}

function classifyParsed(address: ipaddr.IPv4 | ipaddr.IPv6): Omit<AddressClassification, 'address' | 'allowlisted'> {
  if (address.kind() === 'ipv4') {
    const range = address.range();
    return { allowed: range === 'unicast', range };
  }
  const v6 = address as ipaddr.IPv6;
  const parts = v6.parts;
  const embedded = (via: NonNullable<AddressClassification['via']>, v4: ipaddr.IPv4) => {
    const range = v4.range();
    return { allowed: range === 'unicast', range, embeddedIpv4: v4.toString(), via };
  };

  const range = v6.range();
  switch (range) {
    case 'ipv4Mapped':
      return embedded('ipv4Mapped', v6.toIPv4Address());
    case 'rfc6052': {
      const v4 = ipv4From(parts[6], parts[7]);
      if (parts[2] !== 0) {
        // 64:ff9b:1::/48, local-use (RFC 8215): always refused, see the decisions above.
        return { allowed: false, range: 'nat64LocalUse', embeddedIpv4: v4.toString(), via: 'nat64' };
      }
      return embedded('nat64', v4);
    }
    case '6to4':
      return embedded('6to4', ipv4From(parts[1], parts[2]));
    case 'unicast': {
      if (parts.slice(0, 6).every((part) => part === 0)) {
        // ::a.b.c.d (:: and ::1 are caught above as unspecified / loopback).
        const v4 = ipv4From(parts[6], parts[7]);
        const inner = v4.range();
        return { allowed: false, range: inner === 'unicast' ? 'ipv4Compatible' : inner, embeddedIpv4: v4.toString(), via: 'ipv4Compatible' };
      }
      if ((parts[0] & 0xe000) !== 0x2000) return { allowed: false, range: 'notGlobalUnicast' };
      return { allowed: true, range: 'unicast' };
    }
    default:
      return { allowed: false, range };
  }
}

/**
 * Classifies one address. Allowed only for public unicast addresses (IPv6 inside 2000::/3);
 * IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 forms only when the IPv4 they embed is public.
 * `allowedCidrs` (operator allowlist) is the only exception. Input that is not a strict IP
 * address (e.g. `127.1`, `0x7f.0.0.1`) is `invalid` and refused: URLs are normalized first.
 */
export function classify(address: string, allowedCidrs: readonly string[] = []): AddressClassification {
  return classifyWith(address, parseCidrs(allowedCidrs));
}

function classifyWith(address: string, cidrs: readonly Cidr[]): AddressClassification {
  const parsed = parseAddress(address);
  if (!parsed) return { allowed: false, range: 'invalid', address };

  const canonical = parsed.kind() === 'ipv6' ? (parsed as ipaddr.IPv6).toRFC5952String() : parsed.toString();
  const result: AddressClassification = { ...classifyParsed(parsed), address: canonical };
  if (result.allowed || cidrs.length === 0) return result;

  const mapped = parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : undefined;
  if (inCidrs(parsed, cidrs) || (mapped !== undefined && inCidrs(mapped, cidrs))) {
    return { ...result, allowed: true, allowlisted: true };
  }
  return result;
}

const RANGE_DESCRIPTIONS: Record<string, string> = {
  unicast: 'a public address',
  loopback: 'a loopback address',
  private: 'a private (RFC 1918) address',
  carrierGradeNat: 'a carrier-grade NAT (100.64.0.0/10) address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a unique-local (fc00::/7) address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  unspecified: 'an unspecified (0.0.0.0/8 or ::) address',
  reserved: 'a reserved or documentation address',
  benchmarking: 'a benchmarking address',
  as112: 'an AS112 address',
  as112v6: 'an AS112 address',
  amt: 'an AMT relay address',
  teredo: 'a Teredo tunnel address',
  discard: 'a discard-only (100::/64) address',
  deprecatedSiteLocal: 'a site-local address',
  rfc6145: 'an IPv4-translated address',
  orchid2: 'an ORCHID address',
  deprecatedOrchid: 'an ORCHID address',
  droneRemoteIdProtocolEntityTags: 'a special-purpose address',
  segmentRouting: 'a segment-routing address',
  ipv4Compatible: 'a deprecated IPv4-compatible address',
  nat64LocalUse: 'a local-use NAT64 (64:ff9b:1::/48) address',
  notGlobalUnicast: 'an address outside IPv6 global unicast (2000::/3)',
  invalid: 'not a valid IP address',
};

const VIA_NAMES: Record<NonNullable<AddressClassification['via']>, string> = {
  ipv4Mapped: 'IPv4-mapped',
  ipv4Compatible: 'IPv4-compatible',
  nat64: 'NAT64',
  '6to4': '6to4',
};

/** `a private (RFC 1918) address`: the words a refusal uses for a range name. */
export function describeRange(range: string): string {
  return RANGE_DESCRIPTIONS[range] ?? `a special-purpose (${range}) address`;
}

/** `10.0.0.5, a private (RFC 1918) address` / `::ffff:a00:5 (IPv4-mapped 10.0.0.5), a private ...` */
export function describeAddress(classification: AddressClassification): string {
  const description = describeRange(classification.range);
  const embedded = classification.via && classification.embeddedIpv4 ? ` (${VIA_NAMES[classification.via]} ${classification.embeddedIpv4})` : '';
  return `${classification.address}${embedded}, ${description}`;
}

@Injectable()
export class UrlPolicy {
  private readonly allowHttp: boolean;
  private readonly allowedCidrs: readonly Cidr[];
  private readonly resolver: HostResolver;

  /**
   * Wire with a factory, e.g.
   * `{ provide: UrlPolicy, inject: [APP_CONFIG, HOST_RESOLVER], useFactory: (config, resolver) =>
   *   new UrlPolicy({ allowHttp: config.isDevelopment, allowedCidrs: config.webhooks.allowedCidrs, resolver }) }`,
   * or provide `URL_POLICY_OPTIONS` and list `UrlPolicy` as a class provider.
   * Throws when an allowed CIDR is malformed.
   */
  constructor(@Inject(URL_POLICY_OPTIONS) private readonly options: UrlPolicyOptions) {
    this.allowHttp = options.allowHttp;
    this.allowedCidrs = parseCidrs(options.allowedCidrs);
    this.resolver = options.resolver;
  }

  /**
   * The rule as this process applies it, in one sentence for a person typing a URL: https only, or
   * http too in development; public addresses, and the operator's allowed CIDRs (loopback by
   * default in development).
   */
  rule(): string {
    const scheme = this.allowHttp ? 'An http:// or https:// address' : 'An https:// address';
    const cidrs = this.options.allowedCidrs;
    return cidrs.length === 0
      ? `${scheme} that resolves to public addresses.`
      : `${scheme} that resolves to public addresses, or to ${cidrs.join(', ')} (allowed on this service).`;
  }

  /** Syntax and scheme rules only (no lookup). Throws `UrlRefusedError`. */
  parse(raw: string): ParsedWebhookUrl {
    return parseWebhookUrl(raw, { allowHttp: this.allowHttp });
  }

  classify(address: string): AddressClassification {
    return classifyWith(address, this.allowedCidrs);
  }

  /**
   * The full policy: parse, then classify the IP literal or every address the name resolves to.
   * Refuses (`UrlRefusedError`, field `url`) when any address is not allowed, or none is found;
   * never a partial allow. Call at registration and at every delivery attempt, then connect to
   * `addresses[0]` with the TLS server name and Host header taken from `url`.
   */
  async check(raw: string): Promise<CheckedWebhookUrl> {
    const parsed = this.parse(raw);

    if (parsed.hostKind !== 'name') {
      const classification = this.classify(parsed.host);
      if (!classification.allowed) {
        refuse(`url host ${describeAddress(classification)}; webhook URLs must be public`);
      }
      return { ...parsed, addresses: [classification.address] };
    }

    let resolved: unknown;
    try {
      resolved = await this.resolver.resolve(parsed.host);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | undefined)?.code;
      return refuse(`url host ${parsed.host} could not be resolved${code ? ` (${code})` : ''}`);
    }
    if (!Array.isArray(resolved) || resolved.length === 0) {
      refuse(`url host ${parsed.host} does not resolve to any address`);
    }

    const addresses: string[] = [];
    for (const address of resolved as unknown[]) {
      const classification = this.classify(String(address));
      if (!classification.allowed) {
        refuse(`url resolves to ${describeAddress(classification)}; webhook URLs must be public`);
      }
      if (!addresses.includes(classification.address)) addresses.push(classification.address);
    }
    return { ...parsed, addresses };
  }
}
