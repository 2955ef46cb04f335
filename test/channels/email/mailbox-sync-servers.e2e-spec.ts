import { MailboxSync } from '../../../src/channels/email/mailboxes/mailbox-sync';
import { DovecotServer, DovecotOptions } from '../../support/dovecot';
import { connectMailbox, email, startSmtpServer, subjectOf } from '../../support/mailbox';
import { createMessagingTestApp, Hook } from '../../support/messaging-hooks';
import { createSession } from '../../support/session';
import { sleep, waitUntil } from '../../support/wait';

jest.setTimeout(120_000);

const PASSWORD = 'mailbox-secret-1';
// The shortest MAIL_SYNC_POLL_SECONDS the configuration accepts.
const POLL_SECONDS = 5;
const MAIL_ENV = { MAIL_SYNC_RETRY_MAX_SECONDS: '1', MAIL_SYNC_POLL_SECONDS: String(POLL_SECONDS) };

/** One app, one email account line and its mailbox on a Dovecot started with `options`. */
async function mailboxOn(options: DovecotOptions) {
  const m = await createMessagingTestApp(MAIL_ENV);
  const s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
  const [line] = s.lines;
  const dovecot = await DovecotServer.start({ [line.address]: PASSWORD }, options);
  const smtp = await startSmtpServer();
  const hook = await Hook.register(m, s.apiKey, { events: ['email_account.health_changed'], mode: 'verbose' });
  return {
    m,
    s,
    line,
    dovecot,
    hook,
    connect: () => connectMailbox(m.admin, line.id, { imapPort: dovecot.imapPort, smtpPort: smtp.port, username: line.address, password: PASSWORD }),
    /** The last successful sync (a poll is one), as the app recorded it. */
    lastSyncedAt: async (): Promise<Date | undefined> =>
      (await m.db.query(`SELECT last_synced_at FROM email_account_health WHERE line_id = $1`, [line.id]))[0]?.last_synced_at ?? undefined,
    stored: async (): Promise<Array<{ subject: string; createdAt: Date }>> =>
      (await m.db.query(`SELECT body, created_at FROM messages WHERE line_id = $1 AND direction = 'INBOUND' ORDER BY created_at`, [line.id])).map(
        (r: { body: string; created_at: Date }) => ({ subject: subjectOf(r.body), createdAt: r.created_at }),
      ),
    health: () => hook.events('email_account.health_changed').map((e) => [e.data.health.status, e.data.health.errorKind]),
    close: async () => {
      await m.admin.delete(`/admin/lines/${line.id}/mailbox`);
      await m.close();
      await smtp.close();
      await dovecot.close();
    },
  };
}

/** Servers that behave otherwise than the Dovecot of test/channels/email/mailbox-sync.e2e-spec.ts (docs/mailboxes.md, "Sync"). */
describe('mailbox sync: a server without IDLE', () => {
  let t: Awaited<ReturnType<typeof mailboxOn>>;
  beforeAll(async () => {
    t = await mailboxOn({ withoutCapabilities: ['IDLE'] });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is polled every MAIL_SYNC_POLL_SECONDS: new mail comes in at the next poll, not before', async () => {
    const probe = await t.dovecot.client(t.line.address);
    expect(probe.capabilities.has('IDLE')).toBe(false);
    await probe.logout();
    await t.connect();
    await t.m.app.get(MailboxSync).tick();
    // Every poll is a successful sync and moves last_synced_at: the second one shows the polling.
    const first = await waitUntil(t.lastSyncedAt, 'the first sync');
    const polled = await waitUntil(
      async () => {
        const at = await t.lastSyncedAt();
        return at && at > first && at;
      },
      'a poll after the first sync',
      { timeoutMs: 3 * POLL_SECONDS * 1000 },
    );
    // Delivered just after a poll: only the next one, POLL_SECONDS after it, can bring it in.
    await t.dovecot.deliver(t.line.address, email(t.line.address, 'between two polls'));
    await sleep((POLL_SECONDS * 1000) / 2);
    expect(await t.stored()).toEqual([]);
    const [stored] = await waitUntil(async () => (await t.stored()).length === 1 && t.stored(), 'the message to come in by a poll', {
      timeoutMs: 3 * POLL_SECONDS * 1000,
    });
    expect(stored.subject).toBe('between two polls');
    expect(stored.createdAt.getTime() - polled.getTime()).toBeGreaterThanOrEqual(POLL_SECONDS * 1000 - 250);
    expect(t.health()).toEqual([]);
  });
});

describe('mailbox sync: a server that refuses logins with [LIMIT] (Dovecot past mail_max_userip_connections)', () => {
  const LIMIT = 2;
  const REFUSED = 'Maximum number of connections from user+IP exceeded';
  let t: Awaited<ReturnType<typeof mailboxOn>>;
  beforeAll(async () => {
    t = await mailboxOn({ maxConnectionsPerUserIp: LIMIT });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is RATE_LIMIT once however many logins it refuses, never AUTH, and recovered when it lets the sync in', async () => {
    await t.connect();
    const sync = t.m.app.get(MailboxSync);
    await sync.tick();
    await waitUntil(t.lastSyncedAt, 'the first sync');
    // This worker stops syncing (its session logs out and its lease is released, as at shutdown), so
    // that the test decides when it logs in again; then every session the server allows is taken.
    await sync.stop();
    const held = [];
    for (let i = 0; i < LIMIT; i += 1) held.push(await t.dovecot.client(t.line.address));

    await sync.tick();
    // Refused, then retried every second (MAIL_SYNC_RETRY_MAX_SECONDS), and refused again: more
    // often than the refused passwords that make AUTH (MAIL_AUTH_FAILURES_BEFORE_UNHEALTHY, 3).
    await waitUntil(
      () => t.dovecot.logLines(REFUSED).length >= 4,
      () => `4 refused logins, got ${t.dovecot.logLines(REFUSED).length}`,
      {
        timeoutMs: 15_000,
      },
    );
    const [event] = await t.hook.waitFor(1, 'email_account.health_changed');
    expect(event.data.health).toMatchObject({ status: 'unhealthy', errorKind: 'RATE_LIMIT' });
    expect(event.data.health.error).toContain(REFUSED);

    for (const client of held) await client.logout();
    await t.hook.waitFor(2, 'email_account.health_changed');
    expect(t.health()).toEqual([
      ['unhealthy', 'RATE_LIMIT'],
      ['recovered', null],
    ]);
  });
});
