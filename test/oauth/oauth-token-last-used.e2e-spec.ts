import { Request } from 'express';
import { DataSource } from 'typeorm';
import { Clock } from '../../src/common/clock';
import { OAuthRepository } from '../../src/oauth/oauth.repository';
import { OAuthService } from '../../src/oauth/oauth.service';
import { createTestApp, TestApp } from '../support/app';
import { rpc } from '../support/mcp';
import { connectApp, ConnectedApp } from '../support/oauth';
import { MovableClock, watchLastUseWrites } from '../support/last-use';
import { createSession } from '../support/session';
import { signInBrowser } from '../support/web';

/**
 * Issue 31: an OAuth access token is resolved as an API key is (test/api-key-last-used): the
 * grant's last use is written at most once a minute, skipped when the resolving query reads a
 * fresh stamp, and concurrent lookups share one query; a revoked grant or an expired token is
 * still refused on its next request.
 */
describe('OAuth access tokens: last used, shared lookups', () => {
  let t: TestApp;
  let db: DataSource;
  let repository: OAuthRepository;
  const clock = new MovableClock();
  let watch: ReturnType<typeof watchLastUseWrites>;

  beforeAll(async () => {
    t = await createTestApp({ env: { SIGN_IN_RATE_LIMIT_PER_IP: '1000' }, overrides: (b) => b.overrideProvider(Clock).useValue(clock) });
    db = t.app.get(DataSource);
    repository = t.app.get(OAuthRepository);
    watch = watchLastUseWrites(repository, 'touchGrant');
  });
  beforeEach(() => {
    clock.offsetMs = 0;
    watch.clear();
  });
  afterAll(async () => {
    watch?.spy.mockRestore();
    await t?.close();
  });

  async function connected(): Promise<ConnectedApp & { grantId: string }> {
    const s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const app = await connectApp(t, await signInBrowser(t, s.userId));
    const [row] = await db.query('SELECT id FROM oauth_grants WHERE user_id = $1', [s.userId]);
    return { ...app, grantId: row.id };
  }
  const lastUsedAt = async (grantId: string): Promise<Date | null> =>
    (await db.query('SELECT last_used_at FROM oauth_grants WHERE id = $1', [grantId]))[0].last_used_at;
  const status = async (token: string) => (await rpc(t, token, 'tools/list')).status;

  it('a burst within the minute writes the grant once, later calls in the minute send no UPDATE, a minute later it writes again', async () => {
    const app = await connected();
    expect(await lastUsedAt(app.grantId)).toBeNull();

    const burst = await Promise.all(Array.from({ length: 12 }, () => status(app.accessToken)));
    expect(burst).toEqual(Array(12).fill(200));
    expect(await watch.rowsWritten()).toBe(1);
    const first = await lastUsedAt(app.grantId);
    expect(first).not.toBeNull();

    watch.spy.mockClear();
    clock.offsetMs = 50_000;
    for (let i = 0; i < 10; i++) expect(await status(app.accessToken)).toBe(200);
    expect(watch.spy).not.toHaveBeenCalled();
    expect(await lastUsedAt(app.grantId)).toEqual(first);

    clock.offsetMs = 61_000;
    const second = await Promise.all(Array.from({ length: 12 }, () => status(app.accessToken)));
    expect(second).toEqual(Array(12).fill(200));
    expect(await watch.rowsWritten()).toBe(2);
    expect((await lastUsedAt(app.grantId))!.getTime() - first!.getTime()).toBeGreaterThanOrEqual(61_000);
  });

  it('lookups at once share one query, each answered with its own grant; revoked and expired tokens get none', async () => {
    const [one, two, revoked, expired] = await Promise.all([connected(), connected(), connected(), connected()]);
    await db.query('DELETE FROM oauth_grants WHERE id = $1', [revoked.grantId]);
    await db.query(`UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE grant_id = $1 AND kind = 'access'`, [expired.grantId]);
    const oauth = t.app.get(OAuthService);
    const lookups = jest.spyOn(repository, 'callerRows');
    try {
      const request = { path: '/api/mcp' } as Request;
      const tokens = [one, two, one, revoked, expired, two].map((a) => a.accessToken);
      const callers = await Promise.all(tokens.map((token) => oauth.resolve(token, request)));
      expect(lookups).toHaveBeenCalledTimes(1);
      expect(callers.map((c) => c?.keyId ?? null)).toEqual([one.grantId, two.grantId, one.grantId, null, null, two.grantId]);
      // A token is accepted only for its resource.
      expect(await oauth.resolve(one.accessToken, { path: '/api/other' } as Request)).toBeNull();
    } finally {
      lookups.mockRestore();
    }
    // Over HTTP: the revoked grant's and the expired token's next request is 401.
    expect(await status(revoked.accessToken)).toBe(401);
    expect(await status(expired.accessToken)).toBe(401);
    expect(await status(one.accessToken)).toBe(200);
  });
});
