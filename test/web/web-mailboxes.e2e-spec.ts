import { DataSource } from 'typeorm';
import { SecretBox } from '../../src/common/secret-box';
import { MailboxHealthService } from '../../src/channels/email/mailbox-health/mailbox-health.service';
import { createTestApp, TestApp } from '../support/app';
import { DovecotServer } from '../support/dovecot';
import { createSession, Session } from '../support/session';
import { startLoginSmtp, TestMailServer } from '../support/smtp';
import { PAGE_ORIGIN, postForm, signInBrowser } from '../support/web';

const USER = 'support@mail.example.test';
const IMAP_PASSWORD = 'imap-secret-123';
const SMTP_PASSWORD = 'smtp-secret-456';
const WRONG_PASSWORD = 'bad-password-789';

/**
 * Settings → Mailboxes (docs/web.md, "Mailboxes") against a real Dovecot (IMAP) and a real SMTP
 * server: the page connects through MailboxesService as PUT /admin/lines/:lineId/mailbox does, so a
 * connection is saved only after both logins work. The app runs in development with loopback mail
 * servers allowed (MAIL_ALLOWED_CIDRS) and no sync of its own (MAIL_SYNCS_PER_WORKER=0), so the
 * health shown is the one the test reports.
 */
describe('web: the mailboxes pages', () => {
  let dovecot: DovecotServer;
  let smtp: TestMailServer;
  let t: TestApp;
  let db: DataSource;
  const lineIds: string[] = [];

  beforeAll(async () => {
    [dovecot, smtp] = await Promise.all([DovecotServer.start({ [USER]: IMAP_PASSWORD }), startLoginSmtp({ [USER]: SMTP_PASSWORD })]);
    t = await createTestApp({
      env: { APP_ENV: 'development', MAIL_ALLOWED_CIDRS: '127.0.0.0/8', MAIL_CONNECT_TIMEOUT_MS: '3000', MAIL_SYNCS_PER_WORKER: '0' },
    });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    // No mailbox of this file is left for another file's sync to chase once Dovecot is gone.
    await db?.query('DELETE FROM mailboxes WHERE line_id = ANY ($1::uuid[])', [lineIds]);
    await t?.close();
    await smtp?.close();
    await dovecot?.close();
  });

  interface Browser {
    cookie: string;
    csrf: string;
    session: Session;
  }

  async function signIn(session: Session): Promise<Browser> {
    lineIds.push(...session.lines.map((line) => line.id));
    return { ...(await signInBrowser(t, session.userId)), session };
  }

  const owner = async () => signIn(await createSession(t.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] }));
  const get = (b: Browser, path: string) => t.http().get(path).set('Cookie', b.cookie);
  const post = (b: Browser, path: string, fields: Record<string, string> = {}) => postForm(t, b, path, fields);

  /** The form as a browser posts it: every field of both servers, the test's servers and passwords unless changed. */
  const fields = (over: Record<string, string> = {}) => ({
    'imap.host': '127.0.0.1',
    'imap.port': String(dovecot.imapPort),
    'imap.tls': 'none',
    'imap.username': USER,
    'imap.password': IMAP_PASSWORD,
    'smtp.host': '127.0.0.1',
    'smtp.port': String(smtp.port),
    'smtp.tls': 'none',
    'smtp.username': USER,
    'smtp.password': SMTP_PASSWORD,
    ...over,
  });

  const stored = async (lineId: string) =>
    (
      await db.query(
        `SELECT imap_host, imap_port, imap_tls, imap_username, imap_password_sealed, smtp_host, smtp_port, smtp_tls, smtp_username,
                smtp_password_sealed, credentials_version FROM mailboxes WHERE line_id = $1`,
        [lineId],
      )
    )[0] as Record<string, unknown> | undefined;

  /** Connects the owner's email line through the page. */
  async function connected(b: Browser): Promise<string> {
    const lineId = b.session.lines[0].id;
    await post(b, `/settings/mailboxes/${lineId}`, fields()).expect(303);
    return lineId;
  }

  /** An address as the list shows it: it may break after its @. */
  const listed = (address: string) => address.replace('@', '@<wbr/>');

  const noPasswords = (html: string) => {
    for (const password of [IMAP_PASSWORD, SMTP_PASSWORD, WRONG_PASSWORD]) expect(html).not.toContain(password);
  };

  it("lists the org's email account lines (not its phone lines) with Connect; the nav shows Mailboxes to an OWNER", async () => {
    const b = await owner();
    const [email, phone] = b.session.lines;
    const list = await get(b, '/settings/mailboxes').expect(200);
    expect(list.headers['cache-control']).toBe('no-store');
    expect(list.text).toContain('<a href="/settings/mailboxes" aria-current="page">Mailboxes</a>');
    expect(list.text).toContain(`<th scope="row">${listed(email.address)}</th>`);
    expect(list.text).toContain('Not connected');
    expect(list.text).toContain(`<a href="/settings/mailboxes/${email.id}">Connect<span class="visually-hidden"> ${email.address}</span></a>`);
    expect(list.text).not.toContain(`/disconnect`);
    expect(list.text).not.toContain(phone.address);

    const form = await get(b, `/settings/mailboxes/${email.id}`).expect(200);
    expect(form.text).toContain(`<h1>Connect ${email.address}</h1>`);
    expect(form.text).toContain('<legend>IMAP server (incoming mail)</legend>');
    expect(form.text).toContain('<legend>SMTP server (outgoing mail)</legend>');
    expect(form.text).toMatch(/<input id="imap-port" name="imap.port" required[^>]* value="993"/);
    expect(form.text).toMatch(/<input id="smtp-port" name="smtp.port" required[^>]* value="465"/);
    expect(form.text).toMatch(new RegExp(`<input id="imap-username" name="imap.username" required[^>]* value="${email.address}"`));
    expect(form.text).toContain('data-busy-text="Checking the IMAP and SMTP logins…"');
    expect(form.text).toContain('<option value="starttls">STARTTLS</option>');
  });

  it('an OWNER connects: 303 to the list with a notice; the row is stored with sealed passwords that no page shows', async () => {
    const b = await owner();
    const lineId = b.session.lines[0].id;
    const res = await post(b, `/settings/mailboxes/${lineId}`, fields()).expect(303);
    expect(res.headers.location).toBe('/settings/mailboxes?done=connected');

    const row = await stored(lineId);
    expect(row).toMatchObject({
      imap_host: '127.0.0.1',
      imap_port: dovecot.imapPort,
      imap_tls: 'none',
      imap_username: USER,
      smtp_host: '127.0.0.1',
      smtp_port: smtp.port,
      smtp_tls: 'none',
      smtp_username: USER,
      credentials_version: 1,
    });
    const box = t.app.get(SecretBox);
    expect(String(row!.imap_password_sealed)).not.toContain(IMAP_PASSWORD);
    expect(box.open(String(row!.imap_password_sealed))).toBe(IMAP_PASSWORD);
    expect(box.open(String(row!.smtp_password_sealed))).toBe(SMTP_PASSWORD);

    const list = await get(b, res.headers.location).expect(200);
    expect(list.text).toContain('Both servers accepted the login and the mailbox is connected');
    expect(list.text).toContain(`<code>127.0.0.1:${dovecot.imapPort}</code>`);
    expect(list.text).toContain(`<code>127.0.0.1:${smtp.port}</code>`);
    expect(list.text).toContain(listed(USER));
    expect(list.text).toContain('Waiting for the first sync');
    expect(list.text).toContain(`<a href="/settings/mailboxes/${lineId}">Change<span`);
    expect(list.text).toContain(`<a class="danger-link" href="/settings/mailboxes/${lineId}/disconnect">Disconnect<span`);
    noPasswords(list.text);

    // The form of a connected line: filled in, but never a password.
    const form = await get(b, `/settings/mailboxes/${lineId}`).expect(200);
    expect(form.text).toContain(`<h1>Change the mailbox of ${b.session.lines[0].address}</h1>`);
    expect(form.text).toMatch(new RegExp(`<input id="imap-port" name="imap.port" required[^>]* value="${dovecot.imapPort}"`));
    expect(form.text).toMatch(/<option value="none" selected>No TLS \(development only\)<\/option>/);
    expect(form.text).toMatch(/<input id="imap-password" name="imap.password" required[^>]* type="password" value maxlength/);
    noPasswords(form.text);

    // Connecting again replaces the connection (a new credentials version), as the admin PUT does.
    await post(b, `/settings/mailboxes/${lineId}`, fields()).expect(303);
    expect((await stored(lineId))?.credentials_version).toBe(2);
  });

  it("shows the sync's health: syncing with the last sync, or why it stopped", async () => {
    const b = await owner();
    const lineId = await connected(b);
    const health = t.app.get(MailboxHealthService);
    await health.recordSync(lineId, { ok: true });
    expect((await get(b, '/settings/mailboxes').expect(200)).text).toMatch(/Syncing<\/span><p class="hint">Last synced <time datetime="[^"]+">/);
    await health.recordSync(lineId, { ok: false, errorKind: 'AUTH', error: 'the IMAP server refused the login: [AUTHENTICATIONFAILED]' });
    const list = await get(b, '/settings/mailboxes').expect(200);
    expect(list.text).toContain('Login refused: the sync stopped until the connection is changed');
    expect(list.text).toContain('<p class="hint">the IMAP server refused the login: [AUTHENTICATIONFAILED]</p>');
  });

  it.each([
    ['IMAP', 'imap.password', 'The IMAP server refused the login: check the username and password.'],
    ['SMTP', 'smtp.password', 'The SMTP server refused the login: check the username and password.'],
  ])(
    'a wrong %s password is 422 with a sentence naming the server; the form comes back without passwords; nothing is stored',
    async (_server, field, sentence) => {
      const b = await owner();
      const lineId = b.session.lines[0].id;
      const res = await post(b, `/settings/mailboxes/${lineId}`, fields({ [field]: WRONG_PASSWORD, 'imap.port': ` ${dovecot.imapPort} ` })).expect(422);
      expect(res.text).toContain(`<div class="notice error" role="alert"><p><strong>${sentence}</strong> Nothing was saved.</p>`);
      expect(res.text).toMatch(/<p class="detail">Details: (imap|smtp): 127\.0\.0\.1:\d+ refused the login of support@mail\.example\.test/);
      expect(res.text).toMatch(new RegExp(`<input id="imap-port" name="imap.port" required[^>]* value=" ${dovecot.imapPort} "`));
      expect(res.text).toMatch(new RegExp(`<input id="smtp-username" name="smtp.username" required[^>]* value="${USER}"`));
      noPasswords(res.text);
      expect(await stored(lineId)).toBeUndefined();
    },
  );

  it('a failed login leaves a connected mailbox as it was', async () => {
    const b = await owner();
    const lineId = await connected(b);
    const before = await stored(lineId);
    const res = await post(b, `/settings/mailboxes/${lineId}`, fields({ 'imap.password': WRONG_PASSWORD })).expect(422);
    expect(res.text).toContain('Nothing was saved: the mailbox keeps its current connection.');
    expect(await stored(lineId)).toEqual(before);
  });

  it('bad input is 400 next to each field it names, the form filled in again without passwords; nothing is stored', async () => {
    const b = await owner();
    const lineId = b.session.lines[0].id;
    const res = await post(b, `/settings/mailboxes/${lineId}`, fields({ 'imap.port': '70000', 'smtp.host': 'smtp example', 'smtp.tls': 'ssl' })).expect(400);
    expect(res.text).toContain('<p class="field-error" id="imap-port-error">Port must not be greater than 65535.</p>');
    expect(res.text).toMatch(
      /<input id="imap-port" name="imap.port" required aria-invalid="true" aria-describedby="imap-port-error imap-port-hint"[^>]* value="70000"/,
    );
    expect(res.text).toContain('<p class="field-error" id="smtp-host-error">Host must be a host name or an IPv4 address.</p>');
    expect(res.text).toContain('<p class="field-error" id="smtp-tls-error">TLS must be one of the following values: implicit, starttls, none.</p>');
    expect(res.text).not.toContain('id="imap-host-error"');
    expect(res.text).toMatch(/<input id="smtp-host" name="smtp.host" required aria-invalid="true"[^>]* value="smtp example"/);
    noPasswords(res.text);

    // Rules of the service (the address policy) are shown the same way.
    const privateHost = await post(b, `/settings/mailboxes/${lineId}`, fields({ 'imap.host': '10.0.0.5' })).expect(400);
    expect(privateHost.text).toContain(
      '<p class="field-error" id="imap-host-error">Host 10.0.0.5 resolves to 10.0.0.5, a private (RFC 1918) address; mail servers must be public (or in MAIL_ALLOWED_CIDRS).</p>',
    );
    const noPassword = await post(b, `/settings/mailboxes/${lineId}`, fields({ 'smtp.password': '', 'imap.port': 'abc' })).expect(400);
    expect(noPassword.text).toContain('<p class="field-error" id="smtp-password-error">Password must be longer than or equal to 1 characters.</p>');
    expect(noPassword.text).toContain('<p class="field-error" id="imap-port-error">Port must be an integer number.</p>');
    expect(await stored(lineId)).toBeUndefined();
  });

  it('an ADMIN manages the mailboxes too; a MEMBER gets 403 pages, no Mailboxes link, and changes nothing', async () => {
    const b = await owner();
    const lineId = await connected(b);
    const admin = await signIn(await createSession(t.admin, { orgId: b.session.orgId, role: 'ADMIN', lines: [] }));
    const adminList = await get(admin, '/settings/mailboxes').expect(200);
    expect(adminList.text).toContain(listed(b.session.lines[0].address));
    expect(adminList.text).toContain('href="/settings/mailboxes"');

    const member = await signIn(await createSession(t.admin, { orgId: b.session.orgId, role: 'MEMBER', lines: [] }));
    const before = await stored(lineId);
    const home = await get(member, '/settings/api-keys').expect(200);
    expect(home.text).not.toContain('/settings/mailboxes');
    for (const path of ['/settings/mailboxes', `/settings/mailboxes/${lineId}`, `/settings/mailboxes/${lineId}/disconnect`]) {
      const res = await get(member, path).expect(403);
      expect(res.text).toContain('Only an OWNER or ADMIN of the organization may connect and disconnect its mailboxes.');
    }
    await post(member, `/settings/mailboxes/${lineId}`, fields({ 'imap.password': WRONG_PASSWORD })).expect(403);
    await post(member, `/settings/mailboxes/${lineId}/disconnect`).expect(403);
    expect(await stored(lineId)).toEqual(before);
  });

  it("another org's line is a 404 page; a phone line a 400 page; a malformed id a 400 page", async () => {
    const b = await owner();
    const lineId = await connected(b);
    const before = await stored(lineId);
    const other = await owner();
    for (const path of [`/settings/mailboxes/${lineId}`, `/settings/mailboxes/${lineId}/disconnect`]) {
      const res = await get(other, path).expect(404);
      expect(res.text).toContain(`Line ${lineId} not found.`);
    }
    await post(other, `/settings/mailboxes/${lineId}`, fields()).expect(404);
    await post(other, `/settings/mailboxes/${lineId}/disconnect`).expect(404);
    expect(await stored(lineId)).toEqual(before);

    const phone = await get(b, `/settings/mailboxes/${b.session.lines[1].id}`).expect(400);
    expect(phone.text).toContain('only EMAIL_ACCOUNT lines have a mailbox');
    const malformed = await get(b, '/settings/mailboxes/not-a-line').expect(400);
    expect(malformed.text).toContain('LineId must be a UUID.');
  });

  it('disconnect: a confirmation page, then POST deletes the connection and answers 303 to the list', async () => {
    const b = await owner();
    const lineId = await connected(b);
    const confirm = await get(b, `/settings/mailboxes/${lineId}/disconnect`).expect(200);
    expect(confirm.text).toContain(`Disconnect the mailbox of <strong>${b.session.lines[0].address}</strong>?`);
    expect(confirm.text).toContain(`<form method="post" action="/settings/mailboxes/${lineId}/disconnect" class="actions">`);

    const res = await post(b, `/settings/mailboxes/${lineId}/disconnect`).expect(303);
    expect(res.headers.location).toBe('/settings/mailboxes?done=disconnected');
    expect(await stored(lineId)).toBeUndefined();
    const list = await get(b, res.headers.location).expect(200);
    expect(list.text).toContain('The mailbox was disconnected and its stored passwords deleted.');
    expect(list.text).toContain('Not connected');

    // Nothing is left to disconnect: the page goes back to the list, the POST is a 404 page.
    await get(b, `/settings/mailboxes/${lineId}/disconnect`).expect(303).expect('Location', '/settings/mailboxes');
    const again = await post(b, `/settings/mailboxes/${lineId}/disconnect`).expect(404);
    expect(again.text).toContain(`Line ${lineId} has no mailbox connected.`);
  });

  it('a POST from another site, or without the CSRF token, is refused (403) and changes nothing', async () => {
    const b = await owner();
    const lineId = await connected(b);
    const before = await stored(lineId);
    const forged = (path: string, body: Record<string, string>, origin: string) =>
      t.http().post(path).set('Cookie', b.cookie).set('Origin', origin).type('form').send(body);
    for (const path of [`/settings/mailboxes/${lineId}`, `/settings/mailboxes/${lineId}/disconnect`]) {
      await forged(path, { _csrf: b.csrf, ...fields({ 'imap.password': WRONG_PASSWORD }) }, 'https://evil.example').expect(403);
      await forged(path, fields({ 'imap.password': WRONG_PASSWORD }), PAGE_ORIGIN).expect(403);
      await forged(path, { _csrf: 'not-the-token', ...fields() }, PAGE_ORIGIN).expect(403);
    }
    expect(await stored(lineId)).toEqual(before);
  });
});
