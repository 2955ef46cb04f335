import { ChildProcess, spawn } from 'node:child_process';
import { createCipheriv, createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { SecretBox, secretsKeyId } from '../../src/common/secret-box';
import { runMigrations } from '../../src/database/migrate';
import { verifyWebhook } from '../../src/sdk';
import { closeDeliveryTestApp, createDeliveryTestApp, DeliveryTestApp, freePort, register } from '../support/delivery';
import { partnerPhone } from '../support/messaging-hooks';
import { TestReceiver } from '../support/receiver';
import { createSession, Session } from '../support/session';
import { ADMIN_TOKEN, BASE_DATABASE_URL, databaseUrlFor, INGEST_TOKEN, REDIS_URL } from '../support/test-env';
import { waitUntil } from '../support/wait';

/**
 * Issue 10, section 6: a process whose SECRETS_KEY cannot open the webhook secrets already stored
 * refuses to start with a clear message (it used to start and fail at send time), and the key can
 * be rotated: SECRETS_KEY_FALLBACKS opens the old values, `secrets-cli reseal` re-seals them under
 * the new key, after which the old key can go and deliveries still carry the subscriber's secret.
 *
 * Real processes (`src/main.ts` and `src/database/secrets-cli.ts` under ts-node) against a database
 * of this file's own: the start-up check reads every stored secret, and the shared test database
 * holds secrets of other files sealed under their own random keys.
 */
const ROOT = resolve(__dirname, '../..');
const K0 = randomBytes(32);
const K1 = randomBytes(32);
const hex = (key: Buffer) => key.toString('hex');
const DATABASE = `${process.env.TEST_DATABASE_NAME ?? 'mss_test'}_secrets`;
const DATABASE_URL = databaseUrlFor(DATABASE);
const QUEUE_PREFIX = `${process.env.QUEUE_PREFIX ?? '{mss_test}'}secrets`;

interface Run {
  code: number | null;
  output: string;
}

const children = new Set<ChildProcess>();

function processEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    APP_ENV: 'development',
    DATABASE_URL,
    REDIS_URL,
    ADMIN_TOKEN,
    INGEST_TOKEN,
    QUEUE_PREFIX,
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    LOG_LEVEL: 'info',
    TS_NODE_TRANSPILE_ONLY: '1',
    ...vars,
  };
}

function start(script: string, args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string; exited: Promise<Run> } {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', script, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<Run>((done) => child.once('exit', (code) => (children.delete(child), done({ code, output }))));
  return { child, output: () => output, exited };
}

