import e2eGlobalSetup from '../../support/global-setup';
import { ensureInstalled } from '../../support/ensure-package';

/**
 * The browser tests' global setup: Debian's chromium is there (scripts/ensure-chromium.sh installs
 * it when missing, within CHROMIUM_INSTALL_TIMEOUT seconds), then everything the e2e tests set up
 * (test/support/global-setup.ts), dropped by the same teardown.
 */
export default async function globalSetup(): Promise<void> {
  ensureInstalled("The browser tests need Debian's chromium", 'ensure-chromium.sh', [], Number(process.env.CHROMIUM_INSTALL_TIMEOUT ?? 600));
  await e2eGlobalSetup();
}
