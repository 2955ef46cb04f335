import { randomUUID } from 'node:crypto';
import { PostgresQueryRunner } from 'typeorm/driver/postgres/PostgresQueryRunner';
import { DataSource } from 'typeorm';
import { AgentsService } from '../../src/agents/agents.service';
import { AttachmentsService } from '../../src/attachments/attachments.service';
import { Principal as Caller } from '../../src/identity/principal';
import { WebSessionsService } from '../../src/auth/web-sessions/web-sessions.service';
import { DomainError } from '../../src/common/errors';
import { RESULT_BOUNDS } from '../../src/common/result-bounds';
import { ContactsService } from '../../src/conversations/contacts/contacts.service';
import { ThreadsService } from '../../src/conversations/threads/threads.service';
import { AttachmentBlock, MessageExtras } from '../../src/web/conversations/thread-messages';
import { ThreadView, ThreadViewService } from '../../src/web/conversations/thread-view.service';
import { inviteEmail } from '../fixtures/emails/make-invite-email';
import { createTestApp, TestApp } from '../support/app';
import { toolOk } from '../support/mcp';
import { inboundRawEmail } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { threadEmail } from '../support/thread-email';
import { waitUntil } from '../support/wait';
import { PageBrowser, signInBrowser } from '../support/web';

interface ToolMessage {
  id: string;
  body: string;
  attachmentCount: number;
}

/**
 * The thread page reads its view in one snapshot (ThreadViewService): as many statements for a
 * thread of many messages and attachments as for one of one, and the same content the tools give.
 */
