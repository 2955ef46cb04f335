import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';

/** Arbitrary constant naming the migration lock among PostgreSQL advisory locks. */
const MIGRATION_LOCK_KEY = 727_100_001;

/**
 * Runs pending migrations while holding a session advisory lock, so replicas that start
 * together migrate one at a time and the later ones find nothing to do.
 */
export async function runMigrations(databaseUrl: string): Promise<string[]> {
  return withDataSource(databaseUrl, async (dataSource) => {
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
  });
}

/** A small data source (2 connections) for work before the app starts or from the command line. */
export async function withDataSource<T>(databaseUrl: string, work: (dataSource: DataSource) => Promise<T>): Promise<T> {
  const dataSource = new DataSource({ ...dataSourceOptions(databaseUrl), extra: { max: 2 } });
  await dataSource.initialize();
  try {
    return await work(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
