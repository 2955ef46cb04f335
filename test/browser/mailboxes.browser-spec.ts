import type { Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { MailboxHealthService } from '../../src/channels/email/mailbox-health/mailbox-health.service';
import { DovecotServer } from '../support/dovecot';
import { createSession, Session } from '../support/session';
import { startLoginSmtp, startSilentServer, TestMailServer } from '../support/smtp';
import { CONTEXT_OPTIONS, expectAccessible, screenshot, useBrowser } from './support/browser';

jest.setTimeout(120_000);

const USER = 'support@mail.example.test';
const IMAP_PASSWORD = 'imap-secret-123';
const SMTP_PASSWORD = 'smtp-secret-456';

/**
 * Settings → Mailboxes in chromium, against a private Dovecot (IMAP), an SMTP server, and a server
 * that never answers (so a login check takes MAIL_CONNECT_TIMEOUT_MS, 3 s, and the button's
 * progress can be seen). The app runs in development with loopback mail servers allowed and no
 * sync of its own.
 */
describe('browser: Settings → Mailboxes', () => {
  const b = useBrowser({
    app: { env: { APP_ENV: 'development', MAIL_ALLOWED_CIDRS: '127.0.0.0/8', MAIL_CONNECT_TIMEOUT_MS: '3000', MAIL_SYNCS_PER_WORKER: '0' } },
  });
  let dovecot: DovecotServer;
  let smtp: TestMailServer;
  let silent: TestMailServer;
  const lineIds: string[] = [];

  beforeAll(async () => {
    [dovecot, smtp, silent] = await Promise.all([
      DovecotServer.start({ [USER]: IMAP_PASSWORD }),
      startLoginSmtp({ [USER]: SMTP_PASSWORD }),
      startSilentServer(),
    ]);
  });
  afterEach(async () => {
    // No mailbox of this file is left for another file's sync to chase once Dovecot is gone.
    await b.app.app.get(DataSource).query('DELETE FROM mailboxes WHERE line_id = ANY ($1::uuid[])', [lineIds]);
  });
  afterAll(async () => {
    await Promise.all([dovecot?.close(), smtp?.close(), silent?.close()]);
  });

  async function signIn(page: Page, session: Session): Promise<void> {
    lineIds.push(...session.lines.map((line) => line.id));
    const link = await b.app.admin.post(`/admin/users/${session.userId}/sign-in-links`).expect(201);
    await page.goto(link.body.url);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/conversations');
  }

  /** Fills one server's fields, found in its fieldset. */
  async function fillServer(page: Page, legend: string, server: { host: string; port: number; tls: string; username: string; password: string }) {
    const group = page.getByRole('group', { name: legend });
    await group.getByLabel('Host').fill(server.host);
    await group.getByLabel('Port').fill(String(server.port));
    await group.getByLabel('TLS').selectOption(server.tls);
    await group.getByLabel('Username').fill(server.username);
    await group.getByLabel('Password').fill(server.password);
  }
  const imap = (over: object = {}) => ({ host: '127.0.0.1', port: dovecot.imapPort, tls: 'none', username: USER, password: IMAP_PASSWORD, ...over });
  const smtpServer = (over: object = {}) => ({ host: '127.0.0.1', port: smtp.port, tls: 'none', username: USER, password: SMTP_PASSWORD, ...over });
  const IMAP = 'IMAP server (incoming mail)';
  const SMTP = 'SMTP server (outgoing mail)';

  it('connect: a slow server shows progress, a refused login and a refused host are explained, then it connects; disconnect', async () => {
    const page = b.page;
    // The refusals this test asks for, and chromium's console line about each.
    b.problems
      .allow(/^HTTP (400|422): POST .*\/settings\/mailboxes\/[0-9a-f-]{36}$/)
      .allow(/^console error: Failed to load resource: .* (400|422) .*\/settings\/mailboxes\/[0-9a-f-]{36}:\d+\)$/);
    const session = await createSession(b.app.admin, { lines: ['EMAIL_ACCOUNT', 'EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    const [first, second] = session.lines;
    await signIn(page, session);

    await page.getByRole('link', { name: 'Mailboxes' }).click();
    await page.getByRole('heading', { level: 1, name: 'Mailboxes' }).waitFor();
    expect(await page.getByRole('row').count()).toBe(3); // the heading row and the two email lines
    await expectAccessible(page, 'mailboxes, none connected');

    await page.getByRole('link', { name: `Connect ${first.address}` }).click();
    await page.getByRole('heading', { level: 1, name: `Connect ${first.address}` }).waitFor();
    expect(await page.getByRole('group', { name: IMAP }).getByLabel('Username').inputValue()).toBe(first.address);
    await expectAccessible(page, 'connect form');
    await screenshot(page, 'mailboxes-connect');

    // An SMTP server that never answers: the button says what is going on while the check waits.
    await fillServer(page, IMAP, imap());
    await fillServer(page, SMTP, smtpServer({ port: silent.port }));
    // The page reports what its form shows while the POST is under way (a locator or evaluate would wait for the navigation to finish).
    const shown: Array<{ button: string | null; disabled: boolean; status: string | null | undefined; busy: string | null }> = [];
    await page.exposeFunction('reportBusy', (state: (typeof shown)[number]) => shown.push(state));
    await page.evaluate(() => {
      const button = document.querySelector<HTMLButtonElement>('button[data-busy-text]')!;
      const report = (window as unknown as { reportBusy: (state: unknown) => void }).reportBusy;
      new MutationObserver(() =>
        report({
          button: button.textContent,
          disabled: button.disabled,
          status: document.querySelector('[data-busy-status]')?.textContent,
          busy: button.form!.getAttribute('aria-busy'),
        }),
      ).observe(button.form!, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    const started = Date.now();
    await page.getByRole('button', { name: 'Connect mailbox' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor({ timeout: 10_000 });
    expect(await alert.textContent()).toMatch(/^The SMTP server did not answer in time: check the host, the port and the TLS setting\. Nothing was saved\./);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_500); // the check waited for MAIL_CONNECT_TIMEOUT_MS
    expect(shown.at(-1)).toEqual({
      button: 'Checking the IMAP and SMTP logins…',
      disabled: true,
      status: 'Checking the IMAP and SMTP logins…',
      busy: 'true',
    });

    // A wrong IMAP password: the sentence at the top; the form is filled in again, but not the passwords.
    await fillServer(page, IMAP, imap({ password: 'bad-password-789' }));
    await fillServer(page, SMTP, smtpServer());
    await page.getByRole('button', { name: 'Connect mailbox' }).click();
    await page.getByRole('alert').getByText('The IMAP server refused the login: check the username and password.').waitFor();
    expect(await page.getByRole('group', { name: SMTP }).getByLabel('Port').inputValue()).toBe(String(smtp.port));
    expect(await page.getByRole('group', { name: IMAP }).getByLabel('Password').inputValue()).toBe('');
    expect(await page.content()).not.toContain('bad-password-789');
    await expectAccessible(page, 'connect form, login refused');
    await screenshot(page, 'mailboxes-error');

    // A host the address policy refuses: the reason under the Host field, which is marked invalid.
    await fillServer(page, IMAP, imap({ host: '10.0.0.5' }));
    await fillServer(page, SMTP, smtpServer());
    await page.getByRole('button', { name: 'Connect mailbox' }).click();
    const host = page.getByRole('group', { name: IMAP }).getByLabel('Host');
    await page.getByText('Host 10.0.0.5 resolves to 10.0.0.5, a private (RFC 1918) address').waitFor();
    expect(await host.getAttribute('aria-invalid')).toBe('true');
    expect(await host.evaluate((input) => document.getElementById(input.getAttribute('aria-describedby')!.split(' ')[0])?.textContent)).toMatch(
      /^Host 10\.0\.0\.5 resolves to/,
    );
    await expectAccessible(page, 'connect form, host refused');
    await screenshot(page, 'mailboxes-field-error');

    // Connected: back on the list with a notice; the sync's health shows once it reports.
    await fillServer(page, IMAP, imap());
    await fillServer(page, SMTP, smtpServer());
    await page.getByRole('button', { name: 'Connect mailbox' }).click();
    await page.waitForURL('**/settings/mailboxes?done=connected');
    await b.app.app.get(MailboxHealthService).recordSync(first.id, { ok: true });
    await page.reload();
    const headings = await page.locator('table.data thead th').allTextContents();
    /** A row read by its column headings, as a person reads it; a cell across two columns is read under each. */
    const row = async (address: string) => {
      const cells = await page
        .getByRole('row', { name: new RegExp(address.replace(/\./g, '\\.')) })
        .locator('th, td')
        .evaluateAll((elements) => elements.flatMap((cell) => Array((cell as HTMLTableCellElement).colSpan).fill((cell as HTMLElement).innerText)));
      return Object.fromEntries(headings.map((heading, i) => [heading, String(cells[i]).replace(/\s+/g, ' ').trim()]));
    };
    expect(await row(first.address)).toEqual({
      'Email account': first.address,
      IMAP: `127.0.0.1:${dovecot.imapPort} no TLS ${USER}`,
      SMTP: `127.0.0.1:${smtp.port} no TLS ${USER}`,
      Sync: expect.stringMatching(/^Syncing Last synced \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/),
      Actions: `Change ${first.address} Disconnect ${first.address}`, // each link names its line for a screen reader
    });
    expect(await row(second.address)).toEqual({
      'Email account': second.address,
      IMAP: 'Not connected', // one cell across IMAP and SMTP
      SMTP: 'Not connected',
      Sync: '—',
      Actions: `Connect ${second.address}`,
    });
    expect(await page.content()).not.toContain(IMAP_PASSWORD);
    await expectAccessible(page, 'mailboxes, one connected');
    await screenshot(page, 'mailboxes');

    // Disconnect, after a confirmation.
    await page.getByRole('link', { name: `Disconnect ${first.address}` }).click();
    await expectAccessible(page, 'disconnect');
    await screenshot(page, 'mailboxes-disconnect');
    await page.getByRole('button', { name: 'Disconnect mailbox' }).click();
    await page.getByText('The mailbox was disconnected and its stored passwords deleted.').waitFor();
    expect((await row(first.address)).IMAP).toBe('Not connected');
  });

  it('works without script: the form posts and the browser lands on the list', async () => {
    const context = await b.browser.newContext({ ...CONTEXT_OPTIONS, baseURL: b.baseUrl, javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      const session = await createSession(b.app.admin, { lines: ['EMAIL_ACCOUNT'] });
      await signIn(page, session);
      await page.goto(`/settings/mailboxes/${session.lines[0].id}`);
      await fillServer(page, IMAP, imap());
      await fillServer(page, SMTP, smtpServer());
      await page.getByRole('button', { name: 'Connect mailbox' }).click();
      await page.waitForURL('**/settings/mailboxes?done=connected');
      await page.getByText('Both servers accepted the login and the mailbox is connected').waitFor();
    } finally {
      await context.close();
    }
  });

  it('a MEMBER has no Mailboxes link, and the page is a 403 page', async () => {
    const page = b.page;
    b.problems.allow(/\b403\b/); // the refusal this test asks for
    const owner = await createSession(b.app.admin, { lines: ['EMAIL_ACCOUNT'] });
    await signIn(page, await createSession(b.app.admin, { orgId: owner.orgId, role: 'MEMBER', lines: [] }));
    expect(await page.getByRole('link', { name: 'Mailboxes' }).count()).toBe(0);
    const res = await page.goto('/settings/mailboxes');
    expect(res?.status()).toBe(403);
    await page.getByText('Only an OWNER or ADMIN of the organization may connect and disconnect its mailboxes.').waitFor();
  });
});
