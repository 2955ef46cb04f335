import { randomBytes, randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { AttachmentUrls } from '../../src/common/attachment-urls';
import { toolError, toolOk } from '../support/mcp';
import { partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { INGEST_TOKEN, privateQueuePrefix } from '../support/test-env';
import { waitUntil } from '../support/wait';
import { signInAs, useBrowser } from './support/browser';

jest.setTimeout(120_000);

/**
 * The people's inbox in chromium (docs/web.md, "Conversations" and "Approvals"): a MEMBER signed
 * in sees nothing of another line of their org, by the Conversations list, a search, the thread's
 * URL typed in, the Approvals page or an attachment's download link. Each check has a sentinel on
 * the member's own line that does show, so a page that showed nothing at all would fail it.
 * (An open page's live updates: test/browser/live.browser-spec.ts.)
 */
describe("a MEMBER's inbox in a browser", () => {
  const b = useBrowser({ app: { env: { QUEUE_PREFIX: privateQueuePrefix('inbox-access-browser') } } });

  const signIn = (page: Page, session: Session) => signInAs(b.app, page, session.userId);

  /** An inbound SMS through the ingest route, with a text file when `file` is given. */
  async function inbound(to: string, body: string, file?: { filename: string; content: string }): Promise<{ threadId: string; attachmentIds: string[] }> {
    const media = file ? [{ filename: file.filename, mimeType: 'text/plain', contentBase64: Buffer.from(file.content).toString('base64') }] : undefined;
    const res = await b.app
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to, from: partnerPhone(), body, providerMessageId: `access-${randomUUID()}`, media })
      .expect(201);
    return res.body;
  }

  /** A DRAFT agent on the line drafts `body` on the thread (the agent runtime's REST route, with the line member's key). */
  async function draft(session: Session, threadId: string, body: string): Promise<string> {
    const agent = await b.app.admin.post(`/admin/lines/${session.lines[0].id}/agents`, { name: 'Front desk', mode: 'DRAFT' }).expect(201);
    const res = await b.app
      .http()
      .post(`/api/agents/${agent.body.id}/turns`)
      .set('Authorization', `Bearer ${session.apiKey}`)
      .send({ threadId, body })
      .expect(201);
    return res.body.turn.id;
  }

  /** Opens `path` expecting the 404 page a person sees: its status, its heading, and none of `secret`. */
  async function expectNotFoundPage(page: Page, path: string, secret: string): Promise<string> {
    const res = await page.goto(path);
    expect(res?.status()).toBe(404);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Not found');
    const text = await page.locator('body').innerText();
    expect(text).not.toContain(secret);
    return text;
  }

  it('sees no thread, search hit, draft or file of another line: not by list, search, URL or download link', async () => {
    const page = b.page;
    const owner = await createSession(b.app.admin, { lines: ['PHONE_NUMBER'] });
    const member = await createSession(b.app.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const word = `okapi${randomBytes(4).toString('hex')}`;
    const fileContent = `owner ledger ${word}\n`;
    const ownerThread = await inbound(owner.lines[0].address, `owner secret ${word}`, { filename: `ledger-${word}.txt`, content: fileContent });
    const memberThread = await inbound(member.lines[0].address, `member note ${word}`);
    const ownerTurn = await draft(owner, ownerThread.threadId, `owner draft ${word}`);
    await draft(member, memberThread.threadId, `member draft ${word}`);
    // Someone on the line does see all of it: the owner's own link to the file serves its bytes.
    const ownerLink = new URL((await toolOk(b.app, owner.apiKey, 'read_attachment', { attachmentId: ownerThread.attachmentIds[0] })).downloadUrl);
    const served = await b.app
      .http()
      .get(ownerLink.pathname + ownerLink.search)
      .expect(200);
    expect(served.text).toBe(fileContent);
    // ...and finds the word in the message and, once its text is extracted, in the file.
    await waitUntil(
      async () => {
        const found = await toolOk(b.app, owner.apiKey, 'search_messages', { query: word });
        return (
          found.hits
            .map((h: { matchedIn: string }) => h.matchedIn)
            .sort()
            .join() === 'attachment,body'
        );
      },
      "the owner's search to find the message and the file",
      { timeoutMs: 30_000, intervalMs: 250 },
    );

    await signIn(page, member);
    const notFound = (path: string) => new RegExp(`^(HTTP 404: GET |console error: Failed to load resource: .* 404 .*)${b.baseUrl}${path}\\b`);
    b.problems.allow(notFound(`/conversations/${ownerThread.threadId}`)).allow(notFound(`/approvals/${ownerTurn}/edit`));

    // The list: the member's thread, not the owner's.
    await page.goto('/conversations');
    const threads = page.locator('#live-threads');
    await threads.getByText(`member note ${word}`).waitFor();
    expect(await threads.locator('.thread-row').count()).toBe(1);
    expect(await page.getByText('owner secret').count()).toBe(0);
    expect(await page.locator(`a[href*="${ownerThread.threadId}"]`).count()).toBe(0);
    expect(await page.content()).not.toContain(owner.lines[0].address);

    // A search for the word both lines' messages hold finds the member's only.
    await page.getByLabel('Search messages').fill(word);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(`**/conversations?q=${word}`);
    const hits = page.locator('#live-threads .search-hits .thread-row');
    await hits.filter({ hasText: `member note ${word}` }).waitFor();
    expect(await hits.count()).toBe(1);
    expect(await threads.locator('mark').allTextContents()).toEqual([word]);
    expect(await page.getByText('owner secret').count()).toBe(0);
    expect(await page.getByText('ledger-').count()).toBe(0);

    // The owner's thread by its URL is the page an id that never existed gets, and says nothing of it.
    const byUrl = await expectNotFoundPage(page, `/conversations/${ownerThread.threadId}`, 'owner secret');
    const unknownId = randomUUID();
    b.problems.allow(notFound(`/conversations/${unknownId}`));
    const unknown = await expectNotFoundPage(page, `/conversations/${unknownId}`, 'owner secret');
    expect(byUrl.replace(ownerThread.threadId, 'ID')).toBe(unknown.replace(unknownId, 'ID'));

    // Approvals: the member's draft, not the owner's; the owner's draft's edit page is not found.
    await page.goto('/approvals');
    const approvals = page.locator('#live-approvals');
    await approvals.getByText(`member draft ${word}`).waitFor();
    expect(await page.getByText('owner draft').count()).toBe(0);
    expect(await page.getByText('owner secret').count()).toBe(0);
    await expectNotFoundPage(page, `/approvals/${ownerTurn}/edit`, 'owner draft');

    // The file: the member cannot get a link (read_attachment refuses), a link minted for them is
    // refused as a missing file is, and the owner's link altered to name the member fails its signature.
    expect(await toolError(b.app, member.apiKey, 'read_attachment', { attachmentId: ownerThread.attachmentIds[0] })).toMatch(/not found/i);
    const forMember = new URL(b.app.app.get(AttachmentUrls).sign(ownerThread.attachmentIds[0], { userId: member.userId, keyId: null }, new Date()));
    const altered = new URL(ownerLink.href);
    altered.searchParams.set('for', forMember.searchParams.get('for')!);
    const downloadPath = `/attachments/${ownerThread.attachmentIds[0]}/download`;
    b.problems.allow(new RegExp(`^(HTTP 40[34]: GET |console error: Failed to load resource: .* 40[34] .*)${b.baseUrl}${downloadPath}\\?`));
    for (const [link, status] of [
      [forMember, 404],
      [altered, 403],
    ] as const) {
      let downloaded = false;
      page.once('download', () => (downloaded = true));
      const res = await page.goto(link.pathname + link.search);
      expect({ link: link.search, status: res?.status() }).toEqual({ link: link.search, status });
      expect(await page.locator('body').innerText()).not.toContain('owner ledger');
      expect(downloaded).toBe(false);
    }
  });
});
