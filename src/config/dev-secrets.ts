import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError, derive, Derived, text } from './settings';

/** The secrets development generates when they are not set. */
export interface DevSecrets {
  secretsKey: string;
  adminToken: string;
  ingestToken: string;
}

const DEV_SECRETS_FILE = text('DEV_SECRETS_FILE', { default: '.dev/secrets.json' });

/**
 * A secret variable, required in production; in development, when it is unset, the one generated
 * into DEV_SECRETS_FILE (created on first use, kept across restarts).
 */
export function secret(variable: string, generated: keyof DevSecrets, format: { pattern: RegExp; message: string }): Derived<string> {
  return derive([text(variable, { ...format, required: 'production' }), DEV_SECRETS_FILE], ([value, file]) => value ?? loadDevSecrets(file)[generated]);
}

/** Development only: secrets generated once into a git-ignored file, so restarts keep them. */
function loadDevSecrets(file: string): DevSecrets {
  const path = resolve(file);
  if (existsSync(path)) {
    let stored: Partial<DevSecrets>;
    try {
      stored = JSON.parse(readFileSync(path, 'utf8')) as Partial<DevSecrets>;
    } catch (error) {
      throw new ConfigError(`Invalid configuration:\n  - DEV_SECRETS_FILE: ${path} is not valid JSON (${(error as Error).message}); fix or delete it`);
    }
    if (!stored.secretsKey || !/^[0-9a-f]{64}$/i.test(stored.secretsKey) || !stored.adminToken) {
      // Replacing it would lose the key that sealed existing webhook secrets: refuse instead.
      throw new ConfigError(`Invalid configuration:\n  - DEV_SECRETS_FILE: ${path} lacks a 64-hex secretsKey or an adminToken; fix or delete it`);
    }
    if (stored.ingestToken) return stored as DevSecrets;
    const upgraded = { ...stored, ingestToken: `dev_ingest_${randomBytes(16).toString('hex')}` } as DevSecrets;
    writeFileSync(path, JSON.stringify(upgraded, null, 2) + '\n', { mode: 0o600 });
    return upgraded;
  }
  const secrets: DevSecrets = {
    secretsKey: randomBytes(32).toString('hex'),
    adminToken: `dev_admin_${randomBytes(16).toString('hex')}`,
    ingestToken: `dev_ingest_${randomBytes(16).toString('hex')}`,
  };
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
  return secrets;
}
