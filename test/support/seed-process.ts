import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { BASE_DATABASE_URL, databaseUrlFor, privateQueuePrefix } from './test-env';

const ROOT = resolve(__dirname, '../..');

/** How a run of the seed ended: its exit code and what it printed. */
export interface SeedRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * A database of the test's own for `npm run seed` (which seeds only a database without orgs):
 * `<run's database>_<suffix>`, created empty; drop() removes it.
 */
export async function seedDatabase(suffix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${process.env.TEST_DATABASE_NAME ?? 'mss_test'}_${suffix}`;
  const admin = async (sql: string) => {
    const client = new Client({ connectionString: BASE_DATABASE_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${name}`);
  return { url: databaseUrlFor(name), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * Runs the seed as `npm run seed` does (src/seed/seed.ts, a process of its own, under ts-node) to
 * its end, on `databaseUrl` with `vars` over a development environment (the test's Redis, tokens
 * and SECRETS_KEY); killed after 120 s.
 */
export function runSeed(databaseUrl: string, vars: Record<string, string> = {}): Promise<SeedRun> {
  const env = {
    ...process.env,
    APP_ENV: 'development',
    DATABASE_URL: databaseUrl,
    QUEUE_PREFIX: privateQueuePrefix('seed'),
    TS_NODE_TRANSPILE_ONLY: '1',
    ...vars,
  };
  return runScript('src/seed/seed.ts', [], env, 120_000);
}

/** Runs a TypeScript entry point of the service (a process of its own, under ts-node) with `args` and `env` to its end; killed after `timeoutMs`. */
export function runScript(script: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<SeedRun> {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', script, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const run: SeedRun = { code: null, stdout: '', stderr: '' };
  child.stdout!.on('data', (c: Buffer) => (run.stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (run.stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((done) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      done({ ...run, code });
    }),
  );
}
