import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { MailboxSync } from '../../../src/channels/email/mailboxes/mailbox-sync';
import { DovecotServer } from '../../support/dovecot';
import { email, startSmtpServer, subjectOf } from '../../support/mailbox';
import { createMessagingTestApp, MessagingTestApp } from '../../support/messaging-hooks';
import { BASE_DATABASE_URL, databaseUrlFor, privateQueuePrefix } from '../../support/test-env';
import { waitUntil } from '../../support/wait';

jest.setTimeout(180_000);

/**
 * The development seed connects the demo email line to a development mail server named by
 * SEED_MAILBOX_* (docs/mailboxes.md, "Development mail server"), as `npm run seed` runs it: a real
 * process (src/seed/seed.ts under ts-node) on a database of this file's own, since the seed only
 * creates the demo org in a database without orgs. A private Dovecot has the user inbox@demo.example.
 */
const ROOT = resolve(__dirname, '../../..');
const DATABASE = `${process.env.TEST_DATABASE_NAME ?? 'mss_test'}_seed`;
const DATABASE_URL = databaseUrlFor(DATABASE);
const PASSWORD = 'demo-inbox-secret';
/** The seed's email line (DEMO in src/seed/seed.ts, which is not imported: importing it runs the seed). */
const INBOX = 'inbox@demo.example';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the seed to its end with `vars` over a development environment (killed after 120 s). */
function runSeed(vars: Record<string, string>): Promise<Run> {
  // The test's environment (test/support/env.ts): its Redis, tokens and SECRETS_KEY, the key the
  // test's app opens the sealed mailbox password with.
  const env = { ...process.env, APP_ENV: 'development', DATABASE_URL, QUEUE_PREFIX: privateQueuePrefix('seed'), TS_NODE_TRANSPILE_ONLY: '1', ...vars };
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/seed/seed.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const run: Run = { code: null, stdout: '', stderr: '' };
  child.stdout!.on('data', (c: Buffer) => (run.stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (run.stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  return new Promise((done) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      done({ ...run, code });
    }),
  );
}

describe('npm run seed with SEED_MAILBOX_* (a development mail server)', () => {
  let db: Client;
  let dovecot: DovecotServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let m: MessagingTestApp | undefined;
  let vars: Record<string, string>;

  const mailbox = async () =>
    (
      await db.query(
        `SELECT m.imap_host, m.imap_port, m.imap_tls, m.imap_username, m.smtp_port, m.smtp_username, m.credentials_version
           FROM mailboxes m JOIN lines l ON l.id = m.line_id WHERE l.address = $1`,
        [INBOX],
      )
    ).rows[0];

  beforeAll(async () => {
    const admin = new Client({ connectionString: BASE_DATABASE_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${DATABASE}`);
    await admin.end();
    db = new Client({ connectionString: DATABASE_URL });
    await db.connect();
    dovecot = await DovecotServer.start({ [INBOX]: PASSWORD });
    smtp = await startSmtpServer();
    vars = {
      SEED_MAILBOX_IMAP: `127.0.0.1:${dovecot.imapPort}`,
      SEED_MAILBOX_SMTP: `127.0.0.1:${smtp.port}`,
      SEED_MAILBOX_PASSWORD: PASSWORD,
    };
  });
  afterAll(async () => {
    await m?.close();
    await db?.end();
    await smtp?.close();
    await dovecot?.close();
    const admin = new Client({ connectionString: BASE_DATABASE_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
    await admin.end();
  });

  it('with the mail server down, it still seeds and exits 0, with a one-line warning', async () => {
    await dovecot.stop();
    const run = await runSeed(vars);
    expect(run).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('seed: created the demo org');
    expect(run.stdout).toMatch(/API key {4}csk_/);
    const warnings = run.stderr.split('\n').filter(Boolean);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      new RegExp(`^seed: warning: inbox@demo\\.example was not connected to its mailbox \\(IMAP 127\\.0\\.0\\.1:${dovecot.imapPort}, .*could not be reached`),
    );
    expect(await mailbox()).toBeUndefined();
  });

  it('run again with the server up, it connects the line of the demo org it seeded before', async () => {
    await dovecot.restart();
    const run = await runSeed(vars);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('seed: the database already has 1 org(s); nothing seeded');
    expect(run.stdout).toContain(
      `seed: connected inbox@demo.example to its mailbox (IMAP 127.0.0.1:${dovecot.imapPort}, SMTP 127.0.0.1:${smtp.port}, tls none)`,
    );
    expect(await mailbox()).toEqual({
      imap_host: '127.0.0.1',
      imap_port: dovecot.imapPort,
      imap_tls: 'none',
      imap_username: INBOX,
      smtp_port: smtp.port,
      smtp_username: INBOX,
      credentials_version: 1,
    });
  });

  it('run once more, it leaves the mailbox as it is', async () => {
    const run = await runSeed(vars);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain(`seed: inbox@demo.example already has a mailbox (IMAP 127.0.0.1:${dovecot.imapPort}); left as it is`);
    expect((await mailbox()).credentials_version).toBe(1);
  });

  it('the service syncs the seeded mailbox: mail delivered to it becomes an inbound message of the line', async () => {
    m = await createMessagingTestApp({ DATABASE_URL });
    await m.app.get(MailboxSync).tick();
    await dovecot.deliver(INBOX, email(INBOX, 'to the seeded mailbox'));
    const rows = await waitUntil(async () => {
      const found = (await db.query(`SELECT body FROM messages m JOIN lines l ON l.id = m.line_id WHERE l.address = $1 AND m.direction = 'INBOUND'`, [INBOX]))
        .rows;
      return found.length > 0 && found;
    }, 'the delivered message to be synced');
    expect(rows.map((r: { body: string }) => subjectOf(r.body))).toEqual(['to the seeded mailbox']);
  });
});
