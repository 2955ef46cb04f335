/**
 * The jest project `cluster` (`npm run test:cluster`, a step of `npm test`; docs/redis-cluster.md):
 * the run's Redis is a Redis Cluster (3 masters, a replica each) that the global setup starts
 * (test/cluster/global-setup.ts: TEST_REDIS=cluster for test/support/global-setup.ts), and these suites run against it unchanged:
 * - test/cluster: the cluster's own spec (each file its private cluster, for what needs its nodes);
 * - test/delivery: webhook delivery (queue, retries, leases, recovery, per-endpoint concurrency);
 * - test/limits: the rate limits (counters in Redis, leases of the shared budget);
 * - test/queue: the Bull queues (shutdown order, the background work of a worker process);
 * - test/web/web-live.e2e-spec.ts: the live pages' stream (Redis pub/sub);
 * - test/event-feed/event-streams.e2e-spec.ts: the event feed's SSE streams, woken over Redis pub/sub.
 * The teardown checks that the keys sat in at least two slots on at least two masters.
 */

/** Files of those suites that cannot run on a cluster, and why. */
const SINGLE_NODE_ONLY = {
  // Starts, stops and restarts a redis-server of its own (one node) to test an outage: the cluster's
  // counterpart is test/reliability/redis-cluster-failover.reliability-spec.ts.
  'test/delivery/delivery-resilience.e2e-spec.ts': 'stops its own single-node Redis',
};

module.exports = {
  rootDir: '../..',
  displayName: 'cluster',
  testEnvironment: 'node',
  roots: [
    '<rootDir>/test/cluster',
    '<rootDir>/test/delivery',
    '<rootDir>/test/limits',
    '<rootDir>/test/queue',
    '<rootDir>/test/web',
    '<rootDir>/test/event-feed',
  ],
  testMatch: [
    '**/test/cluster/*.cluster-spec.ts',
    '**/test/{delivery,limits,queue}/*.e2e-spec.ts',
    '**/test/web/web-live.e2e-spec.ts',
    '**/test/event-feed/event-streams.e2e-spec.ts',
  ],
  testPathIgnorePatterns: ['/node_modules/', ...Object.keys(SINGLE_NODE_ONLY).map((file) => `<rootDir>/${file}`)],
  transform: { '^.+\\.tsx?$': 'ts-jest' },
  resolver: '<rootDir>/test/support/jest-resolver.js',
  setupFiles: ['<rootDir>/test/support/env.ts'],
  globalSetup: '<rootDir>/test/cluster/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};
