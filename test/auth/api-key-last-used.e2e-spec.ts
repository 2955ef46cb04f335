import { DataSource } from 'typeorm';
import { ApiKeysRepository } from '../../src/auth/api-keys.repository';
import { Clock } from '../../src/common/clock';
import { TestApp } from '../support/app';
import { MovableClock, watchLastUseWrites } from '../support/last-use';
import { createSession } from '../support/session';
import { createWhoAmIApp, whoami } from '../support/whoami';

describe('API keys: last used', () => {
  let t: TestApp;
  let db: DataSource;
  let repository: ApiKeysRepository;
  const clock = new MovableClock();

  let watch: ReturnType<typeof watchLastUseWrites>;
  let touch: jest.SpyInstance;

  beforeAll(async () => {
    t = await createWhoAmIApp({ overrides: (b) => b.overrideProvider(Clock).useValue(clock) });
    db = t.app.get(DataSource);
    repository = t.app.get(ApiKeysRepository);
    watch = watchLastUseWrites(repository, 'touchLastUsed');
    touch = watch.spy;
  });
  beforeEach(() => {
    clock.offsetMs = 0;
    watch.clear();
  });
  afterAll(async () => {
    touch.mockRestore();
    await t.close();
  });

  async function lastUsedAt(keyId: string): Promise<Date | null> {
    const [row] = await db.query('SELECT last_used_at FROM api_keys WHERE id = $1', [keyId]);
    return row.last_used_at;
  }

  it('is null until the key is used, then the time of the request that used it', async () => {
    const s = await createSession(t.admin, { lines: [] });
    expect(await lastUsedAt(s.apiKeyId)).toBeNull();

    clock.offsetMs = -3_600_000; // an hour ago: the stamp is the clock's time, not the database's
    const before = clock.now().getTime();
    expect((await whoami(t, s.apiKey)).status).toBe(200);
    const after = clock.now().getTime();
    expect(await watch.rowsWritten()).toBe(1);
    const stamped = (await lastUsedAt(s.apiKeyId))!.getTime();
    expect(stamped).toBeGreaterThanOrEqual(before);
    expect(stamped).toBeLessThanOrEqual(after);
  });

  it('a burst of requests within the minute writes the row once; a request a minute later writes it again', async () => {
    const s = await createSession(t.admin, { lines: [] });

    // Concurrent first uses: every request reads a null stamp, yet one write reaches the row.
    const burst = await Promise.all(Array.from({ length: 12 }, () => whoami(t, s.apiKey)));
    expect(burst.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(await watch.rowsWritten()).toBe(1);
    const first = await lastUsedAt(s.apiKeyId);
    expect(first).not.toBeNull();

    // Later requests within the minute see the fresh stamp in the resolving query and send no UPDATE.
    touch.mockClear();
    clock.offsetMs = 50_000;
    for (let i = 0; i < 10; i++) expect((await whoami(t, s.apiKey)).status).toBe(200);
    expect(touch).not.toHaveBeenCalled();
    expect(await lastUsedAt(s.apiKeyId)).toEqual(first);

    // A minute after the stamp: the next burst writes once more, with the new time.
    clock.offsetMs = 61_000;
    const second = await Promise.all(Array.from({ length: 12 }, () => whoami(t, s.apiKey)));
    expect(second.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(await watch.rowsWritten()).toBe(2);
    const stamped = (await lastUsedAt(s.apiKeyId))!.getTime();
    expect(stamped - first!.getTime()).toBeGreaterThanOrEqual(61_000);
  });

  it('the UPDATE itself refuses a second write within the minute (other replicas, racing processes)', async () => {
    const s = await createSession(t.admin, { lines: [] });
    const t0 = new Date('2030-01-01T00:00:00.000Z');
    const racing = await Promise.all(Array.from({ length: 10 }, () => repository.touchLastUsed(s.apiKeyId, t0)));
    expect(racing.filter(Boolean)).toHaveLength(1);
    expect(await repository.touchLastUsed(s.apiKeyId, new Date(t0.getTime() + 59_999))).toBe(false);
    expect(await lastUsedAt(s.apiKeyId)).toEqual(t0);
    expect(await repository.touchLastUsed(s.apiKeyId, new Date(t0.getTime() + 60_000))).toBe(true);
    expect(await lastUsedAt(s.apiKeyId)).toEqual(new Date(t0.getTime() + 60_000));
  });

  it('is off the request path: a write that hangs or fails never holds or fails the request', async () => {
    const s = await createSession(t.admin, { lines: [] });
    let release!: () => void;
    touch.mockImplementationOnce(() => new Promise<boolean>((resolve) => (release = () => resolve(false))));
    expect((await whoami(t, s.apiKey)).status).toBe(200); // answered while the write still hangs
    expect(touch).toHaveBeenCalledTimes(1);
    release();

    touch.mockImplementationOnce(() => Promise.reject(new Error('database went away')));
    expect((await whoami(t, s.apiKey)).status).toBe(200);
    expect(touch).toHaveBeenCalledTimes(2);
    expect(await lastUsedAt(s.apiKeyId)).toBeNull();
  });

  it('does not change the key otherwise: updated_at stays, and a revoked key is still refused at once', async () => {
    const s = await createSession(t.admin, { lines: [] });
    const [before] = await db.query('SELECT updated_at FROM api_keys WHERE id = $1', [s.apiKeyId]);
    expect((await whoami(t, s.apiKey)).status).toBe(200);
    await watch.rowsWritten();
    const [after] = await db.query('SELECT updated_at, last_used_at FROM api_keys WHERE id = $1', [s.apiKeyId]);
    expect(after.last_used_at).not.toBeNull();
    expect(after.updated_at).toEqual(before.updated_at);
    expect((await t.admin.delete(`/admin/api-keys/${s.apiKeyId}`)).status).toBe(204);
    expect((await whoami(t, s.apiKey)).status).toBe(401);
  });
});
