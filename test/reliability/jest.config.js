/**
 * `npm run test:reliability`: the reliability suite (issue 6). Not part of `npm test`: the e2e
 * project matches *.e2e-spec.ts only, these files are *.reliability-spec.ts.
 */
module.exports = {
  rootDir: '../..',
  displayName: 'reliability',
  testEnvironment: 'node',
  roots: ['<rootDir>/test/reliability'],
  testMatch: ['**/*.reliability-spec.ts'],
  transform: { '^.+\\.tsx?$': 'ts-jest' },
  resolver: '<rootDir>/test/support/jest-resolver.js',
  setupFiles: ['<rootDir>/test/support/env.ts'],
  globalSetup: '<rootDir>/test/reliability/global-setup.ts',
  globalTeardown: '<rootDir>/test/reliability/global-teardown.ts',
  testTimeout: 600_000,
  maxWorkers: 1,
  verbose: true,
};
