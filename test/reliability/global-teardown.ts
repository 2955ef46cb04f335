import { rmSync } from 'node:fs';
import globalTeardown from '../support/global-teardown';
import { DOC, renderDocument, resultsFile } from './support/results';

/** Drops the run's database and Bull keys, then writes docs/RELIABILITY.md from the results. */
export default async function reliabilityTeardown(): Promise<void> {
  await globalTeardown();
  const startedAt = Number(process.env.RELIABILITY_STARTED_AT ?? Date.now());
  const { written, results } = renderDocument({ startedAt, finishedAt: Date.now() });
  const minutes = ((Date.now() - startedAt) / 60_000).toFixed(1);
  process.stdout.write(
    written
      ? `\nreliability: ${results} result(s) written to ${DOC}; the suite took ${minutes} min\n`
      : `\nreliability: no results recorded; ${DOC} left as it was (${minutes} min)\n`,
  );
  rmSync(resultsFile(), { force: true });
  if (process.env.RELIABILITY_BUILD_DIR) rmSync(process.env.RELIABILITY_BUILD_DIR, { recursive: true, force: true });
}
