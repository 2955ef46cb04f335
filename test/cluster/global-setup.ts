import globalSetup from '../support/global-setup';

/** The jest project `cluster` (test/cluster/jest.project.js): the run's setup, its Redis a Redis Cluster of its own. */
export default async function clusterGlobalSetup(): Promise<void> {
  process.env.TEST_REDIS = 'cluster';
  await globalSetup();
}
