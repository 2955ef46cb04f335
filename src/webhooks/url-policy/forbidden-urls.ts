/**
 * Corpus of webhook URLs the URL policy must refuse, reusable by unit and e2e tests (issue 6:
 * "a corpus of at least 60 forbidden URL forms ... all refused, at registration and at send
 * time"). Each DNS-name case says what a fake resolver must answer for it (`resolverFor`).
 *
 * Every case is refused under the production policy (https only, empty allowlist). Under a
 * development policy (`allowHttp: true`) every case except `reason: 'http'` is still refused.
 * With the test/demo allowlist `127.0.0.0/8`, the cases marked `loopback: true` are admitted
 * (they reach 127.0.0.0/8 directly or IPv4-mapped, and nothing else is wrong with them); all
 * others stay refused. Use `refusedWith()` to pick the cases for a given configuration.
 */
import type { HostResolver } from './url-policy';

export type ForbiddenReason =
  /** malformed, relative, too long, whitespace, port 0, bad host name */
  | 'syntax'
  /** a scheme other than http/https */
  | 'scheme'
  /** http:// while http is not allowed (production) */
  | 'http'
  /** user or password in the URL */
  | 'credentials'
  /** a local-only name (localhost, .local, .internal, .home.arpa), refused before any lookup */
  | 'name'
  /** an IP literal, or a name resolving to at least one, that is not public */
  | 'address'
  /** a name resolving to nothing */
  | 'unresolvable';

export interface ForbiddenUrl {
  url: string;
  /** For a DNS name that reaches the lookup: every address the fake resolver answers. */
  resolvesTo?: string[];
  why: string;
  reason: ForbiddenReason;
  /** For `reason: 'address'`: the range the refusal names (see `classify`). */
  range?: string;
  /** Refused only because it reaches 127.0.0.0/8: an allowlist of 127.0.0.0/8 admits it. */
  loopback?: true;
}

const PUBLIC_V4 = '93.184.216.34';
const PUBLIC_V6 = '2606:4700::1111';

const literal = (url: string, range: string, why: string, extra: Partial<ForbiddenUrl> = {}): ForbiddenUrl => ({
  url,
  why,
  reason: 'address',
  range,
  ...extra,
});

const resolving = (name: string, resolvesTo: string[], range: string, why: string, extra: Partial<ForbiddenUrl> = {}): ForbiddenUrl => ({
  url: `https://${name}/hook`,
  resolvesTo,
  why,
  reason: 'address',
  range,
  ...extra,
});

const LOOPBACK = { loopback: true } as const;

