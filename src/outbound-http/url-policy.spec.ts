import { Test } from '@nestjs/testing';
import { UrlRefusedError } from '../common/errors';
import { ALLOWED_URLS, FORBIDDEN_URLS, ForbiddenReason, refusedWith, resolverFor } from '../../test/fixtures/forbidden-urls';
import {
  classify,
  describeRange,
  DnsHostResolver,
  HOST_RESOLVER,
  HostResolver,
  parseWebhookUrl,
  URL_POLICY_OPTIONS,
  UrlPolicy,
  UrlPolicyOptions,
} from './url-policy';

const PRODUCTION = { allowHttp: false, allowedCidrs: [] as string[] };
const DEVELOPMENT = { allowHttp: true, allowedCidrs: [] as string[] };
const LOOPBACK_ALLOWED = { allowHttp: true, allowedCidrs: ['127.0.0.0/8'] };

function policy(options: Partial<UrlPolicyOptions> = {}, resolver?: HostResolver) {
  const fake = resolverFor([...FORBIDDEN_URLS, ...ALLOWED_URLS]);
  return { policy: new UrlPolicy({ ...PRODUCTION, resolver: resolver ?? fake, ...options }), resolver: fake };
}

async function refusal(promise: Promise<unknown>): Promise<UrlRefusedError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(UrlRefusedError);
    const refused = error as UrlRefusedError;
    expect(refused.code).toBe('URL_REFUSED');
    expect(refused.field).toBe('url');
    return refused;
  }
  throw new Error('expected the URL to be refused, but it was allowed');
}

const REASON_MESSAGES: Record<ForbiddenReason, RegExp> = {
  syntax: /is required|not a valid absolute URL|longer than 2048|spaces or control characters|port 0|not a valid host name/,
  scheme: /scheme \S+ is not allowed; webhook URLs must use https/,
  http: /must use https \(http is accepted only when the service runs in development\)/,
  credentials: /must not contain credentials/,
  name: /is a local-only name .*; webhook URLs must be public/,
  address: /^url (host|resolves to) .*; webhook URLs must be public$/,
  unresolvable: /does not resolve to any address/,
};

describe('forbidden URL corpus', () => {
  it('holds at least 70 forms, each URL once', () => {
    expect(FORBIDDEN_URLS.length).toBeGreaterThanOrEqual(70);
    expect(new Set(FORBIDDEN_URLS.map((item) => item.url)).size).toBe(FORBIDDEN_URLS.length);
  });

  describe('production policy (https only, no allowlist): every form is refused', () => {
    const { policy: production } = policy(PRODUCTION);
    it.each(FORBIDDEN_URLS.map((item) => [item.why, item]))('%s', async (_why, item) => {
      await refusal(production.check(item.url));
    });
  });

  describe('development policy (http allowed): refused for the stated reason, except plain http', () => {
    it.each(FORBIDDEN_URLS.map((item) => [`${item.reason}: ${item.why}`, item]))('%s', async (_why, item) => {
      const { policy: development, resolver } = policy(DEVELOPMENT);
      if (item.reason === 'http') {
        await expect(development.check(item.url)).resolves.toMatchObject({ addresses: expect.any(Array) });
        return;
      }
      const error = await refusal(development.check(item.url));
      expect(error.message).toMatch(REASON_MESSAGES[item.reason]);
      if (item.range) expect(error.message).toContain(describeRange(item.range));
      // The resolver is asked only about names that pass every other rule.
      expect(resolver.calls.length).toBe(item.resolvesTo ? 1 : 0);
    });
  });

  describe('allowlist 127.0.0.0/8: only the cases marked loopback are admitted', () => {
    const refused = new Set(refusedWith({ allowHttp: true, loopbackAllowed: true }));
    it.each(FORBIDDEN_URLS.map((item) => [item.why, item]))('%s', async (_why, item) => {
      const { policy: withLoopback } = policy(LOOPBACK_ALLOWED);
      if (refused.has(item)) {
        await refusal(withLoopback.check(item.url));
      } else {
        await expect(withLoopback.check(item.url)).resolves.toMatchObject({ addresses: expect.any(Array) });
      }
    });
  });

  it('refusedWith picks the right subsets', () => {
    expect(refusedWith({ allowHttp: false, loopbackAllowed: false })).toHaveLength(FORBIDDEN_URLS.length);
    expect(refusedWith({ allowHttp: true, loopbackAllowed: false }).some((item) => item.reason === 'http')).toBe(false);
    expect(refusedWith({ allowHttp: false, loopbackAllowed: true }).some((item) => item.loopback)).toBe(false);
  });
});

