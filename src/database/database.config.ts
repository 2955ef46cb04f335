import { defineSlice, text } from '../config/settings';

/** The PostgreSQL the service keeps its data in (migrations run against it at start-up). */
export const databaseConfig = defineSlice({
  databaseUrl: text('DATABASE_URL', { pattern: /^postgres(ql)?:\/\//, message: 'must be a postgres:// URL', required: true }),
});
