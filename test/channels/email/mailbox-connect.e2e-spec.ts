import { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { DataSource } from 'typeorm';
import { SecretBox } from '../../../src/common/secret-box';
import { createTestApp, TestApp } from '../../support/app';
import { freePort } from '../../support/delivery';
import { DovecotServer } from '../../support/dovecot';
import { createSession, Session } from '../../support/session';

const USER = 'support@mail.example.test';
const IMAP_PASSWORD = 'imap-secret-123';
const SMTP_PASSWORD = 'smtp-secret-456';

/**
 * PUT /admin/lines/:lineId/mailbox against a real Dovecot (IMAP) and a real SMTP server
 * (smtp-server): a connection is saved only after both logins work, passwords are sealed and
 * never shown, and every refusal names the server and why.
 */
describe('connecting a mailbox (PUT /admin/lines/:lineId/mailbox)', () => {
  let dovecot: DovecotServer;
  let smtp: SMTPServer;
  let smtpPort: number;
  let t: TestApp;
  let s: Session;
  let lineId: string;

  beforeAll(async () => {
    dovecot = await DovecotServer.start({ [USER]: IMAP_PASSWORD });
    smtp = new SMTPServer({
      authOptional: false,
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onAuth: (auth, _session, callback) =>
        auth.username === USER && auth.password === SMTP_PASSWORD
          ? callback(null, { user: auth.username })
          : callback(new Error('Invalid username or password')),
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    smtpPort = (smtp.server.address() as AddressInfo).port;
    t = await createTestApp({ env: { APP_ENV: 'development', MAIL_CONNECT_TIMEOUT_MS: '3000' } });
    s = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    lineId = s.lines[0].id;
  });
  afterAll(async () => {
    await t?.close();
    await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
    await dovecot?.close();
  });

  const imap = (over: object = {}) => ({ host: '127.0.0.1', port: dovecot.imapPort, tls: 'none', username: USER, password: IMAP_PASSWORD, ...over });
  const smtpSettings = (over: object = {}) => ({ host: '127.0.0.1', port: smtpPort, tls: 'none', username: USER, password: SMTP_PASSWORD, ...over });
  const connect = (body: object, line = lineId) => t.admin.put(`/admin/lines/${line}/mailbox`, body);
  /** The stored connection (not the sync's bookkeeping, which the app's own sync moves meanwhile). */
  const stored = async () =>
    (
      await t.app.get(DataSource).query(
        `SELECT imap_host, imap_port, imap_tls, imap_username, imap_password_sealed, smtp_host, smtp_port, smtp_tls, smtp_username,
                  smtp_password_sealed, credentials_version, updated_at FROM mailboxes WHERE line_id = $1`,
        [lineId],
      )
    )[0];

  it('saves the connection once both servers accept the login; passwords are sealed and never shown', async () => {
    const res = await connect({ imap: imap(), smtp: smtpSettings() }).expect(200);
    expect(res.body).toEqual({
      lineId,
      emailAddress: s.lines[0].address,
      imap: { host: '127.0.0.1', port: dovecot.imapPort, tls: 'none', username: USER },
      smtp: { host: '127.0.0.1', port: smtpPort, tls: 'none', username: USER },
      credentialsVersion: 1,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(res.text).not.toContain(IMAP_PASSWORD);
    expect(res.text).not.toContain(SMTP_PASSWORD);

    const row = await stored();
    expect(row.imap_password_sealed).not.toContain(IMAP_PASSWORD);
    expect(row.imap_password_sealed).toMatch(/^v2\./);
    const box = t.app.get(SecretBox);
    expect(box.open(row.imap_password_sealed)).toBe(IMAP_PASSWORD);
    expect(box.open(row.smtp_password_sealed)).toBe(SMTP_PASSWORD);

    const read = await t.admin.get(`/admin/lines/${lineId}/mailbox`).expect(200);
    expect(read.body).toEqual(res.body);
    expect(read.text).not.toContain('password');
  });

  it('a connection given again replaces the stored one and counts a new credentials version', async () => {
    const res = await connect({ imap: imap(), smtp: smtpSettings() }).expect(200);
    expect(res.body.credentialsVersion).toBe(2);
  });

  it.each([
    [
      'a wrong IMAP password',
      () => ({ imap: imap({ password: 'bad-password-789' }), smtp: smtpSettings() }),
      'imap',
      /^imap: 127\.0\.0\.1:\d+ refused the login of support@mail\.example\.test/,
    ],
    [
      'a wrong SMTP password',
      () => ({ imap: imap(), smtp: smtpSettings({ password: 'bad-password-789' }) }),
      'smtp',
      /^smtp: 127\.0\.0\.1:\d+ refused the login of support@mail\.example\.test/,
    ],
  ])('%s is 422 naming the server, and nothing changes', async (_name, body, field, message) => {
    const before = await stored();
    const res = await connect(body()).expect(422);
    expect(res.body).toMatchObject({ statusCode: 422, field, message: expect.stringMatching(message) });
    expect(res.text).not.toContain('bad-password-789');
    expect(await stored()).toEqual(before);
  });

  it('a server that is not there is 422 "could not be reached"', async () => {
    const res = await connect({ imap: imap({ port: await freePort() }), smtp: smtpSettings() }).expect(422);
    expect(res.body).toMatchObject({ field: 'imap', message: expect.stringMatching(/^imap: 127\.0\.0\.1:\d+ could not be reached/) });
  });

  it('implicit TLS to a plain-text server fails the TLS handshake: 422 naming tls', async () => {
    const res = await connect({ imap: imap(), smtp: smtpSettings({ tls: 'implicit' }) }).expect(422);
    expect(res.body).toMatchObject({
      field: 'smtp',
      message: expect.stringMatching(/^smtp: (the TLS handshake with 127\.0\.0\.1:\d+ failed|127\.0\.0\.1:\d+ did not answer)/),
    });
  });

  it.each([
    [{ imap: undefined }, 'imap', /^imap/],
    [{ imap: { port: 70000 } }, 'imap.port', /imap\.port must not be greater than 65535/],
    [{ smtp: { tls: 'ssl' } }, 'smtp.tls', /smtp\.tls must be one of the following values: implicit, starttls, none/],
    [{ imap: { host: 'imap example' } }, 'imap.host', /imap\.host must be a host name or an IPv4 address/],
    [{ smtp: { password: '' } }, 'smtp.password', /smtp\.password must be longer than or equal to 1 characters/],
    [{ imap: { extra: true } }, 'imap.extra', /imap\.extra/],
  ])('bad input %j is 400 naming the field', async (change, field, message) => {
    const body: Record<string, unknown> = { imap: imap(), smtp: smtpSettings() };
    for (const [server, over] of Object.entries(change)) body[server] = over === undefined ? undefined : { ...(body[server] as object), ...over };
    const res = await connect(body).expect(400);
    expect(res.body).toMatchObject({ field, message: expect.stringMatching(message) });
  });

  it('a phone line has no mailbox (400 naming lineId); an unknown line is 404', async () => {
    const phone = await connect({ imap: imap(), smtp: smtpSettings() }, s.lines[1].id).expect(400);
    expect(phone.body).toMatchObject({ field: 'lineId', message: expect.stringContaining('only EMAIL_ACCOUNT lines have a mailbox') });
    await connect({ imap: imap(), smtp: smtpSettings() }, '00000000-0000-4000-8000-000000000000').expect(404);
  });

  it('DELETE disconnects: the credentials are gone, and a second DELETE is 404', async () => {
    await t.admin.delete(`/admin/lines/${lineId}/mailbox`).expect(204);
    expect(await stored()).toBeUndefined();
    const gone = await t.admin.get(`/admin/lines/${lineId}/mailbox`).expect(404);
    expect(gone.body).toMatchObject({ field: 'lineId', message: `line ${lineId} has no mailbox connected` });
    await t.admin.delete(`/admin/lines/${lineId}/mailbox`).expect(404);
  });

  it('deleting the line deletes its mailbox: its sealed passwords do not outlive it', async () => {
    const line = (await t.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'EMAIL_ACCOUNT', address: `gone.${Date.now()}@mail.example.test` }).expect(201))
      .body;
    await t.admin.put(`/admin/lines/${line.id}/mailbox`, { imap: imap(), smtp: smtpSettings() }).expect(200);
    await t.admin.delete(`/admin/lines/${line.id}`).expect(204);
    expect(await t.app.get(DataSource).query(`SELECT 1 FROM mailboxes WHERE line_id = $1`, [line.id])).toEqual([]);
  });

  describe('the address policy and plain text', () => {
    let strict: TestApp;
    let production: TestApp;
    beforeAll(async () => {
      strict = await createTestApp({ env: { APP_ENV: 'development', MAIL_ALLOWED_CIDRS: 'none' } });
      production = await createTestApp({ env: { APP_ENV: 'production' } });
    });
    afterAll(async () => {
      await strict?.close();
      await production?.close();
    });

    it('a server on a private address is refused before any connection (400 naming the host)', async () => {
      const res = await strict.admin.put(`/admin/lines/${lineId}/mailbox`, { imap: imap(), smtp: smtpSettings() }).expect(400);
      expect(res.body).toMatchObject({
        field: 'imap.host',
        message: 'imap.host 127.0.0.1 resolves to 127.0.0.1, a loopback address; mail servers must be public (or in MAIL_ALLOWED_CIDRS)',
      });
      const smtpOnly = await strict.admin
        .put(`/admin/lines/${lineId}/mailbox`, { imap: imap({ host: '8.8.8.8', port: 1 }), smtp: smtpSettings({ host: '10.0.0.5' }) })
        .expect(400);
      expect(smtpOnly.body).toMatchObject({ field: 'smtp.host', message: expect.stringContaining('a private (RFC 1918) address') });
    });

    it('in production, tls none is refused: it would send the password in clear', async () => {
      const res = await production.admin.put(`/admin/lines/${lineId}/mailbox`, { imap: imap(), smtp: smtpSettings({ tls: 'starttls' }) }).expect(400);
      expect(res.body).toMatchObject({ field: 'imap.tls', message: expect.stringContaining('allowed only in development') });
    });
  });
});