/** Runs to the end (or fails the test after `timeoutMs`). */
async function run(script: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<Run> {
  const { child, output, exited } = start(script, args, env);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const result = await exited;
  clearTimeout(timer);
  if (result.code === null) throw new Error(`${script} ${args.join(' ')} did not end within ${timeoutMs} ms:\n${output()}`);
  return result;
}

/** The first sealed format (no key id), as rows written before this change hold it. */
function sealV1(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return ['v1', ...[iv, cipher.getAuthTag(), ciphertext].map((p) => p.toString('base64url'))].join('.');
}

describe('SECRETS_KEY: refusing a key that cannot open stored secrets, and rotating it', () => {
  let db: Client;
  let session: Session;
  let endpointId: string;
  let secret: string;
  /** A v1a endpoint: its ed25519 private key is sealed too. */
  let v1aEndpointId: string;
  let v1aPublicKey: string;
  const receiver = new TestReceiver();
  let base: string;

  beforeAll(async () => {
    const admin = new Client({ connectionString: BASE_DATABASE_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
    await admin.query(`CREATE DATABASE ${DATABASE}`);
    await admin.end();
    await runMigrations(DATABASE_URL);
    db = new Client({ connectionString: DATABASE_URL });
    await db.connect();
    base = await receiver.start();

    // Data sealed under K0, written by the service itself; one previous secret in the first format.
    let t: DeliveryTestApp | undefined;
    try {
      t = await createDeliveryTestApp({ queueTag: 'secrets-setup', env: { DATABASE_URL, SECRETS_KEY: hex(K0) } });
      session = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
      ({
        endpoint: { id: endpointId },
        secret,
      } = await register(t, session.apiKey, { url: `${base}/hook`, events: ['message.received'] }));
      const v1a = await register(t, session.apiKey, { url: `${base}/v1a`, events: ['contact.merged'], signatureVersion: 'v1a' });
      v1aEndpointId = v1a.endpoint.id;
      v1aPublicKey = v1a.endpoint.publicKey!;
    } finally {
      await closeDeliveryTestApp(t);
    }
    await db.query(`UPDATE webhook_endpoints SET previous_secret_sealed = $2, previous_secret_expires_at = now() + interval '1 hour' WHERE id = $1`, [
      endpointId,
      sealV1(K0, 'previous-secret'),
    ]);
  }, 60_000);

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await receiver.stop();
    await db?.end();
    if (!process.env.KEEP_TEST_DATABASE) {
      const admin = new Client({ connectionString: BASE_DATABASE_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
      await admin.end();
    }
  });

  it('a process with another SECRETS_KEY refuses to start, naming what it cannot open and never printing a key', async () => {
    const result = await run('src/main.ts', [], processEnv({ SECRETS_KEY: hex(K1), PORT: String(await freePort()) }));
    expect(result.code).toBe(1);
    expect(result.output).toContain(`SECRETS_KEY (key id ${secretsKeyId(K1)}) cannot open secrets already stored in the database`);
    expect(result.output).toContain(`2 webhook signing secrets (webhook_endpoints.secret_sealed) sealed under key id ${secretsKeyId(K0)}`);
    expect(result.output).toContain(
      `1 ed25519 signing keys of v1a webhook endpoints (webhook_endpoints.signing_key_sealed) sealed under key id ${secretsKeyId(K0)}`,
    );
    expect(result.output).toContain(
      '1 previous webhook signing secrets (24 h after a rotation) (webhook_endpoints.previous_secret_sealed) sealed without a key id',
    );
    expect(result.output).toContain('docs/operations.md');
    expect(result.output).not.toContain('listening on port');
    for (const key of [K0, K1]) expect(result.output).not.toContain(hex(key));
    expect(result.output).not.toContain(secret);
  }, 90_000);

  it('rotates: the new key with the old one as fallback starts, reseal moves every value, then the old key can go', async () => {
    // Step 2 of the rotation: the new key seals, the old one still opens.
    const check = await run('src/database/secrets-cli.ts', ['check'], processEnv({ SECRETS_KEY: hex(K1), SECRETS_KEY_FALLBACKS: hex(K0) }));
    expect(check.code).toBe(0);
    expect(check.output).toContain('every stored secret opens with SECRETS_KEY');

    // Step 3: re-seal under the new key.
    const reseal = await run('src/database/secrets-cli.ts', ['reseal'], processEnv({ SECRETS_KEY: hex(K1), SECRETS_KEY_FALLBACKS: hex(K0) }));
    expect(reseal.code).toBe(0);
    expect(reseal.output).toContain(`re-sealing stored secrets under SECRETS_KEY (key id ${secretsKeyId(K1)})`);
    expect(reseal.output).toContain('done: 4 sealed values scanned, 4 re-sealed');
    const [row] = (await db.query('SELECT secret_sealed, previous_secret_sealed FROM webhook_endpoints WHERE id = $1', [endpointId])).rows;
    const onlyNew = new SecretBox({ secretsKey: K1, secretsKeyFallbacks: [] });
    expect(SecretBox.keyIdOf(row.secret_sealed)).toBe(secretsKeyId(K1));
    expect(SecretBox.keyIdOf(row.previous_secret_sealed)).toBe(secretsKeyId(K1));
    expect(onlyNew.open(row.secret_sealed)).toBe(secret);
    expect(onlyNew.open(row.previous_secret_sealed)).toBe('previous-secret');
    // The v1a endpoint's private key too: it opens under the new key and is still the pair of the published public key.
    const [v1aRow] = (await db.query('SELECT signing_key_sealed FROM webhook_endpoints WHERE id = $1', [v1aEndpointId])).rows;
    expect(SecretBox.keyIdOf(v1aRow.signing_key_sealed)).toBe(secretsKeyId(K1));
    const privateKey = createPrivateKey({ key: Buffer.from(onlyNew.open(v1aRow.signing_key_sealed), 'base64'), format: 'der', type: 'pkcs8' });
    const x = createPublicKey(privateKey).export({ format: 'jwk' }).x!;
    expect(`whpk_${Buffer.from(x, 'base64url').toString('base64')}`).toBe(v1aPublicKey);

    // A second run finds nothing to do.
    const again = await run('src/database/secrets-cli.ts', ['reseal'], processEnv({ SECRETS_KEY: hex(K1) }));
    expect(again.code).toBe(0);
    expect(again.output).toContain('done: 4 sealed values scanned, 0 re-sealed');

    // Step 4: the old key is gone; the service starts and signs with the subscriber's secret.
    const port = await freePort();
    const service = start('src/main.ts', [], processEnv({ SECRETS_KEY: hex(K1), PORT: String(port), PROCESS_ROLE: 'all' }));
    try {
      // ts-node compiles the whole service first: over a minute on an overloaded 2-core machine.
      await waitUntil(() => service.output().includes('listening on port') || service.child.exitCode !== null, 'the service to listen', {
        timeoutMs: 180_000,
        intervalMs: 100,
      });
      expect(service.child.exitCode).toBeNull();
      const http = request(`http://127.0.0.1:${port}`);
      const sms = await http
        .post('/ingest/sms/inbound')
        .set('Authorization', `Bearer ${INGEST_TOKEN}`)
        .send({ to: session.lines[0].address, from: partnerPhone(), body: 'after the rotation', providerMessageId: `rot-${randomBytes(4).toString('hex')}` });
      expect(sms.status).toBe(201);
      await receiver.waitFor(1, 30_000);
      const delivery = receiver.requests[0];
      const event = verifyWebhook<{ type: string }>(delivery.body, delivery.headers['x-service-signature'] as string, [secret]);
      expect(event.type).toBe('message.received');
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  }, 330_000);
});
