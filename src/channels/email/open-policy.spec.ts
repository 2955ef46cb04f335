import { loadConfig } from '../../config/app-config';
import { DEFAULT_IGNORED_USER_AGENTS, ignoredUserAgent, judgeOpen, OpenPolicy, openPolicyFrom } from './open-policy';

const policy: OpenPolicy = { scannerWindowSeconds: 5, dedupSeconds: 60, ignoredUserAgents: DEFAULT_IGNORED_USER_AGENTS };
const sentAt = new Date('2026-11-22T10:00:00.000Z');
const after = (ms: number) => new Date(sentAt.getTime() + ms);
const GMAIL = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';

describe('judgeOpen', () => {
  it('ignores fetches before sending and inside the scanner window', () => {
    expect(judgeOpen({ at: after(1000), sentAt: null, lastOpenedAt: null, userAgent: GMAIL }, policy)).toEqual({ counted: false, reason: 'not-sent' });
    expect(judgeOpen({ at: after(4999), sentAt, lastOpenedAt: null, userAgent: GMAIL }, policy)).toEqual({ counted: false, reason: 'scanner-window' });
    expect(judgeOpen({ at: after(5000), sentAt, lastOpenedAt: null, userAgent: GMAIL }, policy)).toEqual({ counted: true });
  });

  it('treats a refetch within the dedup window of the last counted open as the same view', () => {
    const last = after(60_000);
    expect(judgeOpen({ at: new Date(last.getTime() + 59_999), sentAt, lastOpenedAt: last, userAgent: GMAIL }, policy)).toEqual({
      counted: false,
      reason: 'same-view',
    });
    expect(judgeOpen({ at: new Date(last.getTime() + 60_000), sentAt, lastOpenedAt: last, userAgent: GMAIL }, policy)).toEqual({ counted: true });
  });

  it('ignores security gateways and bots, but not mailbox image proxies or mail clients', () => {
    const at = after(3_600_000);
    for (const ua of [
      'Mozilla/5.0 (compatible; Mimecast URL Protect)',
      'Proofpoint URL Defense',
      'Barracuda Sentinel (EE)',
      'python-requests/2.31.0',
      'curl/8.4.0',
      'Mozilla/5.0 HeadlessChrome/120.0',
    ]) {
      expect(judgeOpen({ at, sentAt, lastOpenedAt: null, userAgent: ua }, policy)).toEqual({ counted: false, reason: 'ignored-user-agent' });
    }
    for (const ua of [
      GMAIL,
      'YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html',
      'Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17328; Pro)',
      'Mozilla/5.0',
      null,
    ]) {
      expect(judgeOpen({ at, sentAt, lastOpenedAt: null, userAgent: ua }, policy)).toEqual({ counted: true });
    }
  });

  it('matches user agents case-insensitively against lower-case substrings', () => {
    expect(ignoredUserAgent('MIMECAST', ['mimecast'])).toBe(true);
    expect(ignoredUserAgent('Thunderbird', ['mimecast'])).toBe(false);
    expect(ignoredUserAgent('anything', [])).toBe(false);
  });
});

describe('open-tracking configuration', () => {
  const base = {
    DATABASE_URL: 'postgres://localhost/x',
    REDIS_URL: 'redis://localhost',
    APP_ENV: 'development',
    ADMIN_TOKEN: 'a'.repeat(16),
    INGEST_TOKEN: 'i'.repeat(16),
    SECRETS_KEY: '0'.repeat(64),
  };

  it('defaults to a 5 s scanner window, the spec 60 s dedup window and the maintained list', () => {
    expect(openPolicyFrom(loadConfig(base).emailOpens)).toEqual({ scannerWindowSeconds: 5, dedupSeconds: 60, ignoredUserAgents: DEFAULT_IGNORED_USER_AGENTS });
  });

  it('reads the three variables; `none` empties the list', () => {
    const config = loadConfig({
      ...base,
      EMAIL_OPEN_SCANNER_WINDOW_SECONDS: '0',
      EMAIL_OPEN_DEDUP_SECONDS: '120',
      EMAIL_OPEN_IGNORED_USER_AGENTS: ' Foo , BarBot ',
    });
    expect(openPolicyFrom(config.emailOpens)).toEqual({ scannerWindowSeconds: 0, dedupSeconds: 120, ignoredUserAgents: ['foo', 'barbot'] });
    expect(openPolicyFrom(loadConfig({ ...base, EMAIL_OPEN_IGNORED_USER_AGENTS: 'none' }).emailOpens).ignoredUserAgents).toEqual([]);
  });

  it('refuses to boot on a bad value, naming the variable', () => {
    expect(() => loadConfig({ ...base, EMAIL_OPEN_DEDUP_SECONDS: 'soon' })).toThrow(/EMAIL_OPEN_DEDUP_SECONDS/);
    expect(() => loadConfig({ ...base, EMAIL_OPEN_SCANNER_WINDOW_SECONDS: '9999' })).toThrow(/EMAIL_OPEN_SCANNER_WINDOW_SECONDS/);
  });
});
