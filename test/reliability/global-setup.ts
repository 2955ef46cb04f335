import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import globalSetup from '../support/global-setup';
import { buildDir, CACHE_DIR, compileService, logDir, ROOT } from './support/stack';

/**
 * The e2e global setup (a database and Bull prefix of the run), then the service compiled once
 * into node_modules/.cache/mss-reliability/build-<run>: the tests run it as production does
 * (`node .../src/main.js`), and a concurrent `npm run build` elsewhere cannot pull dist/ away.
 */
export default async function reliabilitySetup(): Promise<void> {
  process.env.RELIABILITY_STARTED_AT = String(Date.now());
  await globalSetup();
  const started = Date.now();
  process.env.RELIABILITY_BUILD_DIR = buildDir();
  const BUILD_DIR = process.env.RELIABILITY_BUILD_DIR;
  rmSync(BUILD_DIR, { recursive: true, force: true });
  compileService(ROOT, BUILD_DIR, 'src/ for the reliability suite');
  const results = join(CACHE_DIR, `results-${process.env.TEST_RUN_ID}.jsonl`);
  mkdirSync(CACHE_DIR, { recursive: true });
  writeFileSync(results, '');
  process.env.RELIABILITY_RESULTS = results;
  process.env.RELIABILITY_LOG_DIR = join(logDir(), `run-${process.env.TEST_RUN_ID}`);
  mkdirSync(process.env.RELIABILITY_LOG_DIR, { recursive: true });
  process.stdout.write(`\nreliability: compiled src/ into ${BUILD_DIR} in ${Date.now() - started} ms; process logs in ${process.env.RELIABILITY_LOG_DIR}\n`);
}
