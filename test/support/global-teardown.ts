import Redis from 'ioredis';
import { Client } from 'pg';
import { runCluster } from './global-setup';
import { RedisCluster } from './redis-cluster';
import { BASE_DATABASE_URL, REDIS_URL } from './test-env';

/** The part of jest's global config read here: the paths a run was narrowed to (`npx jest <path>`). */
interface RunConfig {
  testPathPatterns?: { patterns?: string[] };
}

export default async function globalTeardown(globalConfig?: RunConfig): Promise<void> {
  const database = process.env.TEST_DATABASE_NAME;
  if (database && process.env.KEEP_TEST_DATABASE !== '1') {
    const admin = new Client({ connectionString: BASE_DATABASE_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }
  const cluster = runCluster.current;
  if (cluster) {
    runCluster.current = undefined;
    try {
      // A run narrowed to a few files may well use one slot; the whole project must spread.
      assertKeysSpread(cluster, !globalConfig?.testPathPatterns?.patterns?.length);
    } finally {
      await cluster.stop();
    }
    return;
  }
  const prefix = process.env.QUEUE_PREFIX;
  if (prefix) {
    const redis = new Redis(REDIS_URL);
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    redis.disconnect();
  }
}

/**
 * After the suites ran on the run's cluster: their keys sit in at least two slots on at least two
 * masters (every file's queues have a hash tag of their own, rate-limit counters hash by their
 * names). A run whose keys all landed on one master would not have tested the cluster.
 */
function assertKeysSpread(cluster: RedisCluster, required: boolean): void {
  const slots = cluster.slotsInUse();
  const masters = cluster.mastersAndSlots().filter(({ port }) => Number(cluster.cli(port, 'DBSIZE').stdout.trim()) > 0).length;
  process.stdout.write(`\nRedis Cluster of the run: keys in ${slots} slots on ${masters} masters\n`);
  if (required && (slots < 2 || masters < 2))
    throw new Error(`the suites' keys sit in ${slots} slot(s) on ${masters} master(s) of the cluster: expected at least 2 of each`);
}