export const FORBIDDEN_URLS: readonly ForbiddenUrl[] = [
  // --- IPv4 literals, one or more per refused range -------------------------------------------
  literal('https://127.0.0.1/hook', 'loopback', 'IPv4 loopback', LOOPBACK),
  literal('https://127.255.255.254:8443/', 'loopback', 'top of 127.0.0.0/8', LOOPBACK),
  literal('https://10.0.0.1/', 'private', 'RFC 1918 10/8'),
  literal('https://10.255.255.255/', 'private', 'top of 10/8'),
  literal('https://172.16.0.1/', 'private', 'RFC 1918 172.16/12'),
  literal('https://172.31.255.254/', 'private', 'top of 172.16/12'),
  literal('https://192.168.0.1/', 'private', 'RFC 1918 192.168/16'),
  literal('https://192.168.255.255/', 'private', 'top of 192.168/16'),
  literal('https://100.64.0.1/', 'carrierGradeNat', 'CGNAT 100.64/10'),
  literal('https://100.127.255.254/', 'carrierGradeNat', 'top of 100.64/10'),
  literal('https://169.254.169.254/latest/meta-data/', 'linkLocal', 'cloud metadata service'),
  literal('https://169.254.0.1/', 'linkLocal', 'IPv4 link-local 169.254/16'),
  literal('https://224.0.0.1/', 'multicast', 'IPv4 multicast'),
  literal('https://239.255.255.250/', 'multicast', 'SSDP multicast'),
  literal('https://255.255.255.255/', 'broadcast', 'limited broadcast'),
  literal('https://0.0.0.0/', 'unspecified', 'unspecified, reaches the local host on Linux'),
  literal('https://0.1.2.3/', 'unspecified', '0.0.0.0/8 "this network"'),
  literal('https://192.0.0.8/', 'reserved', 'IETF protocol assignments 192.0.0.0/24'),
  literal('https://192.0.2.1/', 'reserved', 'documentation TEST-NET-1'),
  literal('https://198.51.100.7/', 'reserved', 'documentation TEST-NET-2'),
  literal('https://203.0.113.9/', 'reserved', 'documentation TEST-NET-3'),
  literal('https://198.18.0.1/', 'reserved', 'benchmarking 198.18/15'),
  literal('https://198.19.255.254/', 'reserved', 'top of benchmarking 198.18/15'),
  literal('https://240.0.0.1/', 'reserved', 'reserved class E 240/4'),
  literal('https://192.88.99.1/', 'reserved', '6to4 relay anycast'),
  literal('https://192.31.196.1/', 'as112', 'AS112 sink'),
  literal('https://192.52.193.1/', 'amt', 'AMT relay anycast'),

  // --- numeric IPv4 spellings the WHATWG parser normalizes --------------------------------------
  literal('https://2130706433/', 'loopback', 'decimal 127.0.0.1', LOOPBACK),
  literal('https://0x7f000001/', 'loopback', 'hex 127.0.0.1', LOOPBACK),
  literal('https://017700000001/', 'loopback', 'octal 127.0.0.1', LOOPBACK),
  literal('https://0x7f.1/', 'loopback', 'hex short form', LOOPBACK),
  literal('https://127.1/', 'loopback', 'two-part short form', LOOPBACK),
  literal('https://127.0.1/', 'loopback', 'three-part short form', LOOPBACK),
  literal('https://0177.0.0.1/', 'loopback', 'octal first octet', LOOPBACK),
  literal('https://0x7f.0x0.0x0.0x1/', 'loopback', 'hex every octet', LOOPBACK),
  literal('https://0x7f.0.0.01/', 'loopback', 'mixed hex and octal', LOOPBACK),
  literal('https://127.0.0.1./', 'loopback', 'trailing dot', LOOPBACK),
  literal('https://%31%32%37.0.0.1/', 'loopback', 'percent-encoded digits', LOOPBACK),
  literal('https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/', 'loopback', 'full-width digits (IDNA maps them)', LOOPBACK),
  literal('https://0/', 'unspecified', 'single zero is 0.0.0.0'),
  literal('https://0x0/', 'unspecified', 'hex zero is 0.0.0.0'),
  literal('https://0xa9fea9fe/', 'linkLocal', 'hex metadata address'),
  literal('https://0251.0376.0251.0376/', 'linkLocal', 'octal metadata address'),
  literal('https://2852039166/', 'linkLocal', 'decimal metadata address'),
  literal('https://167772161/', 'private', 'decimal 10.0.0.1'),
  literal('https://0xc0a80001/', 'private', 'hex 192.168.0.1'),
  literal('https://012.0.0.1/', 'private', 'octal 012 is 10'),
  literal('https://10.1/', 'private', 'short form 10.0.0.1'),
  literal('https://192.168.1/', 'private', 'short form 192.168.0.1'),

  // --- IPv6 literals --------------------------------------------------------------------------
  literal('https://[::1]/', 'loopback', 'IPv6 loopback (not in 127.0.0.0/8)'),
  literal('https://[0:0:0:0:0:0:0:1]/', 'loopback', 'IPv6 loopback, long form'),
  literal('https://[::]/', 'unspecified', 'IPv6 unspecified'),
  literal('https://[::ffff:127.0.0.1]/', 'loopback', 'IPv4-mapped loopback, dotted', LOOPBACK),
  literal('https://[::ffff:7f00:1]/', 'loopback', 'IPv4-mapped loopback, hex', LOOPBACK),
  literal('https://[0:0:0:0:0:ffff:127.0.0.1]/', 'loopback', 'IPv4-mapped loopback, long form', LOOPBACK),
  literal('https://[::ffff:10.0.0.1]/', 'private', 'IPv4-mapped private'),
  literal('https://[::ffff:169.254.169.254]/', 'linkLocal', 'IPv4-mapped metadata'),
  literal('https://[::ffff:a9fe:a9fe]/', 'linkLocal', 'IPv4-mapped metadata, hex'),
  literal('https://[::127.0.0.1]/', 'loopback', 'IPv4-compatible loopback (URL normalizes to ::7f00:1)'),
  literal('https://[::8.8.8.8]/', 'ipv4Compatible', 'IPv4-compatible form is deprecated, refused even for a public IPv4'),
  literal('https://[64:ff9b::a00:1]/', 'private', 'NAT64 of 10.0.0.1'),
  literal('https://[64:ff9b::127.0.0.1]/', 'loopback', 'NAT64 of 127.0.0.1 (allowlist not applied through a translator)'),
  literal('https://[64:ff9b:1::808:808]/', 'nat64LocalUse', 'local-use NAT64 prefix 64:ff9b:1::/48'),
  literal('https://[2002:a00:1::]/', 'private', '6to4 of 10.0.0.1'),
  literal('https://[2002:7f00:1::1]/', 'loopback', '6to4 of 127.0.0.1'),
  literal('https://[2002:a9fe:a9fe::]/', 'linkLocal', '6to4 of the metadata address'),
  literal('https://[fe80::1]/', 'linkLocal', 'IPv6 link-local'),
  literal('https://[febf::1]/', 'linkLocal', 'top of fe80::/10'),
  literal('https://[fd00::1]/', 'uniqueLocal', 'IPv6 unique-local fd00::/8'),
  literal('https://[fc00::1]/', 'uniqueLocal', 'IPv6 unique-local fc00::/8'),
  literal('https://[fd00:ec2::254]/', 'uniqueLocal', 'AWS IPv6 metadata service'),
  literal('https://[ff02::1]/', 'multicast', 'IPv6 all-nodes multicast'),
  literal('https://[ff05::1:3]/', 'multicast', 'IPv6 site multicast'),
  literal('https://[2001:db8::1]/', 'reserved', 'IPv6 documentation 2001:db8::/32'),
  literal('https://[3fff::1]/', 'reserved', 'IPv6 documentation 3fff::/20'),
  literal('https://[2001::1]/', 'teredo', 'Teredo 2001::/32'),
  literal('https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'teredo', 'Teredo with an embedded server address'),
  literal('https://[100::1]/', 'discard', 'IPv6 discard-only 100::/64'),
  literal('https://[fec0::1]/', 'deprecatedSiteLocal', 'deprecated site-local fec0::/10'),
  literal('https://[2001:2::1]/', 'benchmarking', 'IPv6 benchmarking 2001:2::/48'),
  literal('https://[::ffff:0:a00:1]/', 'rfc6145', 'IPv4-translated ::ffff:0:0:0/96'),
  literal('https://[4000::1]/', 'notGlobalUnicast', 'outside 2000::/3'),

  // --- local-only names, refused before any lookup ---------------------------------------------
  { url: 'https://localhost/', why: 'localhost', reason: 'name' },
  { url: 'https://LOCALHOST./', why: 'localhost, upper case with trailing dot', reason: 'name' },
  { url: 'https://localhost:8080/hook', why: 'localhost with a port', reason: 'name' },
  { url: 'https://api.localhost/', why: 'a name under .localhost', reason: 'name' },
  { url: 'https://\u24dbocalhost/', why: 'circled letter that IDNA maps to localhost', reason: 'name' },
  { url: 'https://printer.local/', why: 'mDNS .local', reason: 'name' },
  { url: 'https://metadata.google.internal/computeMetadata/v1/', why: 'GCP metadata name under .internal', reason: 'name' },
  { url: 'https://router.home.arpa/', why: 'home network .home.arpa', reason: 'name' },

  // --- credentials ------------------------------------------------------------------------------
  { url: 'https://public.example@127.0.0.1/', why: 'looks like a public host, is userinfo before 127.0.0.1', reason: 'credentials' },
  { url: 'https://example.com:443@127.0.0.1/', why: 'host:port-looking userinfo', reason: 'credentials' },
  { url: 'https://user:pw@example.com/', why: 'user and password', reason: 'credentials' },
  { url: 'https://user@example.com/', why: 'user only', reason: 'credentials' },
  { url: 'https://:pw@example.com/', why: 'password only', reason: 'credentials' },

  // --- schemes ---------------------------------------------------------------------------------
  { url: 'ftp://example.com/', why: 'ftp', reason: 'scheme' },
  { url: 'file:///etc/passwd', why: 'file', reason: 'scheme' },
  { url: 'gopher://127.0.0.1:6379/_INFO', why: 'gopher to Redis', reason: 'scheme' },
  { url: 'javascript:alert(1)', why: 'javascript', reason: 'scheme' },
  { url: 'data:text/plain,hello', why: 'data', reason: 'scheme' },
  { url: 'ws://example.com/', why: 'websocket', reason: 'scheme' },
  { url: 'wss://example.com/', why: 'secure websocket', reason: 'scheme' },
  { url: 'dict://127.0.0.1:11211/', why: 'dict to memcached', reason: 'scheme' },

  // --- http outside development -------------------------------------------------------------------
  { url: 'http://plain.public.example/hook', resolvesTo: [PUBLIC_V4], why: 'plain http to a public name', reason: 'http' },
  { url: `http://${PUBLIC_V4}/hook`, why: 'plain http to a public address', reason: 'http' },

  // --- syntax --------------------------------------------------------------------------------------
  { url: '', why: 'empty', reason: 'syntax' },
  { url: 'example.com/hook', why: 'no scheme', reason: 'syntax' },
  { url: '/relative/path', why: 'relative', reason: 'syntax' },
  { url: 'https://', why: 'no host', reason: 'syntax' },
  { url: 'https://[::1', why: 'unclosed IPv6 bracket', reason: 'syntax' },
  { url: 'https://1.2.3.4.5/', why: 'five-part numeric host', reason: 'syntax' },
  { url: 'https://0x100000000/', why: 'numeric host above 2^32', reason: 'syntax' },
  { url: 'https://256.0.0.1/', why: 'octet above 255', reason: 'syntax' },
  { url: 'https://example..com/', why: 'empty label', reason: 'syntax' },
  { url: 'https://hooks.public.example:0/', why: 'port 0', reason: 'syntax' },
  { url: 'https://exa mple.com/', why: 'space in host', reason: 'syntax' },
  { url: ' https://hooks.public.example/', why: 'leading space', reason: 'syntax' },
  { url: 'https://127.0.0.1\t/', why: 'tab (WHATWG would drop it silently)', reason: 'syntax' },
  { url: 'https://hooks.public.example/\n', why: 'trailing newline', reason: 'syntax' },
  { url: `https://hooks.public.example/${'a'.repeat(2100)}`, why: 'longer than 2048 characters', reason: 'syntax' },

  // --- DNS names resolving to refused addresses (rebinding-style) ---------------------------------
  resolving('loopback.rebind.example', ['127.0.0.1'], 'loopback', 'name to IPv4 loopback', LOOPBACK),
  resolving('loopback6.rebind.example', ['::1'], 'loopback', 'name to IPv6 loopback'),
  resolving('ten.rebind.example', ['10.0.0.5'], 'private', 'name to 10/8'),
  resolving('oneseventwo.rebind.example', ['172.20.1.1'], 'private', 'name to 172.16/12'),
  resolving('oneninetwo.rebind.example', ['192.168.1.10'], 'private', 'name to 192.168/16'),
  resolving('cgnat.rebind.example', ['100.64.1.1'], 'carrierGradeNat', 'name to CGNAT'),
  resolving('metadata.rebind.example', ['169.254.169.254'], 'linkLocal', 'name to the metadata service'),
  resolving('169.254.169.254.nip.io', ['169.254.169.254'], 'linkLocal', 'wildcard DNS to the metadata service'),
  resolving('linklocal6.rebind.example', ['fe80::1%eth0'], 'linkLocal', 'name to IPv6 link-local with a zone'),
  resolving('ula.rebind.example', ['fd12:3456::1'], 'uniqueLocal', 'name to unique-local'),
  resolving('mdns.rebind.example', ['224.0.0.251'], 'multicast', 'name to multicast'),
  resolving('multicast6.rebind.example', ['ff02::fb'], 'multicast', 'name to IPv6 multicast'),
  resolving('broadcast.rebind.example', ['255.255.255.255'], 'broadcast', 'name to broadcast'),
  resolving('zero.rebind.example', ['0.0.0.0'], 'unspecified', 'name to 0.0.0.0'),
  resolving('zero6.rebind.example', ['::'], 'unspecified', 'name to ::'),
  resolving('mapped.rebind.example', ['::ffff:127.0.0.1'], 'loopback', 'name to IPv4-mapped loopback', LOOPBACK),
  resolving('mapped-private.rebind.example', ['::ffff:10.0.0.1'], 'private', 'name to IPv4-mapped private'),
  resolving('nat64.rebind.example', ['64:ff9b::a9fe:a9fe'], 'linkLocal', 'name to NAT64 of the metadata address'),
  resolving('sixtofour.rebind.example', ['2002:c0a8:101::1'], 'private', 'name to 6to4 of 192.168.1.1'),
  resolving('doc.rebind.example', ['192.0.2.10'], 'reserved', 'name to documentation range'),
  resolving('bench.rebind.example', ['198.18.0.5'], 'reserved', 'name to benchmarking range'),
  resolving('classe.rebind.example', ['240.0.0.1'], 'reserved', 'name to 240/4'),
  resolving('doc6.rebind.example', ['2001:db8::5'], 'reserved', 'name to IPv6 documentation'),
  resolving('teredo.rebind.example', ['2001::5efe:a00:1'], 'teredo', 'name to Teredo'),
  resolving('trailing-dot.rebind.example.', ['10.1.2.3'], 'private', 'absolute name with trailing dot'),
  resolving('mixed-a.rebind.example', [PUBLIC_V4, '10.0.0.5'], 'private', 'one public, one private address'),
  resolving('mixed-b.rebind.example', ['10.0.0.5', PUBLIC_V4], 'private', 'private address first'),
  resolving('mixed-v6.rebind.example', [PUBLIC_V6, 'fd00::1'], 'uniqueLocal', 'public AAAA and unique-local AAAA'),
  resolving('mixed-families.rebind.example', [PUBLIC_V4, PUBLIC_V6, '::1'], 'loopback', 'public A, public AAAA, loopback AAAA'),
  resolving('mixed-loopback.rebind.example', [PUBLIC_V4, '127.0.0.1'], 'loopback', 'public and loopback', LOOPBACK),
  { url: 'https://nothing.rebind.example/hook', resolvesTo: [], why: 'name resolving to nothing', reason: 'unresolvable' },
];

/** URLs the policy must accept (production policy, empty allowlist), with the addresses expected. */
export interface AllowedUrl {
  url: string;
  resolvesTo?: string[];
  /** `addresses` the check must return, in order. */
  addresses: string[];
  /** Expected `url.href` after normalization, when it differs from `url`. */
  href?: string;
  why: string;
}

export const ALLOWED_URLS: readonly AllowedUrl[] = [
  { url: `https://${PUBLIC_V4}/hook`, addresses: [PUBLIC_V4], why: 'public IPv4' },
  { url: `https://[${PUBLIC_V6}]/hook`, addresses: [PUBLIC_V6], why: 'public IPv6' },
  { url: 'https://[2606:4700:0:0:0:0:0:1111]/', addresses: [PUBLIC_V6], href: `https://[${PUBLIC_V6}]/`, why: 'public IPv6, long form' },
  { url: 'https://8.8.8.8:8443/x?y=1', addresses: ['8.8.8.8'], why: 'public IPv4 with port and query' },
  { url: 'https://[::ffff:8.8.8.8]/', addresses: ['::ffff:808:808'], href: 'https://[::ffff:808:808]/', why: 'IPv4-mapped public' },
  { url: 'https://[64:ff9b::8.8.8.8]/', addresses: ['64:ff9b::808:808'], href: 'https://[64:ff9b::808:808]/', why: 'NAT64 of a public IPv4' },
  { url: 'https://[2002:808:808::1]/', addresses: ['2002:808:808::1'], why: '6to4 of a public IPv4' },
  { url: 'https://100.63.255.255/', addresses: ['100.63.255.255'], why: 'just below 100.64/10' },
  { url: 'https://100.128.0.0/', addresses: ['100.128.0.0'], why: 'just above 100.64/10' },
  { url: 'https://172.15.255.255/', addresses: ['172.15.255.255'], why: 'just below 172.16/12' },
  { url: 'https://172.32.0.0/', addresses: ['172.32.0.0'], why: 'just above 172.16/12' },
  { url: 'https://11.0.0.0/', addresses: ['11.0.0.0'], why: 'just above 10/8' },
  { url: 'https://192.169.0.0/', addresses: ['192.169.0.0'], why: 'just above 192.168/16' },
  { url: 'https://169.253.255.255/', addresses: ['169.253.255.255'], why: 'just below 169.254/16' },
  { url: 'https://198.17.255.255/', addresses: ['198.17.255.255'], why: 'just below 198.18/15' },
  { url: 'https://198.20.0.0/', addresses: ['198.20.0.0'], why: 'just above 198.18/15' },
  { url: 'https://223.255.255.255/', addresses: ['223.255.255.255'], why: 'just below multicast' },
  { url: 'https://1.0.0.1/', addresses: ['1.0.0.1'], why: 'low public address' },
  {
    url: 'https://hooks.public.example/hook',
    resolvesTo: [PUBLIC_V4, '2606:2800:220:1:248:1893:25c8:1946'],
    addresses: [PUBLIC_V4, '2606:2800:220:1:248:1893:25c8:1946'],
    why: 'name resolving to public A and AAAA',
  },
  {
    url: 'https://UPPER.Public.Example./in#section',
    resolvesTo: [PUBLIC_V4],
    addresses: [PUBLIC_V4],
    href: 'https://upper.public.example./in',
    why: 'upper case, trailing dot and fragment (stripped)',
  },
  { url: 'https://port.public.example:65535/', resolvesTo: [PUBLIC_V4], addresses: [PUBLIC_V4], why: 'highest port' },
];

/** A fake resolver answering each corpus name with its `resolvesTo`, and `fallback` for others. */
export function resolverFor(
  cases: ReadonlyArray<{ url: string; resolvesTo?: string[] }>,
  fallback: (host: string) => string[] = () => [],
): HostResolver & { calls: string[] } {
  const answers = new Map<string, string[]>();
  for (const item of cases) {
    if (!item.resolvesTo) continue;
    const host = new URL(item.url).hostname.toLowerCase().replace(/\.$/, '');
    answers.set(host, item.resolvesTo);
  }
  const calls: string[] = [];
  return {
    calls,
    async resolve(host: string): Promise<string[]> {
      calls.push(host);
      const key = host.toLowerCase().replace(/\.$/, '');
      return [...(answers.get(key) ?? fallback(key))];
    },
  };
}

/** The cases refused under a configuration (development admits `http`, 127.0.0.0/8 admits `loopback`). */
export function refusedWith(options: { allowHttp: boolean; loopbackAllowed: boolean }): ForbiddenUrl[] {
  return FORBIDDEN_URLS.filter((item) => !(options.allowHttp && item.reason === 'http') && !(options.loopbackAllowed && item.loopback));
}
