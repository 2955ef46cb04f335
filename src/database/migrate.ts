import { DataSource, DataSourceOptions } from 'typeorm';
import { dataSourceOptions } from './data-source-options';
import { MIGRATIONS } from './migrations';

/** Arbitrary constant naming the migration lock among PostgreSQL advisory locks. */
const MIGRATION_LOCK_KEY = 727_100_001;

/** The number a migration's name ends with (`Webhooks1763800100000` → 1763800100000). */
export function migrationTimestamp(name: string): number {
  return Number(/(\d{13})$/.exec(name)?.[1] ?? NaN);
}

/**
 * Runs pending migrations while holding a session advisory lock, so replicas that start
 * together migrate one at a time and the later ones find nothing to do. `before` (tests and
 * benches): only the migrations whose timestamp is lower, i.e. an installation as it was before.
 */
export async function runMigrations(databaseUrl: string, options: { before?: number } = {}): Promise<string[]> {
  const migrations = options.before === undefined ? MIGRATIONS : MIGRATIONS.filter((m) => migrationTimestamp(m.name) < options.before!);
  return withDataSource(
    databaseUrl,
    async (dataSource) => {
      const runner = dataSource.createQueryRunner();
      try {
        await runner.connect();
        await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
        try {
          const applied = await dataSource.runMigrations({ transaction: 'each' });
          return applied.map((m) => m.name);
        } finally {
          await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
        }
      } finally {
        await runner.release();
      }
    },
    { migrations },
  );
}

/** A small data source (2 connections) for work before the app starts or from the command line. */
export async function withDataSource<T>(
  databaseUrl: string,
  work: (dataSource: DataSource) => Promise<T>,
  overrides: { migrations?: DataSourceOptions['migrations'] } = {},
): Promise<T> {
  const dataSource = new DataSource({ ...dataSourceOptions(databaseUrl), ...overrides, extra: { max: 2 } } as DataSourceOptions);
  await dataSource.initialize();
  try {
    return await work(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
