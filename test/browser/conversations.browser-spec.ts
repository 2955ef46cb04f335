import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { PDF_LINES } from '../fixtures/attachments/make-fixtures';
import { mixedEmail } from '../fixtures/emails/make-invite-email';
import { CarrierStandIn, startCarrier } from '../support/messaging-hooks';
import { toolOk } from '../support/mcp';
import { createSession, Session, uniquePhone } from '../support/session';
import { INGEST_TOKEN, privateQueuePrefix } from '../support/test-env';
import { waitUntil } from '../support/wait';
import { expectAccessible, PHONE_VIEWPORT, screenshot, signInAs, useBrowser } from './support/browser';

jest.setTimeout(120_000);

/**
 * Conversations and a thread in chromium: read a thread, reply from the keyboard with the button
 * pressed twice (the carrier stand-in, SMS_CARRIER_URL, is handed the SMS once), an email with
 * a PDF whose extracted text shows on the thread, and markup a sender wrote (display name, subject,
 * body, file name and text, an HTML-only body) shown as text and never run. Screenshots at desktop
 * and phone width. (A MEMBER of another line: inbox-access.browser-spec.ts.)
 */
describe('conversations pages in a browser', () => {
  /** The carrier stand-in: every SMS the service hands it. */
  let carrier: CarrierStandIn;
  const env: Record<string, string> = { APP_ENV: 'development', QUEUE_PREFIX: privateQueuePrefix('conversations-browser') };

  // Before useBrowser's own beforeAll: the app starts with the carrier's URL.
  beforeAll(async () => {
    carrier = await startCarrier();
    env.SMS_CARRIER_URL = carrier.url;
  });
  afterAll(() => carrier.close());
  const b = useBrowser({ app: { env } });

  async function signIn(page: Page, lines: Array<'EMAIL_ACCOUNT' | 'PHONE_NUMBER'>): Promise<Session> {
    const session = await createSession(b.app.admin, { lines });
    await signInAs(b.app, page, session.userId);
    return session;
  }

  async function inboundSms(to: string, from: string, body: string): Promise<string> {
    const res = await b.app
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to, from, body, providerMessageId: `p-${randomUUID()}` })
      .expect(201);
    return res.body.threadId;
  }

  /** An inbound email (a whole RFC 5322 message) through the ingest route; its thread's id. */
  async function inboundEmail(raw: Buffer): Promise<string> {
    const res = await b.app
      .http()
      .post('/ingest/email/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('Content-Type', 'message/rfc822')
      .send(raw)
      .expect(201);
    return res.body.threadId;
  }

  /** Reloads until `text` shows on the page (bounded): the page itself has no live update without the stream. */
  async function reloadUntil(page: Page, text: string | RegExp): Promise<void> {
    await waitUntil(
      async () => {
        if ((await page.getByText(text).count()) > 0) return true;
        await page.reload();
        return false;
      },
      `the page to show ${String(text)}`,
      { timeoutMs: 45_000, intervalMs: 300 },
    );
  }

  it('reads a thread and replies from the keyboard; pressed twice, the carrier gets the SMS once', async () => {
    const page = b.page;
    const session = await signIn(page, ['PHONE_NUMBER']);
    const phone = session.lines[0].address;
    const partner = uniquePhone();
    await inboundSms(phone, partner, 'Hi! Is the table for two still free at 8?');
    const threadId = await inboundSms(phone, partner, 'We could also come at 8:30.');
    await inboundSms(phone, uniquePhone(), 'Do you deliver on Sundays?');
    // A label and an agent's draft awaiting approval on the thread: its chip and marker in the list.
    await toolOk(b.app, session.apiKey, 'label_thread', { threadId, add: [{ name: 'booking' }] });
    const agentId = (await b.app.admin.post(`/admin/lines/${session.lines[0].id}/agents`, { name: 'Front desk', mode: 'DRAFT' }).expect(201)).body.id;
    await b.app
      .http()
      .post(`/api/agents/${agentId}/turns`)
      .set('Authorization', `Bearer ${session.apiKey}`)
      .send({ threadId, body: 'Yes, 8:30 works.' })
      .expect(201);

    await page.getByRole('link', { name: 'Conversations' }).click();
    await page.waitForURL('**/conversations');
    await expect(page.getByRole('heading', { level: 1, name: 'Conversations' }).isVisible()).resolves.toBe(true);
    await expect(page.locator('#live-threads .thread-row').count()).resolves.toBe(2);
    const labelled = page.locator('#live-threads .thread-row', { hasText: 'We could also come at 8:30.' });
    await labelled.getByText('booking').waitFor();
    await labelled.getByText('Awaiting approval').waitFor();
    await expectAccessible(page, 'Conversations');
    await screenshot(page, 'conversations');
    await screenshot(page, 'conversations-phone', { viewport: PHONE_VIEWPORT });
    await expectAccessible(page, 'Conversations at phone width');

    await page.getByLabel('Search messages').fill('table');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect(page.locator('#live-threads mark').first().textContent()).resolves.toBe('table');
    await expectAccessible(page, 'Conversations search');
    await screenshot(page, 'conversations-search');
    await screenshot(page, 'conversations-search-phone', { viewport: PHONE_VIEWPORT });

    await page.goto('/conversations');
    await page.getByRole('link', { name: /We could also come at 8:30/ }).click();
    await page.waitForURL(`**/conversations/${threadId}`);
    const messages = page.locator('#live-messages li.message');
    await expect(messages.count()).resolves.toBe(2);
    await expect(messages.first().textContent()).resolves.toContain('Is the table for two still free at 8?');
    await expectAccessible(page, 'Thread');

    // Keyboard: to the reply box, type, Tab to the button, Enter twice.
    await page.getByLabel(/^SMS to/).focus();
    await page.keyboard.type('Yes, see you at 8:30!');
    await page.keyboard.press('Tab');
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe('Send reply');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter').catch(() => undefined);
    await page.waitForURL(`**/conversations/${threadId}?done=sent`);
    await page.getByRole('status').filter({ hasText: 'Your reply is queued' }).waitFor();

    await waitUntil(() => carrier.carried.some((m) => m.body === 'Yes, see you at 8:30!'), 'the carrier to get the reply', { timeoutMs: 20_000 });
    await reloadUntil(page, /^Sent$|^Delivered$/);
    expect(carrier.carried.filter((m) => m.body === 'Yes, see you at 8:30!')).toEqual([{ from: phone, to: partner, body: 'Yes, see you at 8:30!' }]);

    // Labels and notes from the keyboard-usable forms.
    await page.getByLabel('Add a label').fill('booking');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByLabel('Name').fill('Ada Lovelace');
    await page.getByRole('button', { name: 'Save contact' }).click();
    await page.getByLabel('Notes').fill('Prefers the window table.');
    await page.getByRole('button', { name: 'Save notes' }).click();
    await page.getByRole('status').filter({ hasText: 'The notes were saved.' }).waitFor();
    await expect(page.getByRole('button', { name: 'Remove label booking' }).isVisible()).resolves.toBe(true);
    await expectAccessible(page, 'Thread with a reply, a label and notes');
    await screenshot(page, 'thread');
    await screenshot(page, 'thread-phone', { viewport: PHONE_VIEWPORT });
    await expectAccessible(page, 'Thread at phone width');
    expect(carrier.carried.filter((m) => m.body === 'Yes, see you at 8:30!')).toHaveLength(1);
  });

  it('an email with a PDF shows its extracted text, and the file downloads through its signed link', async () => {
    const page = b.page;
    const session = await signIn(page, ['EMAIL_ACCOUNT']);
    const pdf = readFileSync(join(__dirname, '../fixtures/attachments/invoice.pdf'));
    const threadId = await inboundEmail(
      mixedEmail(session.lines[0].address, [{ filename: 'invoice.pdf', mimeType: 'application/pdf', content: pdf }], {
        messageId: `<invoice-${randomUUID()}@partner.example>`,
        subject: 'Invoice 4521',
        text: 'Hello, the invoice for this quarter is attached.',
      }),
    );
    await page.goto(`/conversations/${threadId}`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Invoice 4521');
    await reloadUntil(page, PDF_LINES[0]);
    await expect(page.locator('pre.extracted-text').textContent()).resolves.toContain(PDF_LINES[1]);
    await expect(page.locator('.message-head .sender').first().textContent()).resolves.toContain('Maria Lopez');

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'invoice.pdf' }).click()]);
    expect(download.suggestedFilename()).toBe('invoice.pdf');
    expect(readFileSync((await download.path())!)).toEqual(pdf);
    await expectAccessible(page, 'Thread with a PDF');
    await screenshot(page, 'thread-email');
    await screenshot(page, 'thread-email-phone', { viewport: PHONE_VIEWPORT });
  });

  /**
   * Records the page's Content-Security-Policy violations in `window.cspViolations` from before
   * any script of the page runs: markup that got into the DOM (an inline script, an `onerror`
   * handler) would be blocked by the CSP and show here, as well as in the console.
   */
  async function recordCspViolations(page: Page): Promise<() => Promise<string[]>> {
    await page.context().addInitScript(() => {
      const w = window as unknown as { cspViolations: string[] };
      w.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e) => w.cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample}`));
    });
    return () => page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations);
  }

  /** Nothing the sender wrote ran or became an element: no `window.pwned*`, no <script> or <img> in main, no CSP violation. */
  async function expectInert(page: Page, violations: () => Promise<string[]>, where: string): Promise<void> {
    const pwned = await page.evaluate(() => Object.keys(window).filter((k) => k.startsWith('pwned')));
    const elements = await page.locator('main script, main img, main b').count();
    expect({ where, pwned, elements, csp: await violations() }).toEqual({ where, pwned: [], elements: 0, csp: [] });
    expect(b.problems.list).toEqual([]);
  }

  it('markup in a display name, subject, body, file name, extracted text or search is shown as text, never run', async () => {
    const page = b.page;
    const violations = await recordCspViolations(page);
    const session = await signIn(page, ['EMAIL_ACCOUNT']);
    const word = `quokka${randomBytes(4).toString('hex')}`;
    const markup = (name: string) => `<script>window.pwned${name}=1</script><img src=x onerror=window.pwned${name}Img=1>`;
    const name = `${markup('Name')} Mallory`;
    const subject = `Invoice ${markup('Subject')}`;
    const body = `Body ${word} ${markup('Body')}`;
    const filename = `${markup('File')}.txt`;
    const fileText = `File ${word} ${markup('Extracted')}`;
    const threadId = await inboundEmail(
      mixedEmail(session.lines[0].address, [{ filename, mimeType: 'text/plain', content: Buffer.from(fileText) }], {
        messageId: `<markup-${randomUUID()}@partner.example>`,
        from: `"${name}" <mallory@partner.example>`,
        subject,
        text: body,
      }),
    );

    // The thread: each field as the sender wrote it, once the file's text is extracted.
    await page.goto(`/conversations/${threadId}`);
    await reloadUntil(page, fileText);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(subject);
    const message = page.locator('#live-messages li.message').first();
    await expect(message.locator('.sender').textContent()).resolves.toContain(name);
    await expect(message.locator('.message-subject').textContent()).resolves.toBe(subject);
    // (the text part ends with a line break)
    await expect(message.locator('.message-body').textContent()).resolves.toBe(`${body}\n`);
    await message.getByRole('link', { name: filename }).waitFor();
    await expect(message.locator('pre.extracted-text').textContent()).resolves.toBe(fileText);
    await expect(page.locator('.contact-name').textContent()).resolves.toBe(name);
    await expectInert(page, violations, 'thread');

    // The list: the display name and the subject.
    await page.goto('/conversations');
    const row = page.locator('#live-threads .thread-row').filter({ hasText: subject });
    await expect(row.locator('.partner').textContent()).resolves.toBe(name);
    await expectInert(page, violations, 'list');

    // A search for the word: the body's hit and the file's, names and snippets as text, the word marked.
    await page.getByLabel('Search messages').fill(word);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(`**/conversations?q=${word}`);
    const hits = page.locator('#live-threads .search-hits .thread-row');
    await hits.nth(1).waitFor();
    expect(await hits.locator('.partner').allTextContents()).toEqual([name, name]);
    expect(await hits.locator('mark').allTextContents()).toEqual([word, word]);
    expect(await hits.locator('.preview').allTextContents()).toEqual([subject, subject]);
    // The snippets are ts_headline's: it leaves tag-shaped text out (docs/mcp.md, "Snippets"); the file's name is the page's, whole.
    const snippets = (await hits.locator('.snippet').allTextContents()).sort();
    expect(snippets).toEqual([`In ${filename}: File ${word}`, `Invoice window.pwnedSubject=1 Body ${word}`]);
    await expectInert(page, violations, 'search results');

    // The query itself, echoed in the search box and the no-hit sentence.
    const query = `${markup('Query')} nothing${word}`;
    await page.getByLabel('Search messages').fill(query);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText(`No messages match “${query}”.`).waitFor();
    await expect(page.getByLabel('Search messages').inputValue()).resolves.toBe(query);
    await expectInert(page, violations, 'search without hits');

    // An HTML-only email: shown as its sanitised text (scripts and images dropped, tags gone, entities as text).
    const html = [
      '<html><body>',
      `<p>Hello <b>bold ${word}</b></p>`,
      '<script>window.pwnedHtml=1</script>',
      '<img src=x onerror=window.pwnedHtmlImg=1>',
      '<p>&lt;script&gt;window.pwnedHtmlText=1&lt;/script&gt;</p>',
      '</body></html>',
    ].join('\r\n');
    const htmlOnly = await inboundEmail(
      Buffer.from(
        [
          'From: "Newsletter" <news@partner.example>',
          `To: <${session.lines[0].address}>`,
          `Subject: HTML only ${word}`,
          'Date: Sun, 22 Nov 2026 09:12:00 +0000',
          `Message-ID: <html-${randomUUID()}@partner.example>`,
          'MIME-Version: 1.0',
          'Content-Type: text/html; charset=UTF-8',
          '',
          html,
          '',
        ].join('\r\n'),
      ),
    );
    await page.goto(`/conversations/${htmlOnly}`);
    const htmlBody = page.locator('#live-messages li.message .message-body');
    await htmlBody.waitFor();
    const shown = await htmlBody.textContent();
    expect(shown).toContain(`Hello bold ${word}`);
    expect(shown).toContain('<script>window.pwnedHtmlText=1</script>');
    expect(shown).not.toContain('pwnedHtml=1');
    expect(shown).not.toContain('onerror');
    await expectInert(page, violations, 'HTML-only email');
  });
});