describe('web: the thread page', () => {
  let t: TestApp;
  let owner: Session;
  let browser: PageBrowser;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT'] });
    browser = await signInBrowser(t, owner.userId);
  });
  afterAll(async () => {
    await t?.close();
  });

  const page = (threadId: string) => t.http().get(`/conversations/${threadId}`).set('Cookie', browser.cookie).expect(200);

  /** A thread of `messages` emails from one partner, the last `attachments` of them with a text attachment each, every text extracted. */
  async function emailThread(messages: number, attachments: number): Promise<{ threadId: string; partner: string }> {
    const partner = `partner.${randomUUID().slice(0, 8)}@example.com`;
    const root = `<root-${randomUUID()}@example.com>`;
    let threadId = '';
    for (let n = 0; n < messages; n += 1) {
      const raw = threadEmail({
        from: partner,
        to: owner.lines[0].address,
        root,
        n,
        subject: 'Quarterly figures',
        text: `Message number ${n} of the thread.`,
        ...(n >= messages - attachments && { attachment: { filename: `figures-${n}.txt`, text: `The figures of part ${n}.` } }),
      });
      threadId = (await inboundRawEmail(t, raw)).threadId;
    }
    await waitUntil(async () => ((await page(threadId)).text.match(/<summary>Text of /g) ?? []).length === attachments, 'every attachment extracted');
    return { threadId, partner };
  }

  /** The statements one thread page runs: the fewest of three requests (a background job's statement may fall into one). */
  async function statementsOf(threadId: string): Promise<number> {
    const spy = jest.spyOn(PostgresQueryRunner.prototype, 'query');
    try {
      const counts: number[] = [];
      for (let i = 0; i < 3; i += 1) {
        spy.mockClear();
        await page(threadId);
        counts.push(spy.mock.calls.length);
      }
      return Math.min(...counts);
    } finally {
      spy.mockRestore();
    }
  }

  it('runs as many statements for 12 messages with 10 attachments as for one message with one', async () => {
    const small = await emailThread(1, 1);
    const large = await emailThread(12, 10);
    const [few, many] = [await statementsOf(small.threadId), await statementsOf(large.threadId)];
    expect(few).toBeGreaterThan(0);
    expect(many).toBe(few);
  });

  it("shows every message, its subject and attachments (text and download link) as the tools answer them, and the partner's contact", async () => {
    const { threadId, partner } = await emailThread(6, 4);
    const notes = `Prefers mornings ${randomUUID().slice(0, 6)}`;
    const { contact } = await toolOk(t, owner.apiKey, 'create_contact', { displayName: 'Pat Partner', identities: [{ kind: 'EMAIL', value: partner }] });
    await toolOk(t, owner.apiKey, 'update_contact', { contactId: (contact as { id: string }).id, notes });
    await toolOk(t, owner.apiKey, 'label_thread', { threadId, add: [{ name: 'finance' }] });

    const html = (await page(threadId)).text;
    const { messages } = (await toolOk(t, owner.apiKey, 'get_thread', { threadId })) as { messages: ToolMessage[] };
    expect(messages).toHaveLength(6);
    for (const m of messages) {
      expect(html).toContain(`id="message-${m.id}"`);
      expect(html).toContain(`<div class="message-body" id="message-${m.id}-body">${m.body}</div>`);
      const { message } = (await toolOk(t, owner.apiKey, 'get_message', { messageId: m.id })) as {
        message: { subject: string; attachments: Array<{ id: string; filename: string }> };
      };
      expect(html).toContain(`<p class="message-subject">${message.subject}</p>`);
      expect(message.attachments).toHaveLength(m.attachmentCount);
      for (const a of message.attachments) {
        const read = await toolOk(t, owner.apiKey, 'read_attachment', { attachmentId: a.id });
        expect(html).toContain(`/attachments/${a.id}/download?for=`);
        expect(html).toContain(`<summary>Text of ${a.filename}</summary>`);
        expect(html).toContain(String(read.text));
      }
    }
    expect(html.match(/<summary>Text of /g)).toHaveLength(4);
    expect(html).toContain('<p class="contact-name">Pat Partner</p>');
    expect(html).toContain(`>${notes}</textarea>`);
    expect(html).toContain('<span>finance</span>');
    expect(html).toContain('6 messages');
  });

  /**
   * The page's view as the page read it before ThreadViewService, call by call through the tools'
   * services (get_thread, then get_message and read_attachment one at a time, get_contact,
   * list_agent_turns): what the view must still equal.
   */
  async function viewCallByCall(caller: Caller, threadId: string): Promise<ThreadView> {
    const [threads, attachments, contacts, agents] = [
      t.app.get(ThreadsService),
      t.app.get(AttachmentsService),
      t.app.get(ContactsService),
      t.app.get(AgentsService),
    ];
    const detail = await threads.get(caller, threadId, { maxBodyChars: RESULT_BOUNDS.messageChars });
    const extras = new Map<string, MessageExtras>();
    for (const m of detail.messages.filter((x) => x.channel === 'EMAIL' || x.attachmentCount > 0)) {
      const { message } = await threads.message(caller, m.id, { maxChars: 1 });
      const blocks: AttachmentBlock[] = [];
      for (const a of message.attachments) {
        try {
          blocks.push({ ...a, read: await attachments.read(caller, a.id, { maxChars: 5_000 }) });
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          blocks.push({ ...a, problem: error.message });
        }
      }
      extras.set(m.id, { subject: message.subject, attachments: blocks, attachmentCount: message.attachmentCount });
    }
    const contact = detail.person?.id ? (await contacts.get(caller, detail.person.id)).contact : null;
    const drafts = (await agents.list(caller, { threadId, status: 'AWAITING_APPROVAL' })).turns;
    return { detail, extras, contact, drafts };
  }

  /** A view with its signed links' times and signatures, which differ from one reading to the next, taken out. */
  const unsigned = (view: ThreadView) =>
    JSON.parse(
      JSON.stringify({ ...view, extras: [...view.extras] })
        .replace(/expires=\d+&sig=[0-9a-f]+/g, 'SIGNED')
        .replace(/"downloadUrlExpiresAt":"[^"]+"/g, '"downloadUrlExpiresAt":"T"'),
    );

  it("reads the same view as the tools' services called one by one: messages, subjects, attachments with text and invitations, contact, labels", async () => {
    const { threadId, partner } = await emailThread(5, 3);
    await toolOk(t, owner.apiKey, 'create_contact', { displayName: 'Pat Partner', identities: [{ kind: 'EMAIL', value: partner }] });
    await toolOk(t, owner.apiKey, 'label_thread', { threadId, add: [{ name: 'figures' }] });
    // An invitation (.ics, its calendar event) beside a PDF, a scan and a memo.
    const invite = await inboundRawEmail(t, inviteEmail(owner.lines[0].address, `<invite-${randomUUID()}@partner.example>`));
    const db = t.app.get(DataSource);
    await waitUntil(
      async () =>
        (
          await db.query(`SELECT count(*)::int AS n FROM attachments WHERE id = ANY ($1::uuid[]) AND extraction_status IN ('pending', 'extracting')`, [
            invite.attachmentIds,
          ])
        )[0].n === 0,
      "the invitation's attachments extracted",
    );
    const sessionToken = decodeURIComponent(browser.cookie.slice(browser.cookie.indexOf('=') + 1));
    const caller = (await t.app.get(WebSessionsService).person(sessionToken))!;
    for (const id of [threadId, invite.threadId]) {
      const view = await t.app.get(ThreadViewService).view(caller, id, {});
      expect(unsigned(view)).toEqual(unsigned(await viewCallByCall(caller, id)));
      expect(view.extras.size).toBeGreaterThan(0);
    }
    const inviteView = await t.app.get(ThreadViewService).view(caller, invite.threadId, {});
    const reads = [...inviteView.extras.values()].flatMap((e) => e.attachments.map((a) => a.read));
    expect(reads.flatMap((r) => r?.calendarEvents ?? [])).toHaveLength(1);
  });

  it('answers the same 404 for a thread on a line the person may not see as for one that never existed', async () => {
    const other = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT'] });
    const otherBrowser = await signInBrowser(t, other.userId);
    const { threadId } = await emailThread(2, 1);
    const hidden = await t.http().get(`/conversations/${threadId}`).set('Cookie', otherBrowser.cookie).expect(404);
    const unknown = await t.http().get(`/conversations/${randomUUID()}`).set('Cookie', otherBrowser.cookie).expect(404);
    expect(hidden.text.replace(threadId, 'ID')).toBe(unknown.text.replace(/[0-9a-f-]{36}/, 'ID'));
  });
});
