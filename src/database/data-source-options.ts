import { DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';
import { PreparingClient } from './preparing-client';

/** One description of the database connection, used by the app, the migration CLI and tests. */
export function dataSourceOptions(databaseUrl: string): DataSourceOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    // PreparingClient: every parameterised statement is prepared once per connection. jit=off: JIT
    // compilation cost a search for a common word 170-250 ms of its 550 (docs/PERFORMANCE.md); none of
    // our statements runs long enough to win it back.
    extra: { max: 20, connectionTimeoutMillis: 5000, Client: PreparingClient, options: '-c jit=off' },
  };
}