describe('allowed URLs', () => {
  it.each(ALLOWED_URLS.map((item) => [item.why, item]))('%s', async (_why, item) => {
    const { policy: production } = policy(PRODUCTION);
    const checked = await production.check(item.url);
    expect(checked.addresses).toEqual(item.addresses);
    expect(checked.url.href).toBe(item.href ?? item.url);
    expect(checked.url.hash).toBe('');
  });

  it('accepts http only when allowHttp is true', async () => {
    await refusal(policy(PRODUCTION).policy.check('http://93.184.216.34/hook'));
    const checked = await policy(DEVELOPMENT).policy.check('http://93.184.216.34/hook');
    expect(checked).toMatchObject({ host: '93.184.216.34', port: 80, hostKind: 'ipv4', addresses: ['93.184.216.34'] });
  });

  it('accepts 127.0.0.1 only when the allowlist contains 127.0.0.0/8', async () => {
    const error = await refusal(policy(DEVELOPMENT).policy.check('http://127.0.0.1:4000/hook'));
    expect(error.message).toBe('url host 127.0.0.1, a loopback address; webhook URLs must be public');
    await expect(policy(LOOPBACK_ALLOWED).policy.check('http://127.0.0.1:4000/hook')).resolves.toMatchObject({
      host: '127.0.0.1',
      port: 4000,
      addresses: ['127.0.0.1'],
    });
    await expect(policy({ allowHttp: true, allowedCidrs: ['127.0.0.1/32'] }).policy.check('http://127.0.0.2/')).rejects.toThrow(UrlRefusedError);
  });

  it('applies the allowlist to IPv4-mapped forms but not through translators', () => {
    const cidrs = ['127.0.0.0/8'];
    expect(classify('::ffff:127.0.0.1', cidrs)).toMatchObject({ allowed: true, allowlisted: true });
    expect(classify('::7f00:1', cidrs).allowed).toBe(false);
    expect(classify('64:ff9b::7f00:1', cidrs).allowed).toBe(false);
    expect(classify('2002:7f00:1::1', cidrs).allowed).toBe(false);
    expect(classify('::1', cidrs).allowed).toBe(false);
    expect(classify('fd00::1', ['fd00::/8'])).toMatchObject({ allowed: true, allowlisted: true, range: 'uniqueLocal' });
    expect(classify('10.0.0.1', ['fd00::/8']).allowed).toBe(false);
  });

  it('refuses a malformed allowlist entry at construction', () => {
    expect(() => policy({ allowedCidrs: ['not-a-cidr'] })).toThrow(/not a CIDR/);
    expect(() => policy({ allowedCidrs: [' ', ''] })).not.toThrow();
  });
});

