import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { runMigrations } from '../src/database/migrate';
import { MIGRATIONS } from '../src/database/migrations';
import { BASE_DATABASE_URL, databaseUrlFor } from './support/test-env';

async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('migrations under the advisory lock', () => {
  it('two concurrent runs on the test database both succeed; at most one of them applies anything', async () => {
    const url = process.env.DATABASE_URL!;
    // The global setup has migrated this database already, so normally both find nothing to do.
    const [a, b] = await Promise.all([runMigrations(url), runMigrations(url)]);
    expect([a, b].filter((applied) => applied.length === 0).length).toBeGreaterThanOrEqual(1);
    expect(await runMigrations(url)).toEqual([]);
    const applied = await query<{ name: string }>(url, 'SELECT name FROM schema_migrations ORDER BY id');
    expect(applied.map((r) => r.name)).toEqual(MIGRATIONS.map((m) => new m().name ?? m.name));
  });

  describe('on a fresh database', () => {
    const name = `mss_test_migrate_${randomBytes(4).toString('hex')}`;
    const url = databaseUrlFor(name);
    beforeAll(async () => { await query(BASE_DATABASE_URL, `CREATE DATABASE ${name}`); });
    afterAll(async () => { await query(BASE_DATABASE_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`); });

    it('three replicas starting together: one applies every migration once, the others find nothing to do', async () => {
      const results = await Promise.all([runMigrations(url), runMigrations(url), runMigrations(url)]);
      const names = MIGRATIONS.map((m) => new m().name ?? m.name);
      expect(names.length).toBeGreaterThan(0);
      expect(results.filter((r) => r.length > 0)).toEqual([names]);
      expect(results.filter((r) => r.length === 0)).toHaveLength(2);

      const applied = await query<{ name: string }>(url, 'SELECT name FROM schema_migrations ORDER BY id');
      expect(applied.map((r) => r.name)).toEqual(names);
      const tables = await query<{ table_name: string }>(url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'");
      expect(tables.map((r) => r.table_name)).toEqual(
        expect.arrayContaining(['orgs', 'users', 'lines', 'line_memberships', 'api_keys', 'endpoint_cap_grants', 'endpoint_cap_audit']),
      );
      // Every run released the lock (pg_locks is cluster-wide: look at this database only).
      const locks = await query<{ count: number }>(
        url,
        "SELECT count(*)::int AS count FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      );
      expect(locks[0].count).toBe(0);
    });
  });
});
