import { ConfigError, loadConfig } from './app-config';
import { Refused } from './settings';
import { hasHashTag, parseRedisUrl, withoutHashTag } from './redis-url';

const BASE = {
  DATABASE_URL: 'postgres://app@db.internal:5432/app',
  ADMIN_TOKEN: 'admin-token-0123456789',
  SECRETS_KEY: 'ab'.repeat(32),
  INGEST_TOKEN: 'ingest-token-0123456789',
};

function refusal(url: string): string {
  try {
    parseRedisUrl(url);
  } catch (error) {
    expect(error).toBeInstanceOf(Refused);
    return (error as Error).message;
  }
  throw new Error(`${url} was accepted`);
}

function configError(env: Record<string, string>): string {
  try {
    loadConfig({ ...BASE, ...env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('REDIS_URL', () => {
  it('names one node with redis:// or rediss://, kept as given', () => {
    expect(parseRedisUrl('redis://cache:6379/2')).toEqual({ kind: 'node', url: 'redis://cache:6379/2' });
    expect(parseRedisUrl('rediss://:pw@cache:6380')).toEqual({ kind: 'node', url: 'rediss://:pw@cache:6380' });
  });

  it('names a cluster by its seed nodes with redis+cluster://, the user and password for every node', () => {
    expect(parseRedisUrl('redis+cluster://10.0.0.1:7000,10.0.0.2:7001,cache-3')).toEqual({
      kind: 'cluster',
      seeds: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: 'cache-3', port: 6379 },
      ],
      tls: false,
      username: undefined,
      password: undefined,
    });
    expect(parseRedisUrl('rediss+cluster://app:p%40ss@[::1]:7000,node.internal:7001/')).toEqual({
      kind: 'cluster',
      seeds: [
        { host: '::1', port: 7000 },
        { host: 'node.internal', port: 7001 },
      ],
      tls: true,
      username: 'app',
      password: 'p@ss',
    });
    expect(parseRedisUrl('redis+cluster://:secret@a:1')).toMatchObject({ username: undefined, password: 'secret' });
  });

  it('refuses what is not a Redis URL, saying why (the boot error names REDIS_URL once) and never repeating a password', () => {
    expect(refusal('http://cache:6379')).toBe('must be a redis://, rediss://, redis+cluster:// or rediss+cluster:// URL');
    expect(refusal('redis+cluster://')).toMatch(/^a cluster URL names at least one node/);
    expect(refusal('redis+cluster://a:1,,b:2')).toMatch(/^cluster node 2 \(""\) is not host or host:port/);
    expect(refusal('redis+cluster://a:1,b:99999')).toBe('cluster node 2 has port 99999, outside 1-65535');
    expect(refusal('redis+cluster://a:1/3')).toMatch(/^a cluster URL takes no database number/);
    expect(refusal('redis+cluster://a:1?tls=true')).toMatch(/^a cluster URL takes no database number, path or query/);
    expect(refusal('redis+cluster://u:top%zzsecret@a:1')).not.toContain('secret');
  });

  it('is refused at boot with the reason; a cluster needs a hash-tagged QUEUE_PREFIX', () => {
    expect(configError({ REDIS_URL: 'redis+cluster://a:70000' })).toContain('REDIS_URL: cluster node 1 has port 70000');
    expect(configError({ REDIS_URL: 'http://cache:6379' })).toContain('REDIS_URL: must be a redis://');
    expect(configError({ REDIS_URL: 'redis+cluster://a:70000' })).not.toContain('REDIS_URL: REDIS_URL');
    expect(configError({ REDIS_URL: 'redis+cluster://a:7000', QUEUE_PREFIX: 'mss' })).toContain(
      'QUEUE_PREFIX: must carry a hash tag such as {mss} when REDIS_URL names a Redis Cluster',
    );
    expect(configError({ REDIS_URL: 'redis+cluster://a:7000', QUEUE_PREFIX: 'mss{}' })).toContain('QUEUE_PREFIX: must carry a hash tag');
    expect(loadConfig({ ...BASE, REDIS_URL: 'redis+cluster://a:7000', QUEUE_PREFIX: '{prod}' }).redis).toMatchObject({ kind: 'cluster' });
    expect(loadConfig({ ...BASE, REDIS_URL: 'redis://a:7000', QUEUE_PREFIX: 'mss' }).redis).toEqual({ kind: 'node', url: 'redis://a:7000' });
  });
});

describe('hash tags', () => {
  it('finds a non-empty {...} as Redis does, and takes it out for keys spread over the cluster', () => {
    expect(hasHashTag('{mss}')).toBe(true);
    expect(hasHashTag('{mss_test_1}tag-x')).toBe(true);
    expect(hasHashTag('mss')).toBe(false);
    expect(hasHashTag('{}mss')).toBe(false);
    expect(hasHashTag('{mss')).toBe(false);
    expect(withoutHashTag('{mss_test_1}tag-x')).toBe('mss_test_1tag-x');
  });
});