describe('parseWebhookUrl', () => {
  it.each([
    ['https://2130706433/', '127.0.0.1'],
    ['https://0x7f.1/', '127.0.0.1'],
    ['https://017700000001/', '127.0.0.1'],
    ['https://127.1/', '127.0.0.1'],
    ['https://0/', '0.0.0.0'],
    ['https://127.0.0.1./', '127.0.0.1'],
    ['https://0xa9fea9fe/', '169.254.169.254'],
    ['https://[::127.0.0.1]/', '::7f00:1'],
    ['https://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
    ['https://[64:ff9b::10.0.0.1]/', '64:ff9b::a00:1'],
    ['https://Example.COM./x', 'example.com'],
  ])('normalizes %s to host %s', (raw, host) => {
    expect(parseWebhookUrl(raw, { allowHttp: false }).host).toBe(host);
  });

  it('returns the default port by scheme and strips the fragment', () => {
    expect(parseWebhookUrl('https://example.com/a#b')).toMatchObject({ host: 'example.com', port: 443, hostKind: 'name' });
    expect(parseWebhookUrl('https://example.com/a#b').url.href).toBe('https://example.com/a');
    expect(parseWebhookUrl('http://[2606:4700::1111]:8080/', { allowHttp: true })).toMatchObject({
      host: '2606:4700::1111',
      port: 8080,
      hostKind: 'ipv6',
    });
  });

  it('accepts exactly 2048 characters and refuses 2049', () => {
    const base = 'https://example.com/';
    expect(() => parseWebhookUrl(base + 'a'.repeat(2048 - base.length))).not.toThrow();
    expect(() => parseWebhookUrl(base + 'a'.repeat(2049 - base.length))).toThrow(UrlRefusedError);
  });

  it('refuses non-strings', () => {
    expect(() => parseWebhookUrl(undefined as unknown as string)).toThrow(UrlRefusedError);
    expect(() => parseWebhookUrl(42 as unknown as string)).toThrow(UrlRefusedError);
  });
});

describe('classify', () => {
  it.each([
    ['93.184.216.34', true, 'unicast'],
    ['2606:4700::1111', true, 'unicast'],
    ['127.0.0.1', false, 'loopback'],
    ['10.0.0.5', false, 'private'],
    ['100.64.0.1', false, 'carrierGradeNat'],
    ['169.254.169.254', false, 'linkLocal'],
    ['0.0.0.0', false, 'unspecified'],
    ['255.255.255.255', false, 'broadcast'],
    ['::ffff:10.0.0.1', false, 'private'],
    ['::ffff:8.8.8.8', true, 'unicast'],
    ['64:ff9b::808:808', true, 'unicast'],
    ['64:ff9b::a00:1', false, 'private'],
    ['64:ff9b:1::808:808', false, 'nat64LocalUse'],
    ['2002:808:808::', true, 'unicast'],
    ['2002:a00:1::', false, 'private'],
    ['::808:808', false, 'ipv4Compatible'],
    ['2001::1', false, 'teredo'],
    ['4000::1', false, 'notGlobalUnicast'],
    ['fe80::1%eth0', false, 'linkLocal'],
    ['[::1]', false, 'loopback'],
    ['127.1', false, 'invalid'],
    ['0x7f.0.0.1', false, 'invalid'],
    ['010.0.0.1', false, 'invalid'],
    ['example.com', false, 'invalid'],
    ['', false, 'invalid'],
  ])('%s -> allowed %s (%s)', (address, allowed, range) => {
    expect(classify(address)).toMatchObject({ allowed, range });
  });

  it('names the embedded IPv4 address', () => {
    expect(classify('::ffff:7f00:1')).toMatchObject({ address: '::ffff:7f00:1', embeddedIpv4: '127.0.0.1', via: 'ipv4Mapped' });
    expect(classify('2002:c0a8:101::1')).toMatchObject({ embeddedIpv4: '192.168.1.1', via: '6to4' });
  });
});

describe('UrlPolicy.check with a resolver', () => {
  const fixed = (answer: string[] | (() => Promise<string[]>)): HostResolver & { calls: string[] } => {
    const calls: string[] = [];
    return {
      calls,
      resolve: async (host) => {
        calls.push(host);
        return typeof answer === 'function' ? answer() : answer;
      },
    };
  };

  it('names the refused address and its range', async () => {
    const error = await refusal(policy({}, fixed(['93.184.216.34', '10.0.0.5'])).policy.check('https://hooks.example.com/'));
    expect(error.message).toBe('url resolves to 10.0.0.5, a private (RFC 1918) address; webhook URLs must be public');
    const mapped = await refusal(policy({}, fixed(['::ffff:a00:5'])).policy.check('https://hooks.example.com/'));
    expect(mapped.message).toBe('url resolves to ::ffff:a00:5 (IPv4-mapped 10.0.0.5), a private (RFC 1918) address; webhook URLs must be public');
  });

  it('keeps the resolver order, canonicalizes and removes duplicates', async () => {
    const resolver = fixed(['2606:4700:0:0::1111', '93.184.216.34', '93.184.216.34', '2606:4700::1111']);
    const checked = await policy({}, resolver).policy.check('https://Hooks.Example.com./x');
    expect(checked.addresses).toEqual(['2606:4700::1111', '93.184.216.34']);
    expect(resolver.calls).toEqual(['hooks.example.com']);
  });

  it('does not resolve IP literals', async () => {
    const resolver = fixed(['10.0.0.1']);
    await expect(policy({}, resolver).policy.check('https://8.8.8.8/')).resolves.toMatchObject({ addresses: ['8.8.8.8'] });
    expect(resolver.calls).toEqual([]);
  });

  it('refuses when the resolver fails or answers garbage', async () => {
    const failing = fixed(async () => {
      throw Object.assign(new Error('temporary failure'), { code: 'EAI_AGAIN' });
    });
    const error = await refusal(policy({}, failing).policy.check('https://hooks.example.com/'));
    expect(error.message).toBe('url host hooks.example.com could not be resolved (EAI_AGAIN)');
    const garbage = await refusal(policy({}, fixed(['not-an-address'])).policy.check('https://hooks.example.com/'));
    expect(garbage.message).toContain('not a valid IP address');
    await refusal(policy({}, fixed(undefined as unknown as string[])).policy.check('https://hooks.example.com/'));
  });

  it('re-checks on every call: a name that turns private later is refused (rebinding)', async () => {
    let answer = ['93.184.216.34'];
    const { policy: p } = policy(
      {},
      fixed(async () => answer),
    );
    await expect(p.check('https://rebind.example.com/')).resolves.toMatchObject({ addresses: ['93.184.216.34'] });
    answer = ['169.254.169.254'];
    await refusal(p.check('https://rebind.example.com/'));
  });
});

describe('DnsHostResolver', () => {
  it('returns an IP literal as is without any network', async () => {
    await expect(new DnsHostResolver().resolve('93.184.216.34')).resolves.toEqual(['93.184.216.34']);
  });

  it('honours the hosts file like the HTTP client does', async () => {
    const addresses = await new DnsHostResolver().resolve('localhost');
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.every((address) => classify(address).range === 'loopback')).toBe(true);
  });
});

describe('dependency injection', () => {
  it('builds UrlPolicy from URL_POLICY_OPTIONS and HOST_RESOLVER', async () => {
    const fake = resolverFor(ALLOWED_URLS);
    const moduleRef = await Test.createTestingModule({
      providers: [
        { provide: HOST_RESOLVER, useValue: fake },
        {
          provide: URL_POLICY_OPTIONS,
          inject: [HOST_RESOLVER],
          useFactory: (resolver: HostResolver): UrlPolicyOptions => ({ allowHttp: false, allowedCidrs: [], resolver }),
        },
        UrlPolicy,
      ],
    }).compile();
    const urlPolicy = moduleRef.get(UrlPolicy);
    await expect(urlPolicy.check('https://hooks.public.example/hook')).resolves.toMatchObject({ host: 'hooks.public.example' });
    expect(fake.calls).toEqual(['hooks.public.example']);
  });
});
