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
    // PreparingClient: every parameterised statement is prepared once per connection.
    extra: { max: 20, connectionTimeoutMillis: 5000, Client: PreparingClient },
  };
}
