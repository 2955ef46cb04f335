import { Global, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { UrlRefusedError } from '../common/errors';
import { loadConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { CachingHostResolver } from './caching-host-resolver';
import { OutboundHttpModule } from './outbound-http.module';
import { DnsHostResolver, HOST_RESOLVER, HostResolver, UrlPolicy } from './url-policy';

/** A resolver that answers from a table the test changes, counting lookups; `hold` keeps them waiting. */
class TableResolver implements HostResolver {
  readonly table = new Map<string, string[]>();
  lookups = 0;
  private held: Array<() => void> | undefined;

  hold(): void {
    this.held = [];
  }

  release(): void {
    const waiting = this.held ?? [];
    this.held = undefined;
    waiting.forEach((go) => go());
  }

  async resolve(host: string): Promise<string[]> {
    this.lookups += 1;
    if (this.held) await new Promise<void>((go) => this.held!.push(go));
    const answer = this.table.get(host);
    if (answer === undefined) throw Object.assign(new Error(`lookup of ${host} failed`), { code: 'ESERVFAIL' });
    return [...answer];
  }
}

function setUp(ttlMs = 30_000, maxNames?: number) {
  const table = new TableResolver();
  let now = 1_000_000;
  const cache = new CachingHostResolver(table, ttlMs, () => now, maxNames);
  return { table, cache, advance: (ms: number) => (now += ms) };
}

describe('CachingHostResolver', () => {
  it('looks a name up once within the time to live, and again after it', async () => {
    const { table, cache, advance } = setUp();
    table.table.set('hooks.example.com', ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
    expect(await cache.resolve('hooks.example.com')).toEqual(['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
    expect(await cache.resolve('hooks.example.com')).toEqual(['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
    expect(table.lookups).toBe(1);

    table.table.set('hooks.example.com', ['93.184.215.99']);
    advance(29_999);
    expect(await cache.resolve('hooks.example.com')).toEqual(['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
    advance(1);
    expect(await cache.resolve('hooks.example.com')).toEqual(['93.184.215.99']);
    expect(table.lookups).toBe(2);
  });

  it('makes one lookup for every attempt that asks while it runs', async () => {
    const { table, cache } = setUp();
    table.table.set('hooks.example.com', ['93.184.215.14']);
    table.hold();
    const answers = Promise.all(Array.from({ length: 50 }, () => cache.resolve('hooks.example.com')));
    table.release();
    expect(await answers).toEqual(Array.from({ length: 50 }, () => ['93.184.215.14']));
    expect(table.lookups).toBe(1);
  });

  it('does not remember a failure or an empty answer: the next attempt looks again', async () => {
    const { table, cache } = setUp();
    table.hold();
    const failed = Promise.allSettled([cache.resolve('hooks.example.com'), cache.resolve('hooks.example.com')]);
    table.release();
    expect((await failed).map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(table.lookups).toBe(1);

    table.table.set('hooks.example.com', []);
    expect(await cache.resolve('hooks.example.com')).toEqual([]);
    table.table.set('hooks.example.com', ['93.184.215.14']);
    expect(await cache.resolve('hooks.example.com')).toEqual(['93.184.215.14']);
    expect(table.lookups).toBe(3);
  });

  it("hands out copies: a caller changing its answer changes nobody else's", async () => {
    const { table, cache } = setUp();
    table.table.set('hooks.example.com', ['93.184.215.14']);
    (await cache.resolve('hooks.example.com')).push('10.0.0.1');
    expect(await cache.resolve('hooks.example.com')).toEqual(['93.184.215.14']);
  });

  it('forgets the name remembered longest ago once it holds its most', async () => {
    const { table, cache } = setUp(30_000, 2);
    for (const name of ['a.example.com', 'b.example.com', 'c.example.com']) table.table.set(name, ['93.184.215.14']);
    await cache.resolve('a.example.com');
    await cache.resolve('b.example.com');
    await cache.resolve('c.example.com');
    expect(table.lookups).toBe(3);
    await cache.resolve('c.example.com');
    await cache.resolve('b.example.com');
    expect(table.lookups).toBe(3);
    await cache.resolve('a.example.com');
    expect(table.lookups).toBe(4);
  });

  it('with a time to live of 0 looks the name up every time', async () => {
    const { table, cache } = setUp(0);
    table.table.set('hooks.example.com', ['93.184.215.14']);
    await cache.resolve('hooks.example.com');
    await cache.resolve('hooks.example.com');
    expect(table.lookups).toBe(2);
  });

  it('cannot take a request anywhere the policy refuses: a remembered answer is classified on every check', async () => {
    const { table, cache } = setUp();
    const policy = new UrlPolicy({ allowHttp: false, allowedCidrs: [], resolver: cache });
    table.table.set('hooks.example.com', ['93.184.215.14']);
    expect((await policy.check('https://hooks.example.com/in')).addresses).toEqual(['93.184.215.14']);
    table.table.set('rebind.example.com', ['10.0.0.7']);
    await expect(policy.check('https://rebind.example.com/in')).rejects.toBeInstanceOf(UrlRefusedError);
    await expect(policy.check('https://rebind.example.com/in')).rejects.toThrow(/private/);
    expect(table.lookups).toBe(2);
  });

  it('remembers what the system resolver answers for a name in /etc/hosts', async () => {
    const system = new DnsHostResolver();
    const cache = new CachingHostResolver(system, 30_000);
    const first = await cache.resolve('localhost');
    expect(first.length).toBeGreaterThan(0);
    expect(first.every((address) => address === '127.0.0.1' || address === '::1')).toBe(true);
    expect(await cache.resolve('localhost')).toEqual(first);
  });

  it('is the resolver the service runs with, remembering for OUTBOUND_DNS_CACHE_SECONDS', async () => {
    const resolverWith = async (env: Record<string, string>) => {
      const config = loadConfig({
        DATABASE_URL: 'postgres://app@db.internal:5432/app',
        REDIS_URL: 'redis://cache.internal:6379',
        ADMIN_TOKEN: 'admin-token-0123456789',
        SECRETS_KEY: 'ab'.repeat(32),
        INGEST_TOKEN: 'ingest-token-0123456789',
        ...env,
      });
      @Global()
      @Module({ providers: [{ provide: APP_CONFIG, useValue: config }], exports: [APP_CONFIG] })
      class TestConfigModule {}
      const moduleRef = await Test.createTestingModule({ imports: [TestConfigModule, OutboundHttpModule] }).compile();
      return moduleRef.get<HostResolver>(HOST_RESOLVER);
    };
    const resolver = await resolverWith({});
    expect(resolver).toBeInstanceOf(CachingHostResolver);
    expect((resolver as CachingHostResolver).ttlMs).toBe(30_000);
    expect(((await resolverWith({ OUTBOUND_DNS_CACHE_SECONDS: '0' })) as CachingHostResolver).ttlMs).toBe(0);
  });
});
