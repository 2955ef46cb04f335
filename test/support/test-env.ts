/** Where the current test run keeps its database and queue names (shared by setup and teardown). */
export const BASE_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const INGEST_TOKEN = 'test-ingest-token-0123456789abcdef';

export function databaseUrlFor(name: string): string {
  const url = new URL(BASE_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}
