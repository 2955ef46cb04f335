import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './app-config';

const SECRETS_KEY = 'ab'.repeat(32);
const BASE = {
  DATABASE_URL: 'postgres://app@db.internal:5432/app',
  REDIS_URL: 'redis://cache.internal:6379',
  ADMIN_TOKEN: 'admin-token-0123456789',
  SECRETS_KEY,
  // Required in production by a later issue; harmless where it is not read.
  INGEST_TOKEN: 'ingest-token-0123456789',
};

/** The variables a ConfigError names, one per "  - NAME: reason" line. */
function namedVariables(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toMatch(/^Invalid configuration:\n/);
    return [...new Set(message.split('\n').slice(1).map((line) => /^  - ([A-Z_]+): /.exec(line)?.[1] ?? `UNPARSED(${line})`))];
  }
  throw new Error('loadConfig did not throw');
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({ ...BASE });
    expect(config).toMatchObject({
      port: 3000,
      appEnv: 'production',
      isDevelopment: false,
      databaseUrl: BASE.DATABASE_URL,
      redisUrl: BASE.REDIS_URL,
      adminToken: BASE.ADMIN_TOKEN,
      publicBaseUrl: 'http://localhost:3000',
      processRole: 'all',
      queuePrefix: '{mss}',
      logLevel: 'info',
    });
    expect(config.secretsKey).toEqual(Buffer.from(SECRETS_KEY, 'hex'));
    expect(config.secretsKey).toHaveLength(32);
  });

  it('takes every variable that is given', () => {
    const config = loadConfig({
      ...BASE,
      PORT: '8080',
      APP_ENV: 'production',
      PUBLIC_BASE_URL: 'https://sync.example.com/',
      PROCESS_ROLE: 'worker',
      QUEUE_PREFIX: '{prod-eu}',
      LOG_LEVEL: 'warn',
      DATABASE_URL: 'postgresql://u:p@h/db',
      REDIS_URL: 'rediss://h:6380',
    });
    expect(config).toMatchObject({
      port: 8080,
      publicBaseUrl: 'https://sync.example.com',
      processRole: 'worker',
      queuePrefix: '{prod-eu}',
      logLevel: 'warn',
      databaseUrl: 'postgresql://u:p@h/db',
      redisUrl: 'rediss://h:6380',
    });
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ ...BASE, PORT: '', PROCESS_ROLE: '' })).toMatchObject({ port: 3000, processRole: 'all' });
  });

  it('reads process.env when given nothing', () => {
    const saved = { ...process.env };
    try {
      Object.assign(process.env, BASE, { PORT: '4321' });
      expect(loadConfig().port).toBe(4321);
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '80.5'],
    ['PORT', '-1'],
    ['APP_ENV', 'staging'],
    ['DATABASE_URL', 'mysql://db/app'],
    ['DATABASE_URL', 'db.internal:5432'],
    ['REDIS_URL', 'http://cache:6379'],
    ['ADMIN_TOKEN', 'short'],
    ['ADMIN_TOKEN', 'has a space in it 0123'],
    ['SECRETS_KEY', 'ab'.repeat(31)],
    ['SECRETS_KEY', 'zz'.repeat(32)],
    ['SECRETS_KEY', 'ab'.repeat(33)],
    ['PUBLIC_BASE_URL', 'sync.example.com'],
    ['PUBLIC_BASE_URL', 'ftp://sync.example.com'],
    ['PROCESS_ROLE', 'scheduler'],
    ['QUEUE_PREFIX', 'has space'],
    ['QUEUE_PREFIX', 'x'.repeat(65)],
    ['LOG_LEVEL', 'verbose'],
  ])('refuses %s=%j, naming only that variable', (name, value) => {
    expect(namedVariables({ ...BASE, [name]: value })).toEqual([name]);
  });

  it('reads SECRETS_KEY_FALLBACKS as a list of keys, and refuses an entry that is not a key without echoing it', () => {
    const next = 'cd'.repeat(32);
    const old = 'EF'.repeat(32);
    expect(loadConfig({ ...BASE }).secretsKeyFallbacks).toEqual([]);
    expect(loadConfig({ ...BASE, SECRETS_KEY_FALLBACKS: ` ${next}, ${old} ` }).secretsKeyFallbacks).toEqual([
      Buffer.from(next, 'hex'),
      Buffer.from(old, 'hex'),
    ]);
    expect(namedVariables({ ...BASE, SECRETS_KEY_FALLBACKS: `${next},not-a-key-but-secret` })).toEqual(['SECRETS_KEY_FALLBACKS']);
    expect(() => loadConfig({ ...BASE, SECRETS_KEY_FALLBACKS: `${next},not-a-key-but-secret` })).toThrow('entry 2 is not 64 hexadecimal characters');
    expect(() => loadConfig({ ...BASE, SECRETS_KEY_FALLBACKS: 'abc' })).not.toThrow(/abc/);
  });

  it('bounds attachment extraction: threads, time, thread memory, unzipped size, zip entries and image pixels', () => {
    expect(loadConfig({ ...BASE }).extraction).toEqual({
      threads: 2, timeoutMs: 60_000, threadMemoryMb: 512, maxUnzippedBytes: 64 * 1024 * 1024, maxZipEntries: 10_000, maxImagePixels: 40_000_000,
    });
    expect(loadConfig({
      ...BASE, EXTRACTION_THREADS: '4', EXTRACTION_TIMEOUT_MS: '120000', EXTRACTION_THREAD_MEMORY_MB: '256',
      EXTRACTION_MAX_UNZIPPED_BYTES: '1048576', EXTRACTION_MAX_ZIP_ENTRIES: '1', EXTRACTION_MAX_IMAGE_PIXELS: '1000000',
    }).extraction).toEqual({ threads: 4, timeoutMs: 120_000, threadMemoryMb: 256, maxUnzippedBytes: 1024 * 1024, maxZipEntries: 1, maxImagePixels: 1_000_000 });
    for (const [name, value] of [
      ['EXTRACTION_THREADS', '0'], ['EXTRACTION_THREADS', '33'], ['EXTRACTION_THREADS', 'two'],
      // Past 2 minutes a live extraction would be taken for a dead process's claim (closed at 5 minutes).
      ['EXTRACTION_TIMEOUT_MS', '999'], ['EXTRACTION_TIMEOUT_MS', '120001'],
      ['EXTRACTION_THREAD_MEMORY_MB', '63'], ['EXTRACTION_THREAD_MEMORY_MB', '8193'],
      ['EXTRACTION_MAX_UNZIPPED_BYTES', '1048575'], ['EXTRACTION_MAX_UNZIPPED_BYTES', String(1024 ** 3 + 1)],
      ['EXTRACTION_MAX_ZIP_ENTRIES', '0'], ['EXTRACTION_MAX_ZIP_ENTRIES', '1000001'],
      ['EXTRACTION_MAX_IMAGE_PIXELS', '999999'], ['EXTRACTION_MAX_IMAGE_PIXELS', '1000000001'],
    ]) {
      expect({ name, value, named: namedVariables({ ...BASE, [name]: value }) }).toEqual({ name, value, named: [name] });
    }
  });

  it('names every bad variable at once', () => {
    expect(namedVariables({ ...BASE, PORT: 'x', APP_ENV: 'test', LOG_LEVEL: 'loud' }).sort()).toEqual(['APP_ENV', 'LOG_LEVEL', 'PORT']);
  });

  it.each(['DATABASE_URL', 'REDIS_URL'])('requires %s in every environment', (name) => {
    const env: NodeJS.ProcessEnv = { ...BASE, [name]: undefined };
    expect(namedVariables(env)).toEqual([name]);
    expect(namedVariables({ ...env, APP_ENV: 'development', DEV_SECRETS_FILE: join(tmpdir(), 'never-written.json') })).toEqual([name]);
  });

  it.each(['ADMIN_TOKEN', 'SECRETS_KEY'])('requires %s in production, the default environment', (name) => {
    expect(namedVariables({ ...BASE, [name]: undefined })).toEqual([name]);
    expect(namedVariables({ ...BASE, [name]: '', APP_ENV: 'production' })).toEqual([name]);
  });

  it('says which variables are missing when the environment is empty', () => {
    expect(namedVariables({})).toEqual(expect.arrayContaining(['ADMIN_TOKEN', 'DATABASE_URL', 'REDIS_URL', 'SECRETS_KEY']));
  });

  describe('in development', () => {
    let dir: string;
    beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'mss-config-')); });
    afterEach(() => { rmSync(dir, { recursive: true, force: true }); });

    const devEnv = (file: string): NodeJS.ProcessEnv => ({
      APP_ENV: 'development',
      DATABASE_URL: BASE.DATABASE_URL,
      REDIS_URL: BASE.REDIS_URL,
      DEV_SECRETS_FILE: file,
    });

    it('generates the secrets once into DEV_SECRETS_FILE and reuses them', () => {
      const file = join(dir, 'nested', 'secrets.json');
      const first = loadConfig(devEnv(file));
      expect(first.isDevelopment).toBe(true);
      expect(existsSync(file)).toBe(true);
      const stored = JSON.parse(readFileSync(file, 'utf8'));
      expect(stored.secretsKey).toMatch(/^[0-9a-f]{64}$/);
      expect(stored.adminToken).toMatch(/^\S{16,}$/);
      expect(first.secretsKey).toEqual(Buffer.from(stored.secretsKey, 'hex'));
      expect(first.secretsKey).toHaveLength(32);
      expect(first.adminToken).toBe(stored.adminToken);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const written = readFileSync(file, 'utf8');

      const second = loadConfig(devEnv(file));
      expect(second.secretsKey).toEqual(first.secretsKey);
      expect(second.adminToken).toBe(first.adminToken);
      expect(readFileSync(file, 'utf8')).toBe(written);
    });

    it('generates different secrets for different files', () => {
      const a = loadConfig(devEnv(join(dir, 'a.json')));
      const b = loadConfig(devEnv(join(dir, 'b.json')));
      expect(a.secretsKey).not.toEqual(b.secretsKey);
      expect(a.adminToken).not.toBe(b.adminToken);
    });

    it('prefers the variables that are given over the file', () => {
      const file = join(dir, 'secrets.json');
      const generated = loadConfig(devEnv(file));
      const given = loadConfig({ ...devEnv(file), SECRETS_KEY, ADMIN_TOKEN: BASE.ADMIN_TOKEN });
      expect(given.secretsKey).toEqual(Buffer.from(SECRETS_KEY, 'hex'));
      expect(given.adminToken).toBe(BASE.ADMIN_TOKEN);
      const partly = loadConfig({ ...devEnv(file), SECRETS_KEY });
      expect(partly.secretsKey).toEqual(Buffer.from(SECRETS_KEY, 'hex'));
      expect(partly.adminToken).toBe(generated.adminToken);
    });

    it('writes no file when every secret is given', () => {
      const file = join(dir, 'unused.json');
      loadConfig({ ...devEnv(file), SECRETS_KEY, ADMIN_TOKEN: BASE.ADMIN_TOKEN, INGEST_TOKEN: BASE.INGEST_TOKEN });
      expect(existsSync(file)).toBe(false);
    });

    it('still validates the secrets that are given', () => {
      expect(namedVariables({ ...devEnv(join(dir, 's.json')), SECRETS_KEY: 'nothex' })).toEqual(['SECRETS_KEY']);
    });
  });
});
