import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const SCRIPTS = join(__dirname, '../../scripts');

/**
 * Runs one of the scripts that install what the tests drive from Debian's packages when it is
 * missing (scripts/ensure-chromium.sh, scripts/ensure-debian-package.sh), showing its output, and
 * throws with `purpose` when it fails. The script stops apt-get itself at `timeoutSeconds`.
 */
export function ensureInstalled(purpose: string, script: string, args: string[], timeoutSeconds = Number(process.env.INSTALL_TIMEOUT ?? 600)): void {
  const result = spawnSync('bash', [join(SCRIPTS, script), ...args], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, INSTALL_TIMEOUT: String(timeoutSeconds), CHROMIUM_INSTALL_TIMEOUT: String(timeoutSeconds) },
    // Only guards against the script itself hanging.
    timeout: (timeoutSeconds + 30) * 1000,
  });
  if (result.error) throw new Error(`scripts/${script} did not finish: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${purpose}: scripts/${script} failed (exit ${result.status}, see above).`);
}
