import { OFFICE_MIME } from '../fixtures/attachments/make-bombs';
import { NAMESPACED_PPTX_TEXT, NAMESPACED_XLSX_TEXT, namespacedPptx, namespacedXlsx } from '../fixtures/attachments/make-namespaced-office';
import { inviteEmail, INVITE_EMAIL_PARTS, mixedEmail } from '../fixtures/emails/make-invite-email';
import { toolOk } from '../support/mcp';
import { createMessagingTestApp, extractedEventsPublished, extractionIdle, Hook, MessagingTestApp } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';

/**
 * One raw email with a PDF, a PNG with printed text, a .docx and an .ics invite, through the
 * real ingest path: message.received first, then exactly one attachment.extracted per file, and
 * the text of each read back with read_attachment. Then an email with an .xlsx and a .pptx whose
 * XML uses other prefixes than Office's: their text is read the same, and search_messages finds it.
 */
jest.setTimeout(90_000);

describe('an email with every kind of attachment', () => {
  let m: MessagingTestApp;
  let s: Session;
  let hook: Hook;
  let attachmentIds: string[];

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
    hook = await Hook.register(m, s.apiKey, { events: ['message.received', 'attachment.extracted'], mode: 'verbose' });
    const res = await m
      .http()
      .post('/ingest/email/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('Content-Type', 'message/rfc822')
      .send(inviteEmail(s.lines[0].address, `<planning-${Date.now()}@partner.example>`));
    expect(res.status).toBe(201);
    attachmentIds = res.body.attachmentIds;
  });
  afterAll(async () => {
    await m?.close();
  });

  it('message.received lists the four attachments, each with a signed download URL', async () => {
    const [received] = await hook.waitFor(1, 'message.received');
    expect(received.data.attachments.map((a: { filename: string }) => a.filename)).toEqual(INVITE_EMAIL_PARTS.map((p) => p.filename));
    for (const a of received.data.attachments)
      expect(a.url).toMatch(/\/attachments\/[0-9a-f-]{36}\/download\?for=[A-Za-z0-9_-]{22}&expires=\d+&sig=[0-9a-f]{64}$/);
    expect(received.data.emailHeaders.authentication).toEqual({ spf: 'pass', dkim: 'pass', dmarc: 'pass' });
  });

  it('fires attachment.extracted exactly once per attachment, with text for each and a calendar event for the invite', async () => {
    const extracted = await hook.waitFor(4, 'attachment.extracted', 60_000);
    // Once every job has run to its end, a fifth event would have its outbox row.
    await extractionIdle(m);
    expect(Object.values(await extractedEventsPublished(m, attachmentIds))).toEqual([1, 1, 1, 1]);
    expect(hook.events('attachment.extracted')).toHaveLength(4);
    const byName = new Map(extracted.map((e) => [e.data.attachment.filename, e.data]));
    expect([...byName.keys()].sort()).toEqual(INVITE_EMAIL_PARTS.map((p) => p.filename).sort());
    for (const data of byName.values()) {
      expect(data.attachment.hasText).toBe(true);
      expect(data.attachment.textLength).toBeGreaterThan(0);
      expect(attachmentIds).toContain(data.attachment.id);
    }
    expect(byName.get('invite.ics').calendarEvents).toHaveLength(1);
    expect(byName.get('invite.ics').calendarEvents[0]).toMatchObject({ method: 'REQUEST' });
    for (const name of ['invoice.pdf', 'scan.png', 'memo.docx']) expect(byName.get(name).calendarEvents).toEqual([]);
  });

  it('read_attachment gives back the text of each file', async () => {
    const texts = new Map<string, string>();
    for (const id of attachmentIds) {
      const result = await toolOk(m, s.apiKey, 'read_attachment', { attachmentId: id });
      texts.set(result.attachment.filename, String(result.text).toLowerCase());
    }
    expect(texts.get('scan.png')).toContain('quarterly invoice');
    expect(texts.get('invoice.pdf')!.length).toBeGreaterThan(5);
    expect(texts.get('memo.docx')!.length).toBeGreaterThan(5);
    expect(texts.get('invite.ics')!.length).toBeGreaterThan(5);
  });

  it('an Excel sheet and a slide deck whose XML uses other prefixes (x:, dml:/pml:) are read and found by search_messages', async () => {
    const files = [
      { filename: 'figures-x.xlsx', mimeType: OFFICE_MIME.xlsx, content: await namespacedXlsx({ x: 'x' }) },
      { filename: 'deck-dml.pptx', mimeType: OFFICE_MIME.pptx, content: await namespacedPptx({ a: 'dml', p: 'pml', r: 'rel' }) },
    ];
    const res = await m
      .http()
      .post('/ingest/email/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('Content-Type', 'message/rfc822')
      .send(mixedEmail(s.lines[0].address, files, { messageId: `<office-${Date.now()}@partner.example>`, subject: 'Stock and plans', text: 'See attached.' }));
    expect(res.status).toBe(201);
    const ids: string[] = res.body.attachmentIds;
    const extracted = await waitUntil(
      () => {
        const events = hook.events('attachment.extracted').filter((e) => ids.includes(e.data.attachment.id));
        return events.length === ids.length && events;
      },
      'attachment.extracted for the two Office files',
      { timeoutMs: 60_000 },
    );
    for (const event of extracted) expect(event.data.attachment).toMatchObject({ hasText: true });
    const texts = await Promise.all(ids.map((id) => toolOk(m, s.apiKey, 'read_attachment', { attachmentId: id })));
    expect(texts.map((t) => [t.attachment.filename, t.text])).toEqual([
      ['figures-x.xlsx', NAMESPACED_XLSX_TEXT],
      ['deck-dml.pptx', NAMESPACED_PPTX_TEXT],
    ]);
    // Words that are only in the files' text, not in the email.
    for (const [query, filename] of [
      ['Reorder', 'figures-x.xlsx'],
      ['Roadmap', 'deck-dml.pptx'],
    ]) {
      const { hits } = await toolOk(m, s.apiKey, 'search_messages', { query });
      expect(hits).toEqual([expect.objectContaining({ matchedIn: 'attachment', attachment: expect.objectContaining({ filename }) })]);
    }
  });
});
