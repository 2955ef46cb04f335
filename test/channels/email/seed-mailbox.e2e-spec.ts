import { Client } from 'pg';
import { MailboxSync } from '../../../src/channels/email/mailboxes/mailbox-sync';
import { DovecotServer } from '../../support/dovecot';
import { email, startSmtpServer, subjectOf } from '../../support/mailbox';
import { createMessagingTestApp, MessagingTestApp } from '../../support/messaging-hooks';
import { runSeed, seedDatabase } from '../../support/seed-process';
import { waitUntil } from '../../support/wait';

jest.setTimeout(180_000);

/**
 * The development seed connects the demo email line to a development mail server named by
 * SEED_MAILBOX_* (docs/mailboxes.md, "Development mail server"), as `npm run seed` runs it: a real
 * process (src/seed/seed.ts under ts-node) on a database of this file's own, since the seed only
 * creates the demo org in a database without orgs. A private Dovecot has the user inbox@demo.example.
 */
const PASSWORD = 'demo-inbox-secret';
/** The seed's email line (DEMO in src/seed/seed.ts, which is not imported: importing it runs the seed). */
const INBOX = 'inbox@demo.example';

describe('npm run seed with SEED_MAILBOX_* (a development mail server)', () => {
  let db: Client;
  let dovecot: DovecotServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let m: MessagingTestApp | undefined;
  let vars: Record<string, string>;
  let database: Awaited<ReturnType<typeof seedDatabase>>;

  const mailbox = async () =>
    (
      await db.query(
        `SELECT m.imap_host, m.imap_port, m.imap_tls, m.imap_username, m.smtp_port, m.smtp_username, m.credentials_version
           FROM mailboxes m JOIN lines l ON l.id = m.line_id WHERE l.address = $1`,
        [INBOX],
      )
    ).rows[0];

  beforeAll(async () => {
    database = await seedDatabase('seed');
    db = new Client({ connectionString: database.url });
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
    await database?.drop();
  });

  it('with the mail server down, it still seeds and exits 0, with a one-line warning', async () => {
    await dovecot.stop();
    const run = await runSeed(database.url, vars);
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
    const run = await runSeed(database.url, vars);
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
    const run = await runSeed(database.url, vars);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain(`seed: inbox@demo.example already has a mailbox (IMAP 127.0.0.1:${dovecot.imapPort}); left as it is`);
    expect((await mailbox()).credentials_version).toBe(1);
  });

  it('the service syncs the seeded mailbox: mail delivered to it becomes an inbound message of the line', async () => {
    m = await createMessagingTestApp({ DATABASE_URL: database.url });
    await m.app.get(MailboxSync).tick();
    await dovecot.deliver(INBOX, email(INBOX, 'to the seeded mailbox'));
    // Beside the seed's own demo email (written by the seed, not synced), the delivered one arrives once.
    const subjects = async () =>
      (await db.query(`SELECT body FROM messages m JOIN lines l ON l.id = m.line_id WHERE l.address = $1 AND m.direction = 'INBOUND'`, [INBOX])).rows.map(
        (r: { body: string }) => subjectOf(r.body),
      );
    await waitUntil(async () => (await subjects()).includes('to the seeded mailbox'), 'the delivered message to be synced');
    expect((await subjects()).filter((s) => s === 'to the seeded mailbox')).toHaveLength(1);
  });
});
