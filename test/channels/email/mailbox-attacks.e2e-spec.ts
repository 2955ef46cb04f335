import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { EMAIL_INBOUND_MAX_BYTES } from '../../../src/channels/email/email-ingest.controller';
import { EmailIngestService } from '../../../src/channels/email/email-ingest.service';
import { MailboxSync } from '../../../src/channels/email/mailboxes/mailbox-sync';
import { MailServers } from '../../../src/channels/email/mailboxes/mail-servers';
import { createTestApp, TestApp } from '../../support/app';
import { freePort } from '../../support/delivery';
import { DovecotServer } from '../../support/dovecot';
import { connectMailbox, email, startSmtpServer, subjectOf } from '../../support/mailbox';
import { createMessagingTestApp, Hook, MessagingTestApp } from '../../support/messaging-hooks';
import { createSession, Session } from '../../support/session';
import { sleep, waitUntil } from '../../support/wait';
import { PAGE_ORIGIN, signInBrowser } from '../../support/web';

jest.setTimeout(120_000);

/**
 * Independent review of the mailbox features (docs/mailboxes.md, docs/web.md "Mailboxes"): each
 * test states what the docs promise and fails on the code as it is.
 */

const PASSWORD = 'mailbox-secret-1';
const MAIL_ENV = { MAIL_SYNC_RETRY_MAX_SECONDS: '1', MAIL_AUTH_FAILURES_BEFORE_UNHEALTHY: '3', MAIL_SYNC_INITIAL_DAYS: '7' };

describe('attacks: connecting (admin API and pages)', () => {
  let t: TestApp;
  let db: DataSource;
  beforeAll(async () => {
    t = await createTestApp({ env: { APP_ENV: 'development', MAIL_CONNECT_TIMEOUT_MS: '3000', MAIL_SYNCS_PER_WORKER: '0' } });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await t?.close();
  });

  const settings = (port: number, password = 'any-password') => ({ host: '127.0.0.1', port, tls: 'none', username: 'u@mail.example.test', password });

  it('a line deleted while its logins are being checked gets no mailbox: no 500, no sealed passwords outliving the line', async () => {
    const s = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT'] });
    const lineId = s.lines[0].id;
    const servers = t.app.get(MailServers);
    // Both logins succeed, slowly (a real server may take up to MAIL_CONNECT_TIMEOUT_MS to answer).
    let started!: () => void;
    const checking = new Promise<void>((resolve) => (started = resolve));
    let finish!: () => void;
    const answered = new Promise<void>((resolve) => (finish = resolve));
    const imap = jest.spyOn(servers, 'verifyImap').mockImplementation(async () => {
      started();
      await answered;
    });
    const smtp = jest.spyOn(servers, 'verifySmtp').mockImplementation(async () => answered);
    try {
      const put = t.admin.put(`/admin/lines/${lineId}/mailbox`, { imap: settings(1993), smtp: settings(1587) }).then((res) => res);
      await checking;
      // Meanwhile an operator deletes the line: its mailbox (none yet) is deleted with it.
      await t.admin.delete(`/admin/lines/${lineId}`).expect(204);
      finish();
      const res = await put;
      // The doc: "Deleting the line deletes its mailbox too"; passwords must not outlive it.
      const left = await db.query(`SELECT line_id FROM mailboxes WHERE line_id = $1`, [lineId]);
      expect({ status: res.status, storedForDeletedLine: left.length }).toEqual({ status: 404, storedForDeletedLine: 0 });
    } finally {
      imap.mockRestore();
      smtp.mockRestore();
      await db.query(`DELETE FROM mailboxes WHERE line_id = $1`, [lineId]);
    }
  });

  it('the page accepts the passwords the API accepts: a 1024-character password (the maxlength) is checked, not refused as too large (413)', async () => {
    const s = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT'] });
    const lineId = s.lines[0].id;
    const browser = await signInBrowser(t, s.userId);
    const closed = await freePort(); // nothing listens: the login check answers 422 "could not be reached"
    // A browser percent-encodes every byte of a non-ASCII character: '€' is 9 bytes in the body.
    const password = '€'.repeat(1024);
    const apiProblems = await t.admin.put(`/admin/lines/${lineId}/mailbox`, { imap: settings(closed, password), smtp: settings(closed, password) });
    expect(apiProblems.status).toBe(422); // the API takes this password to the login check
    const res = await t
      .http()
      .post(`/settings/mailboxes/${lineId}`)
      .set('Cookie', browser.cookie)
      .set('Origin', PAGE_ORIGIN)
      .type('form')
      .send({
        _csrf: browser.csrf,
        'imap.host': '127.0.0.1',
        'imap.port': String(closed),
        'imap.tls': 'none',
        'imap.username': 'u@mail.example.test',
        'imap.password': password,
        'smtp.host': '127.0.0.1',
        'smtp.port': String(closed),
        'smtp.tls': 'none',
        'smtp.username': 'u@mail.example.test',
        'smtp.password': password,
      });
    expect(res.status).toBe(422);
  });
});

