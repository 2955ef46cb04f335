import 'reflect-metadata';
import { SecretBox } from '../common/secret-box';
import { ConfigError, loadConfig } from '../config/app-config';
import { runMigrations, withDataSource } from './migrate';
import { checkSealedSecrets, resealSecrets, SealedSecretsError } from './sealed-secrets';

const USAGE = `Usage: node dist/src/database/secrets-cli.js <check|reseal>
  check    every stored secret opens with SECRETS_KEY or SECRETS_KEY_FALLBACKS (exit 1 if not)
  reseal   re-seal every stored secret under SECRETS_KEY (step 3 of a key rotation; safe to repeat)
Reads the same environment as the service (DATABASE_URL, SECRETS_KEY, SECRETS_KEY_FALLBACKS).
See docs/operations.md, "Rotating SECRETS_KEY".`;

/** `npm run secrets:check` and `npm run secrets:reseal`: the operator's side of SECRETS_KEY rotation. */
async function main(command: string | undefined): Promise<void> {
  if (command !== 'check' && command !== 'reseal') {
    process.stderr.write(`${USAGE}\n`);
    process.exit(2);
  }
  const config = loadConfig();
  const box = new SecretBox(config);
  await runMigrations(config.databaseUrl);
  await withDataSource(config.databaseUrl, async (dataSource) => {
    if (command === 'reseal') {
      process.stdout.write(`re-sealing stored secrets under SECRETS_KEY (key id ${box.currentKeyId})\n`);
      const totals = await resealSecrets(dataSource, box, {
        onProgress: (p) => process.stdout.write(`  ${p.table}.${p.column}: ${p.scanned} scanned, ${p.resealed} re-sealed\n`),
      });
      process.stdout.write(`done: ${totals.scanned} sealed values scanned, ${totals.resealed} re-sealed\n`);
    }
    await checkSealedSecrets(dataSource, box);
    process.stdout.write(
      `every stored secret opens with SECRETS_KEY (key id ${box.currentKeyId})${config.secretsKeyFallbacks.length ? ' or SECRETS_KEY_FALLBACKS' : ''}\n`,
    );
  });
}

main(process.argv[2]).catch((error: unknown) => {
  const known = error instanceof ConfigError || error instanceof SealedSecretsError;
  process.stderr.write(`${known ? (error as Error).message : `secrets: ${error instanceof Error ? error.stack : String(error)}`}\n`);
  process.exit(1);
});
