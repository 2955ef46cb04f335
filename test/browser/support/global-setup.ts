import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import e2eGlobalSetup from '../../support/global-setup';

/** How long the browser project waits for chromium to be installed (scripts/ensure-chromium.sh). */
const INSTALL_TIMEOUT_SECONDS = Number(process.env.CHROMIUM_INSTALL_TIMEOUT ?? 600);

/**
 * The browser tests' global setup: Debian's chromium is there (scripts/ensure-chromium.sh installs
 * it when missing), then the same per-run database and queue prefix as the e2e tests
 * (test/support/global-setup.ts), dropped by the same teardown.
 */
export default async function globalSetup(): Promise<void> {
  ensureChromium();
  await e2eGlobalSetup();
}

function ensureChromium(): void {
  const script = join(__dirname, '../../../scripts/ensure-chromium.sh');
  const result = spawnSync('bash', [script], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, CHROMIUM_INSTALL_TIMEOUT: String(INSTALL_TIMEOUT_SECONDS) },
    // The script stops apt-get itself at the limit; this only guards against the script hanging.
    timeout: (INSTALL_TIMEOUT_SECONDS + 30) * 1000,
  });
  if (result.error) throw new Error(`scripts/ensure-chromium.sh did not finish: ${result.error.message}`);
  if (result.status !== 0) {
    throw new Error(`The browser tests need Debian's chromium: scripts/ensure-chromium.sh failed (exit ${result.status}, see above).`);
  }
}
