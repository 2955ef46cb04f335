import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { runMigrations } from '../../src/database/migrate';
import { ensureInstalled } from './ensure-package';
import { RedisCluster } from './redis-cluster';
import { BASE_DATABASE_URL, databaseUrlFor } from './test-env';

/**
 * Each run gets its own database and Bull key prefix (and Debian's Dovecot is installed when missing), dropped again by the teardown, and one
 * SECRETS_KEY (test/support/env.ts): every file's app seals into the same database, and a process
 * a test starts from src/main.ts refuses to start when it cannot open what is stored there.
 * With TEST_REDIS=cluster (the jest project `cluster`), the run's Redis is a Redis Cluster of its
 * own (3 masters, a replica each; test/support/redis-cluster.ts), stopped by the teardown.
 */
export default async function globalSetup(): Promise<void> {
  // The mailbox tests run a private Dovecot (test/support/dovecot.ts).
  ensureInstalled("The mailbox tests need Debian's dovecot-imapd", 'ensure-debian-package.sh', ['dovecot', 'dovecot --version', 'dovecot-imapd']);
  const runId = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const database = `mss_test_${runId}`;
  const admin = new Client({ connectionString: BASE_DATABASE_URL });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`PostgreSQL is not reachable at ${BASE_DATABASE_URL}: ${(error as Error).message}`);
  }
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  process.env.TEST_RUN_ID = runId;
  process.env.TEST_DATABASE_NAME = database;
  process.env.DATABASE_URL = databaseUrlFor(database);
  process.env.QUEUE_PREFIX = `{mss_test_${runId}}`;
  process.env.TEST_SECRETS_KEY = randomBytes(32).toString('hex');
  await runMigrations(process.env.DATABASE_URL);
  if (process.env.TEST_REDIS === 'cluster') {
    const cluster = await RedisCluster.start();
    runCluster.current = cluster;
    // Read by test/support/test-env.ts in every test file (and passed on to the processes they start).
    process.env.TEST_REDIS_URL = cluster.url;
  }
}

/** The run's Redis Cluster, for the teardown (the same process as the setup). */
export const runCluster: { current?: RedisCluster } = ((globalThis as { __mssRunCluster?: { current?: RedisCluster } }).__mssRunCluster ??= {});
