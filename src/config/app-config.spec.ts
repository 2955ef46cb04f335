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
    return [
      ...new Set(
        message
          .split('\n')
          .slice(1)
          .map((line) => /^ {2}- ([A-Z_]+): /.exec(line)?.[1] ?? `UNPARSED(${line})`),
      ),
    ];
  }
  throw new Error('loadConfig did not throw');
}

describe('loadConfig', () => {
  it("takes Twilio's API by default, a compatible provider's https API when given, http only in development", () => {
    expect(loadConfig({ ...BASE }).twilio).toEqual({ apiBaseUrl: 'https://api.twilio.com' });
    expect(loadConfig({ ...BASE, TWILIO_API_BASE_URL: 'https://sms.example.com/twilio/' }).twilio).toEqual({ apiBaseUrl: 'https://sms.example.com/twilio' });
    expect(namedVariables({ ...BASE, TWILIO_API_BASE_URL: 'http://127.0.0.1:9000' })).toEqual(['TWILIO_API_BASE_URL']);
    expect(namedVariables({ ...BASE, TWILIO_API_BASE_URL: 'https://api.example.com/?x=1' })).toEqual(['TWILIO_API_BASE_URL']);
    expect(loadConfig({ ...BASE, APP_ENV: 'development', TWILIO_API_BASE_URL: 'http://127.0.0.1:9000' }).twilio.apiBaseUrl).toBe('http://127.0.0.1:9000');
  });

  it('applies the documented defaults', () => {
    const config = loadConfig({ ...BASE });
    expect(config).toMatchObject({
      port: 3000,
      appEnv: 'production',
      isDevelopment: false,
      databaseUrl: BASE.DATABASE_URL,
      redisUrl: BASE.REDIS_URL,
      adminToken: BASE.ADMIN_TOKEN,
      publicBaseUrl: 'http://127.0.0.1:3000',
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

  it('caps MCP batches at 50 messages, 4 running at once, unless told otherwise', () => {
    expect(loadConfig({ ...BASE }).mcp).toMatchObject({ maxBatch: 50, batchConcurrency: 4 });
    expect(loadConfig({ ...BASE, MCP_MAX_BATCH: '200', MCP_BATCH_CONCURRENCY: '1' }).mcp).toMatchObject({ maxBatch: 200, batchConcurrency: 1 });
  });

  it('limits each API key and client IP by default, and takes other limits or 0 for none', () => {
    const config = loadConfig({ ...BASE });
    expect(config.mcp.keyConcurrency).toBe(8);
    expect(config.rateLimits).toEqual({
      mcp: { limit: 600, windowSeconds: 60, variable: 'MCP_RATE_LIMIT' },
      pixel: { limit: 600, windowSeconds: 60, variable: 'PIXEL_RATE_LIMIT' },
      attachment: { limit: 120, windowSeconds: 60, variable: 'ATTACHMENT_RATE_LIMIT' },
      webhookKeys: { limit: 120, windowSeconds: 60, variable: 'WEBHOOK_KEYS_RATE_LIMIT' },
      oauthAuthorize: { limit: 60, windowSeconds: 60, variable: 'OAUTH_AUTHORIZE_RATE_LIMIT' },
      oauthToken: { limit: 600, windowSeconds: 60, variable: 'OAUTH_TOKEN_RATE_LIMIT' },
      oauthRegister: { limit: 60, windowSeconds: 60, variable: 'OAUTH_REGISTER_RATE_LIMIT' },
      signInAddress: { limit: 5, windowSeconds: 900, variable: 'SIGN_IN_RATE_LIMIT_PER_ADDRESS' },
      signInIp: { limit: 20, windowSeconds: 900, variable: 'SIGN_IN_RATE_LIMIT_PER_IP' },
      callbackVerifications: { limit: 20, windowSeconds: 3600, variable: 'EVENT_SUBSCRIPTION_VERIFICATIONS_LIMIT' },
      webActions: { limit: 120, windowSeconds: 60, variable: 'WEB_ACTION_RATE_LIMIT' },
    });
    const given = loadConfig({
      ...BASE,
      MCP_KEY_CONCURRENCY: '64',
      MCP_RATE_LIMIT: '0',
      MCP_RATE_WINDOW_SECONDS: '1',
      PIXEL_RATE_LIMIT: '5',
      ATTACHMENT_RATE_LIMIT: '0',
      WEBHOOK_KEYS_RATE_LIMIT: '7',
      OAUTH_TOKEN_RATE_LIMIT: '0',
      OAUTH_REGISTER_RATE_LIMIT: '5000',
      PUBLIC_RATE_WINDOW_SECONDS: '10',
      WEB_ACTION_RATE_LIMIT: '0',
      WEB_ACTION_RATE_WINDOW_SECONDS: '5',
      EVENT_SUBSCRIPTION_VERIFICATIONS_LIMIT: '3',
      EVENT_SUBSCRIPTION_VERIFICATIONS_WINDOW_SECONDS: '60',
    });
    expect(given.mcp.keyConcurrency).toBe(64);
    expect(given.rateLimits).toEqual({
      mcp: { limit: 0, windowSeconds: 1, variable: 'MCP_RATE_LIMIT' },
      pixel: { limit: 5, windowSeconds: 10, variable: 'PIXEL_RATE_LIMIT' },
      attachment: { limit: 0, windowSeconds: 10, variable: 'ATTACHMENT_RATE_LIMIT' },
      webhookKeys: { limit: 7, windowSeconds: 10, variable: 'WEBHOOK_KEYS_RATE_LIMIT' },
      oauthAuthorize: { limit: 60, windowSeconds: 10, variable: 'OAUTH_AUTHORIZE_RATE_LIMIT' },
      oauthToken: { limit: 0, windowSeconds: 10, variable: 'OAUTH_TOKEN_RATE_LIMIT' },
      oauthRegister: { limit: 5000, windowSeconds: 10, variable: 'OAUTH_REGISTER_RATE_LIMIT' },
      signInAddress: { limit: 5, windowSeconds: 900, variable: 'SIGN_IN_RATE_LIMIT_PER_ADDRESS' },
      signInIp: { limit: 20, windowSeconds: 900, variable: 'SIGN_IN_RATE_LIMIT_PER_IP' },
      callbackVerifications: { limit: 3, windowSeconds: 60, variable: 'EVENT_SUBSCRIPTION_VERIFICATIONS_LIMIT' },
      webActions: { limit: 0, windowSeconds: 5, variable: 'WEB_ACTION_RATE_LIMIT' },
    });
  });

  it('times web sessions out after 12 h idle and 7 days in all by default, and validates the timeouts', () => {
    expect(loadConfig({ ...BASE }).web).toEqual({ sessionIdleTimeoutMinutes: 720, sessionAbsoluteTimeoutHours: 168 });
    expect(loadConfig({ ...BASE, SESSION_IDLE_TIMEOUT_MINUTES: '30', SESSION_ABSOLUTE_TIMEOUT_HOURS: '8' }).web).toEqual({
      sessionIdleTimeoutMinutes: 30,
      sessionAbsoluteTimeoutHours: 8,
    });
    expect(namedVariables({ ...BASE, SESSION_IDLE_TIMEOUT_MINUTES: '0', SESSION_ABSOLUTE_TIMEOUT_HOURS: 'week' })).toEqual([
      'SESSION_IDLE_TIMEOUT_MINUTES',
      'SESSION_ABSOLUTE_TIMEOUT_HOURS',
    ]);
  });

  it('refuses an MCP rate limit below the batch cap, since a full batch could never run', () => {
    expect(namedVariables({ ...BASE, MCP_RATE_LIMIT: '20' })).toEqual(['MCP_RATE_LIMIT']);
    expect(loadConfig({ ...BASE, MCP_RATE_LIMIT: '20', MCP_MAX_BATCH: '20' }).rateLimits.mcp.limit).toBe(20);
  });

  it.each([
    ['', false],
    ['false', false],
    ['1', 1],
    ['2', 2],
    ['loopback', ['loopback']],
    ['10.0.0.0/8, 192.168.1.7,loopback', ['10.0.0.0/8', '192.168.1.7', 'loopback']],
    ['fd00::/8', ['fd00::/8']],
  ] as const)('reads TRUST_PROXY=%j as %j', (value, expected) => {
    expect(loadConfig({ ...BASE, TRUST_PROXY: value }).trustProxy).toEqual(expected);
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
    ['METRICS_TOKEN', 'short'],
    ['METRICS_PORT', '70000'],
    ['METRICS_PORT', 'metrics'],
    ['SECRETS_KEY', 'ab'.repeat(31)],
    ['SECRETS_KEY', 'zz'.repeat(32)],
    ['SECRETS_KEY', 'ab'.repeat(33)],
    ['PUBLIC_BASE_URL', 'sync.example.com'],
    ['PUBLIC_BASE_URL', 'ftp://sync.example.com'],
    ['PROCESS_ROLE', 'scheduler'],
    ['QUEUE_PREFIX', 'has space'],
    ['QUEUE_PREFIX', 'x'.repeat(65)],
    ['LOG_LEVEL', 'verbose'],
    ['HTTP_REQUEST_TIMEOUT_MS', '999'],
    ['HTTP_REQUEST_TIMEOUT_MS', '1h'],
    ['HTTP_HEADERS_TIMEOUT_MS', '0'],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '3600001'],
    ['HTTP_BODY_BUDGET_BYTES', String(32 * 1024 * 1024 - 1)],
    ['HTTP_BODY_BUDGET_BYTES', '128MB'],
    ['HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP', String(64 * 1024 - 1)],
    ['HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP', String(4 * 1024 * 1024 + 1)],
    ['HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP', '512KB'],
    ['MCP_MAX_BATCH', '0'],
    ['MCP_MAX_BATCH', '1001'],
    ['MCP_BATCH_CONCURRENCY', '0'],
    ['MCP_BATCH_CONCURRENCY', '65'],
    ['MCP_KEY_CONCURRENCY', '0'],
    ['MCP_RATE_LIMIT', '-1'],
    ['MCP_RATE_LIMIT', '49'],
    ['MCP_RATE_WINDOW_SECONDS', '0'],
    ['PIXEL_RATE_LIMIT', 'lots'],
    ['ATTACHMENT_RATE_LIMIT', '1.5'],
    ['OAUTH_TOKEN_RATE_LIMIT', '-1'],
    ['OAUTH_REGISTER_RATE_LIMIT', 'many'],
    ['PUBLIC_RATE_WINDOW_SECONDS', '0'],
    ['TRUST_PROXY', 'true'],
    ['TRUST_PROXY', '0'],
    ['TRUST_PROXY', '11'],
    ['TRUST_PROXY', '10.0.0.0/8, proxy.internal'],
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
      threads: 2,
      orgMaxThreads: 1,
      timeoutMs: 60_000,
      threadMemoryMb: 512,
      maxUnzippedBytes: 64 * 1024 * 1024,
      maxZipEntries: 10_000,
      maxImagePixels: 40_000_000,
    });
    expect(
      loadConfig({
        ...BASE,
        EXTRACTION_THREADS: '4',
        EXTRACTION_TIMEOUT_MS: '120000',
        EXTRACTION_THREAD_MEMORY_MB: '256',
        EXTRACTION_MAX_UNZIPPED_BYTES: '1048576',
        EXTRACTION_MAX_ZIP_ENTRIES: '1',
        EXTRACTION_MAX_IMAGE_PIXELS: '1000000',
      }).extraction,
    ).toEqual({
      threads: 4,
      orgMaxThreads: 3,
      timeoutMs: 120_000,
      threadMemoryMb: 256,
      maxUnzippedBytes: 1024 * 1024,
      maxZipEntries: 1,
      maxImagePixels: 1_000_000,
    });
    for (const [name, value] of [
      ['EXTRACTION_THREADS', '0'],
      ['EXTRACTION_THREADS', '33'],
      ['EXTRACTION_THREADS', 'two'],
      // Past 2 minutes a live extraction would be taken for a dead process's claim (closed at 5 minutes).
      ['EXTRACTION_TIMEOUT_MS', '999'],
      ['EXTRACTION_TIMEOUT_MS', '120001'],
      ['EXTRACTION_THREAD_MEMORY_MB', '63'],
      ['EXTRACTION_THREAD_MEMORY_MB', '8193'],
      ['EXTRACTION_MAX_UNZIPPED_BYTES', '1048575'],
      ['EXTRACTION_MAX_UNZIPPED_BYTES', String(1024 ** 3 + 1)],
      ['EXTRACTION_MAX_ZIP_ENTRIES', '0'],
      ['EXTRACTION_MAX_ZIP_ENTRIES', '1000001'],
      ['EXTRACTION_MAX_IMAGE_PIXELS', '999999'],
      ['EXTRACTION_MAX_IMAGE_PIXELS', '1000000001'],
      ['EXTRACTION_ORG_MAX_THREADS', '0'],
      ['EXTRACTION_ORG_MAX_THREADS', 'all'],
      // More than the threads there are: one org could hold them all.
      ['EXTRACTION_ORG_MAX_THREADS', '3'],
    ]) {
      expect({ name, value, named: namedVariables({ ...BASE, [name]: value }) }).toEqual({ name, value, named: [name] });
    }
  });

  it('lets one org hold all but one extraction thread of a process unless told otherwise, never more than there are', () => {
    expect(loadConfig({ ...BASE, EXTRACTION_THREADS: '1' }).extraction.orgMaxThreads).toBe(1);
    expect(loadConfig({ ...BASE, EXTRACTION_THREADS: '8', EXTRACTION_ORG_MAX_THREADS: '2' }).extraction.orgMaxThreads).toBe(2);
    expect(loadConfig({ ...BASE, EXTRACTION_THREADS: '8', EXTRACTION_ORG_MAX_THREADS: '8' }).extraction.orgMaxThreads).toBe(8);
    expect(() => loadConfig({ ...BASE, EXTRACTION_THREADS: '4', EXTRACTION_ORG_MAX_THREADS: '5' })).toThrow(
      'EXTRACTION_ORG_MAX_THREADS: must not exceed EXTRACTION_THREADS (4)',
    );
  });

  describe('HTTP server limits', () => {
    it('defaults to limits suited to a public service', () => {
      expect(loadConfig({ ...BASE }).http).toEqual({
        requestTimeoutMs: 60_000,
        headersTimeoutMs: 10_000,
        keepAliveTimeoutMs: 5_000,
        bodyBudgetBytes: 128 * 1024 * 1024,
        unauthenticatedBodyBytesPerIp: 512 * 1024,
      });
    });

    it('takes the values given', () => {
      const config = loadConfig({
        ...BASE,
        HTTP_REQUEST_TIMEOUT_MS: '120000',
        HTTP_HEADERS_TIMEOUT_MS: '20000',
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000',
        HTTP_BODY_BUDGET_BYTES: String(512 * 1024 * 1024),
        HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP: String(1024 * 1024),
      });
      expect(config.http).toEqual({
        requestTimeoutMs: 120_000,
        headersTimeoutMs: 20_000,
        keepAliveTimeoutMs: 65_000,
        bodyBudgetBytes: 512 * 1024 * 1024,
        unauthenticatedBodyBytesPerIp: 1024 * 1024,
      });
    });

    it('refuses a headers timeout longer than the request timeout', () => {
      expect(namedVariables({ ...BASE, HTTP_REQUEST_TIMEOUT_MS: '5000', HTTP_HEADERS_TIMEOUT_MS: '6000' })).toEqual(['HTTP_HEADERS_TIMEOUT_MS']);
      expect(loadConfig({ ...BASE, HTTP_REQUEST_TIMEOUT_MS: '5000', HTTP_HEADERS_TIMEOUT_MS: '5000' }).http.headersTimeoutMs).toBe(5000);
    });

    it('refuses a body budget smaller than the largest MCP body', () => {
      const env = { ...BASE, MCP_MAX_BODY_BYTES: String(64 * 1024 * 1024), HTTP_BODY_BUDGET_BYTES: String(48 * 1024 * 1024) };
      expect(namedVariables(env)).toEqual(['HTTP_BODY_BUDGET_BYTES']);
      expect(loadConfig({ ...env, HTTP_BODY_BUDGET_BYTES: String(64 * 1024 * 1024) }).http.bodyBudgetBytes).toBe(64 * 1024 * 1024);
    });
  });

  it('remembers host names for OUTBOUND_DNS_CACHE_SECONDS, 30 s unless told, 0 to 3600', () => {
    expect(loadConfig({ ...BASE }).outboundHttp.dnsCacheSeconds).toBe(30);
    expect(loadConfig({ ...BASE, OUTBOUND_DNS_CACHE_SECONDS: '0' }).outboundHttp.dnsCacheSeconds).toBe(0);
    expect(namedVariables({ ...BASE, OUTBOUND_DNS_CACHE_SECONDS: '-1' })).toEqual(['OUTBOUND_DNS_CACHE_SECONDS']);
    expect(namedVariables({ ...BASE, OUTBOUND_DNS_CACHE_SECONDS: '3601' })).toEqual(['OUTBOUND_DNS_CACHE_SECONDS']);
  });

  it('allows loopback webhook receivers in development only, unless WEBHOOK_ALLOWED_CIDRS says otherwise', () => {
    expect(loadConfig({ ...BASE }).webhooks.allowedCidrs).toEqual([]);
    expect(loadConfig({ ...BASE, APP_ENV: 'development' }).webhooks.allowedCidrs).toEqual(['127.0.0.0/8', '::1/128']);
    expect(loadConfig({ ...BASE, APP_ENV: 'development', WEBHOOK_ALLOWED_CIDRS: 'none' }).webhooks.allowedCidrs).toEqual([]);
    expect(loadConfig({ ...BASE, APP_ENV: 'development', WEBHOOK_ALLOWED_CIDRS: '10.1.0.0/16' }).webhooks.allowedCidrs).toEqual(['10.1.0.0/16']);
    expect(loadConfig({ ...BASE, WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' }).webhooks.allowedCidrs).toEqual(['127.0.0.0/8']);
    expect(namedVariables({ ...BASE, WEBHOOK_ALLOWED_CIDRS: 'loopback' })).toEqual(['WEBHOOK_ALLOWED_CIDRS']);
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

  describe('DELIVERY_LOG_RETENTION_DAYS', () => {
    it('keeps 30 days by default; 0 keeps the log forever', () => {
      expect(loadConfig({ ...BASE }).delivery.logRetentionDays).toBe(30);
      expect(loadConfig({ ...BASE, DELIVERY_LOG_RETENTION_DAYS: '0' }).delivery.logRetentionDays).toBe(0);
      expect(loadConfig({ ...BASE, DELIVERY_LOG_RETENTION_DAYS: '3650' }).delivery.logRetentionDays).toBe(3650);
    });

    it.each(['-1', '3651', '1.5', '30d', 'forever'])('refuses %j', (value) => {
      expect(namedVariables({ ...BASE, DELIVERY_LOG_RETENTION_DAYS: value })).toEqual(['DELIVERY_LOG_RETENTION_DAYS']);
    });
  });

  describe('ATTACHMENT_QUOTA_BYTES_PER_ORG', () => {
    it('is 5 GiB by default; 0 stores no attachment bytes', () => {
      expect(loadConfig({ ...BASE }).attachments.quotaBytesPerOrg).toBe(5 * 1024 ** 3);
      expect(loadConfig({ ...BASE, ATTACHMENT_QUOTA_BYTES_PER_ORG: '0' }).attachments.quotaBytesPerOrg).toBe(0);
      expect(loadConfig({ ...BASE, ATTACHMENT_QUOTA_BYTES_PER_ORG: '1099511627776' }).attachments.quotaBytesPerOrg).toBe(2 ** 40);
    });

    it.each(['-1', '5GB', '1.5', String(2 ** 50 + 1)])('refuses %j', (value) => {
      expect(namedVariables({ ...BASE, ATTACHMENT_QUOTA_BYTES_PER_ORG: value })).toEqual(['ATTACHMENT_QUOTA_BYTES_PER_ORG']);
    });
  });

  it('says which variables are missing when the environment is empty', () => {
    expect(namedVariables({})).toEqual(expect.arrayContaining(['ADMIN_TOKEN', 'DATABASE_URL', 'REDIS_URL', 'SECRETS_KEY']));
  });

  describe('in development', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'mss-config-'));
    });
    afterEach(() => {
      rmSync(dir, { recursive: true, force: true });
    });

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
