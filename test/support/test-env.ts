/** Where the current test run keeps its database and queue names (shared by setup and teardown). */
export const BASE_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/**
 * The run's Redis: the shared single node, or (TEST_REDIS=cluster, the jest project `cluster`)
 * the Redis Cluster the global setup started for the run, as `redis+cluster://` (TEST_REDIS_URL).
 */
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const ON_CLUSTER = process.env.TEST_REDIS === 'cluster';
export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const INGEST_TOKEN = 'test-ingest-token-0123456789abcdef';

export function databaseUrlFor(name: string): string {
  const url = new URL(BASE_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * The Bull key prefix `tag` names in this run: under the run's prefix on one node (so the global
 * teardown removes its keys); on the run's cluster a hash tag of its own, so that each file's
 * queues sit in a slot of their own and the run's keys spread over the masters.
 */
export function runQueuePrefix(tag: string): string {
  const run = process.env.QUEUE_PREFIX ?? '{mss_test}';
  return ON_CLUSTER ? `{${run.replace(/[{}]/g, '')}-${tag}}` : `${run}${tag}`;
}

/**
 * A Bull key prefix of the run's own for one app: test files run in parallel, and an app on the
 * run's shared prefix would take other files' jobs (and they its), so that a wait for "its"
 * queue to be idle waits on whatever the others are doing. Under the run's prefix, so the
 * global teardown removes its keys.
 */
export function privateQueuePrefix(tag: string): string {
  return runQueuePrefix(`${tag}-${Math.random().toString(36).slice(2, 10)}`);
}
