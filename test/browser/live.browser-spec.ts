import type { Page } from 'playwright-core';
import { inboundSms, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { privateQueuePrefix } from '../support/test-env';
import { expectAccessible, signInAs, useBrowser } from './support/browser';

jest.setTimeout(90_000);

/**
 * Live updates in chromium (docs/web.md, "Live updates"): an open Conversations page and an open
 * thread show new inbound messages without a reload, a polite status says so, message content
 * stays text, and a MEMBER's open page never shows another line's thread.
 * It drives the Conversations and thread pages (#live-threads, #live-messages).
 */
describe('live updates in a browser', () => {
  const b = useBrowser({ app: { env: { QUEUE_PREFIX: privateQueuePrefix('live-browser') } } });

  const signIn = (page: Page, session: Session) => signInAs(b.app, page, session.userId);

  /** Marks the loaded document: still marked later means the page was updated in place, not reloaded. */
  const mark = (page: Page) => page.evaluate(() => ((window as unknown as { liveMark: number }).liveMark = 1));
  const stillMarked = (page: Page) => page.evaluate(() => (window as unknown as { liveMark?: number }).liveMark === 1);
  /** The page's stream is open (the client opened its EventSource and the server answered). */
  const streamOpen = (page: Page) => page.waitForResponse((res) => res.url().includes('/live/events') && res.status() === 200);

  it('an inbound SMS appears in an open Conversations page and an open thread without reload, as text', async () => {
    const page = b.page;
    const owner = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    await signIn(page, owner);
    const partner = partnerPhone();
    const first = await inboundSms(b.app, owner.lines[0].address, partner, 'first words before the page');

    const opened = streamOpen(page);
    await page.goto('/conversations');
    await opened;
    await mark(page);
    await inboundSms(b.app, owner.lines[0].address, partnerPhone(), 'live-one arrived while the list was open');
    await page.locator('#live-threads').getByText('live-one arrived while the list was open').waitFor();
    expect(await stillMarked(page)).toBe(true);
    await page.getByRole('status').filter({ hasText: '1 new message' }).waitFor({ state: 'attached' });
    await expectAccessible(page, 'conversations after a live update');

    const threadOpened = streamOpen(page);
    await page.goto(`/conversations/${first.threadId}`);
    await threadOpened;
    await mark(page);
    const before = await page.locator('#live-messages li.message').count();
    await inboundSms(b.app, owner.lines[0].address, partner, 'live-two <script>window.pwned = 1</script> <b>not bold</b>');
    await page.locator('#live-messages').getByText('live-two <script>window.pwned = 1</script> <b>not bold</b>').waitFor();
    expect(await page.locator('#live-messages li.message').count()).toBe(before + 1);
    expect(await stillMarked(page)).toBe(true);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('#live-messages b').count()).toBe(0);
  });

  it('a thread shown again for a refused form (its address the POST route) still updates live', async () => {
    const page = b.page;
    const owner = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    await signIn(page, owner);
    const partner = partnerPhone();
    const { threadId } = await inboundSms(b.app, owner.lines[0].address, partner, 'a question before the refused form');
    await page.goto(`/conversations/${threadId}`);
    // A label of 101 characters, past the field's own limit in the browser: the server refuses it and shows the thread again.
    await page.locator('#label').evaluate((input) => input.removeAttribute('maxlength'));
    await page.locator('#label').fill('x'.repeat(101));
    b.problems.allow(/\b400\b/); // the refusal this test asks for
    const opened = streamOpen(page);
    const [refused] = await Promise.all([
      page.waitForResponse((res) => res.url().endsWith(`/conversations/${threadId}/labels`) && res.request().method() === 'POST'),
      page.getByRole('button', { name: 'Add' }).click(),
    ]);
    expect(refused.status()).toBe(400);
    await opened;
    expect(page.url()).toMatch(new RegExp(`/conversations/${threadId}/labels$`));
    await page.getByText('label must NOT have more than 100 characters').waitFor();
    await mark(page);
    await inboundSms(b.app, owner.lines[0].address, partner, 'live-three after the refused form');
    await page.locator('#live-messages').getByText('live-three after the refused form').waitFor();
    expect(await stillMarked(page)).toBe(true);
  });

  it("a MEMBER's open Conversations page never shows another line's thread", async () => {
    const page = b.page;
    const owner = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    const member = await createSession(b.app.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    await signIn(page, member);
    const opened = streamOpen(page);
    await page.goto('/conversations');
    await opened;
    await inboundSms(b.app, owner.lines[0].address, partnerPhone(), 'hidden-from-member on the owner line');
    // a later message on the member's own line shows; the earlier one never did
    await inboundSms(b.app, member.lines[0].address, partnerPhone(), 'sentinel on the member line');
    await page.locator('#live-threads').getByText('sentinel on the member line').waitFor();
    expect(await page.getByText('hidden-from-member').count()).toBe(0);
  });
});