describe('attacks: the sync', () => {
  let dovecot: DovecotServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let m: MessagingTestApp;
  const lineIds: string[] = [];
  const sessions: Session[] = [];

  beforeAll(async () => {
    smtp = await startSmtpServer();
    m = await createMessagingTestApp(MAIL_ENV);
    for (let i = 0; i < 5; i += 1) sessions.push(await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] }));
    dovecot = await DovecotServer.start(Object.fromEntries(sessions.map((s) => [s.lines[0].address, PASSWORD])));
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    for (const lineId of lineIds) await m?.admin.delete(`/admin/lines/${lineId}/mailbox`);
    await m?.close();
    await smtp?.close();
    await dovecot?.close();
  });

  /** A new email line whose mailbox is a new Dovecot user, not connected yet. */
  async function newMailbox(): Promise<{ s: Session; lineId: string; address: string; connect: () => Promise<void>; stored: () => Promise<string[]> }> {
    const s = sessions.shift()!;
    const [line] = s.lines;
    lineIds.push(line.id);
    return {
      s,
      lineId: line.id,
      address: line.address,
      connect: () => connectMailbox(m.admin, line.id, { imapPort: dovecot.imapPort, smtpPort: smtp.port, username: line.address, password: PASSWORD }),
      stored: async () =>
        (await m.db.query(`SELECT body FROM messages WHERE line_id = $1 AND direction = 'INBOUND' ORDER BY created_at`, [line.id])).map((r: { body: string }) =>
          subjectOf(r.body),
        ),
    };
  }

  it('a message that arrives while the sync catches up is imported within seconds (not at the next IDLE restart, 10 minutes later)', async () => {
    const box = await newMailbox();
    // More than one FETCH batch (25) to catch up on.
    for (let i = 0; i < 30; i += 1) await dovecot.deliver(box.address, email(box.address, `backlog ${i}`));
    const ingest = m.app.get(EmailIngestService);
    const original = ingest.receiveFromMailbox.bind(ingest);
    let delivered = false;
    const spy = jest.spyOn(ingest, 'receiveFromMailbox').mockImplementation(async (raw, line) => {
      if (!delivered && line === box.address) {
        delivered = true;
        // New mail while the first batch is being imported.
        await dovecot.deliver(box.address, email(box.address, 'arrived during catch-up'));
      }
      return original(raw, line);
    });
    try {
      await box.connect();
      await m.app.get(MailboxSync).tick();
      await waitUntil(async () => (await box.stored()).length >= 30, 'the backlog to be imported', { timeoutMs: 30_000 });
      // IDLE brings new mail "within a second or two of its arrival".
      await waitUntil(async () => (await box.stored()).includes('arrived during catch-up'), 'the message that arrived during catch-up', {
        timeoutMs: 10_000,
      });
    } finally {
      spy.mockRestore();
    }
  });

  it('a message the inbound path cannot store (a Message-ID too long to index) is skipped: the mail after it still comes in', async () => {
    const box = await newMailbox();
    await box.connect();
    await m.app.get(MailboxSync).tick();
    await waitUntil(() => m.app.get(MailboxSync).syncing.includes(box.lineId), 'the mailbox to be synced');
    await sleep(500);
    await dovecot.deliver(box.address, email(box.address, 'poison', `<${randomBytes(3000).toString('hex')}@partner.example>`));
    await dovecot.deliver(box.address, email(box.address, 'the next message'));
    await waitUntil(async () => (await box.stored()).includes('the next message'), 'the message after the poison one', { timeoutMs: 15_000 });
  });

  it('a message whose import keeps failing (not a refusal, not an outage) is skipped after 3 tries: the mail after it still comes in', async () => {
    const box = await newMailbox();
    await box.connect();
    await m.app.get(MailboxSync).tick();
    await waitUntil(() => m.app.get(MailboxSync).syncing.includes(box.lineId), 'the mailbox to be synced');
    const ingest = m.app.get(EmailIngestService);
    const original = ingest.receiveFromMailbox.bind(ingest);
    let tries = 0;
    const spy = jest.spyOn(ingest, 'receiveFromMailbox').mockImplementation(async (raw, line) => {
      if (raw.toString('utf8').includes('Subject: cursed')) {
        tries += 1;
        throw new Error('a bug in the inbound path');
      }
      return original(raw, line);
    });
    try {
      await dovecot.deliver(box.address, email(box.address, 'cursed'));
      await dovecot.deliver(box.address, email(box.address, 'after the cursed one'));
      await waitUntil(async () => (await box.stored()).includes('after the cursed one'), 'the message after the cursed one', { timeoutMs: 30_000 });
      expect(tries).toBe(3);
      expect(await box.stored()).not.toContain('cursed');
    } finally {
      spy.mockRestore();
    }
  });

  it('a Bcc-only message (To: undisclosed-recipients:;) belongs to the mailbox\'s line "whatever its headers say" and is imported', async () => {
    const box = await newMailbox();
    await box.connect();
    await m.app.get(MailboxSync).tick();
    await waitUntil(() => m.app.get(MailboxSync).syncing.includes(box.lineId), 'the mailbox to be synced');
    await sleep(500);
    const bcc = email(box.address, 'sent to us by Bcc').replace(`To: ${box.address}`, 'To: undisclosed-recipients:;');
    await dovecot.deliver(box.address, bcc);
    await dovecot.deliver(box.address, email(box.address, 'addressed to us'));
    await waitUntil(async () => (await box.stored()).includes('addressed to us'), 'the addressed message', { timeoutMs: 15_000 });
    expect(await box.stored()).toEqual(['sent to us by Bcc', 'addressed to us']);
  });

  it('a message larger than the inbound path accepts (EMAIL_INBOUND_MAX_BYTES, 413 there) is skipped, not fetched into memory and imported', async () => {
    const box = await newMailbox();
    await box.connect();
    await m.app.get(MailboxSync).tick();
    await waitUntil(() => m.app.get(MailboxSync).syncing.includes(box.lineId), 'the mailbox to be synced');
    await sleep(500);
    const ingest = m.app.get(EmailIngestService);
    const sizes: number[] = [];
    const original = ingest.receiveFromMailbox.bind(ingest);
    const spy = jest.spyOn(ingest, 'receiveFromMailbox').mockImplementation(async (raw, line) => {
      if (line === box.address) sizes.push(raw.length);
      return original(raw, line);
    });
    try {
      const line = `${'a'.repeat(76)}\r\n`;
      const huge = email(box.address, 'huge') + line.repeat(Math.ceil((EMAIL_INBOUND_MAX_BYTES + 1024 * 1024) / line.length));
      await dovecot.deliver(box.address, huge);
      await dovecot.deliver(box.address, email(box.address, 'small after the huge one'));
      await waitUntil(async () => (await box.stored()).includes('small after the huge one'), 'the small message', { timeoutMs: 30_000 });
      expect(Math.max(...sizes)).toBeLessThanOrEqual(EMAIL_INBOUND_MAX_BYTES);
      expect(await box.stored()).toEqual(['small after the huge one']);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('attacks: health events', () => {
  const LIMIT = 1;
  let m: MessagingTestApp;
  let dovecot: DovecotServer;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let s: Session;
  let hook: Hook;

  beforeAll(async () => {
    m = await createMessagingTestApp(MAIL_ENV);
    s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
    dovecot = await DovecotServer.start({ [s.lines[0].address]: PASSWORD }, { maxConnectionsPerUserIp: LIMIT });
    smtp = await startSmtpServer();
    hook = await Hook.register(m, s.apiKey, { events: ['email_account.health_changed'], mode: 'verbose' });
  });
  afterAll(async () => {
    await m?.admin.delete(`/admin/lines/${s.lines[0].id}/mailbox`);
    await m?.close();
    await smtp?.close();
    await dovecot?.close();
  });

  it('a throttled mailbox whose password then stops working says AUTH (the state that needs a person) in an event', async () => {
    const address = s.lines[0].address;
    await connectMailbox(m.admin, s.lines[0].id, { imapPort: dovecot.imapPort, smtpPort: smtp.port, username: address, password: PASSWORD });
    const sync = m.app.get(MailboxSync);
    await sync.tick();
    await waitUntil(
      async () => (await m.db.query(`SELECT 1 FROM email_account_health WHERE line_id = $1 AND last_synced_at IS NOT NULL`, [s.lines[0].id])).length,
      'the first sync',
    );
    await sync.stop();
    const held = await dovecot.client(address); // the only session the server allows
    await sync.tick();
    const [throttled] = await hook.waitFor(1, 'email_account.health_changed');
    expect(throttled.data.health).toMatchObject({ status: 'unhealthy', errorKind: 'RATE_LIMIT' });

    // The person changes the password at the provider: the sync's logins are now refused, and after
    // MAIL_AUTH_FAILURES_BEFORE_UNHEALTHY it stops for good until the connection is changed.
    dovecot.setPassword(address, 'changed-by-the-user');
    await waitUntil(
      async () => (await m.db.query(`SELECT 1 FROM mailboxes WHERE line_id = $1 AND auth_stopped_version IS NOT NULL`, [s.lines[0].id])).length,
      'the sync to stop at AUTH',
      { timeoutMs: 30_000 },
    );
    await held.logout();
    const [row] = await m.db.query(`SELECT error_kind FROM email_account_health WHERE line_id = $1`, [s.lines[0].id]);
    expect(row.error_kind).toBe('AUTH');
    // A webhook consumer must learn that the sync stopped and needs new credentials.
    await hook.waitFor(2, 'email_account.health_changed', 5_000);
    expect(hook.events('email_account.health_changed').map((e) => e.data.health.errorKind)).toEqual(['RATE_LIMIT', 'AUTH']);
  });
});
