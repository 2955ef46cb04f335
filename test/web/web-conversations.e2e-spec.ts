import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { DataSource } from 'typeorm';
import { PostgresQueryRunner } from 'typeorm/driver/postgres/PostgresQueryRunner';
import { mixedEmail } from '../fixtures/emails/make-invite-email';
import { createTestApp, TestApp } from '../support/app';
import { callTool, toolOk } from '../support/mcp';
import { createSession, Session, uniquePhone } from '../support/session';
import { CapturingMailServer, startCapturingSmtp } from '../support/smtp';
import { INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';
import { PageBrowser, postForm, signInBrowser } from '../support/web';

/** Conversations and a thread: pages over the services the MCP tools call (docs/web.md, "Conversations"). */
describe('web: the conversations pages', () => {
  let t: TestApp;
  let db: DataSource;
  let owner: Session;
  let member: Session;
  let ownerBrowser: PageBrowser;
  let memberBrowser: PageBrowser;
  let smtp: CapturingMailServer;

  beforeAll(async () => {
    smtp = await startCapturingSmtp();
    t = await createTestApp({ env: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}` } });
    db = t.app.get(DataSource);
    owner = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    member = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    ownerBrowser = await signInBrowser(t, owner.userId);
    memberBrowser = await signInBrowser(t, member.userId);
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  const get = (b: PageBrowser, path: string) => t.http().get(path).set('Cookie', b.cookie);

  async function inboundSms(to: string, body: string, from = uniquePhone()): Promise<string> {
    const res = await t
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to, from, body, providerMessageId: `p-${randomUUID()}` })
      .expect(201);
    return res.body.threadId;
  }

  async function inboundEmail(to: string, fields: { fromName: string; subject: string; text: string; filename: string }): Promise<string> {
    const boundary = 'b0undary_web_conversations';
    const raw = [
      `From: "${fields.fromName}" <sender.${randomUUID().slice(0, 8)}@partner.example>`,
      `To: <${to}>`,
      `Subject: ${fields.subject}`,
      'Date: Sun, 22 Nov 2026 09:12:00 +0000',
      `Message-ID: <${randomUUID()}@partner.example>`,
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=UTF-8',
      '',
      fields.text,
      `--${boundary}`,
      `Content-Type: text/plain; name="${fields.filename}"`,
      `Content-Disposition: attachment; filename="${fields.filename}"`,
      '',
      'plain attachment text',
      `--${boundary}--`,
      '',
    ].join('\r\n');
    const res = await t
      .http()
      .post('/ingest/email/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('Content-Type', 'message/rfc822')
      .send(Buffer.from(raw, 'utf8'))
      .expect(201);
    return res.body.threadId;
  }

  const replyKey = (html: string) => /name="idempotencyKey" value="([^"]+)"/.exec(html)![1];
  const phoneOf = (s: Session) => s.lines.find((l) => l.type === 'PHONE_NUMBER')!.address;
  const emailOf = (s: Session) => s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.address;

  it("lists the threads of the person's lines, newest first, with the nav link first and the live section", async () => {
    const older = await inboundSms(phoneOf(owner), 'Older question about the booking');
    const newer = await inboundSms(phoneOf(owner), 'Newer: is the table for two still free?');
    const res = await get(ownerBrowser, '/conversations').expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toMatch(/<nav aria-label="Main"><ul><li><a href="\/conversations" aria-current="page">Conversations<\/a>/);
    expect(res.text).toContain('<section id="live-threads" data-live="threads"');
    expect(res.text.indexOf(`/conversations/${newer}`)).toBeGreaterThan(-1);
    expect(res.text.indexOf(`/conversations/${newer}`)).toBeLessThan(res.text.indexOf(`/conversations/${older}`));
    expect(res.text).toContain('Newer: is the table for two still free?');
  });

  it("a MEMBER sees only their lines' threads: not by list, search or URL; a deleted line fails closed", async () => {
    const word = `zebra${randomUUID().slice(0, 6)}`;
    const ownerThread = await inboundSms(phoneOf(owner), `owner secret ${word}`);
    const memberThread = await inboundSms(phoneOf(member), `member note ${word}`);

    const list = await get(memberBrowser, '/conversations').expect(200);
    expect(list.text).toContain(`/conversations/${memberThread}`);
    expect(list.text).not.toContain(ownerThread);

    const search = await get(memberBrowser, `/conversations?q=${word}`).expect(200);
    expect(search.text).toContain(`member note <mark>${word}</mark>`);
    expect(search.text).not.toContain('owner secret');
    const ownerSearch = await get(ownerBrowser, `/conversations?q=${word}`).expect(200);
    expect(ownerSearch.text).toContain('owner secret');
    expect(ownerSearch.text).not.toContain('member note');

    const byUrl = await get(memberBrowser, `/conversations/${ownerThread}`).expect(404);
    const unknown = await get(memberBrowser, `/conversations/${randomUUID()}`).expect(404);
    expect(byUrl.text).toContain('Not found');
    expect(byUrl.text.replace(ownerThread, 'ID')).toBe(unknown.text.replace(/[0-9a-f-]{36}/, 'ID'));
    // Nor can the member act on it.
    await postForm(t, memberBrowser, `/conversations/${ownerThread}/labels`, { label: 'spy' }).expect(404);
    await postForm(t, memberBrowser, `/conversations/${ownerThread}/reply`, { body: 'hi', idempotencyKey: randomUUID() }).expect(404);
    const lineFilter = await get(memberBrowser, `/conversations?line=${owner.lines[1].id}`).expect(404);
    expect(lineFilter.text).toContain(`Line: line ${owner.lines[1].id} not found`);

    // A line of their own deleted: its thread is gone for them too.
    const extra = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const extraBrowser = await signInBrowser(t, extra.userId);
    const extraThread = await inboundSms(extra.lines[0].address, 'soon gone');
    await get(extraBrowser, `/conversations/${extraThread}`).expect(200);
    await t.admin.delete(`/admin/lines/${extra.lines[0].id}`);
    await get(extraBrowser, `/conversations/${extraThread}`).expect(404);
    expect((await get(extraBrowser, '/conversations').expect(200)).text).not.toContain(extraThread);
  });

  it('shows <script> in a subject, body, attachment filename and display name as text', async () => {
    const evil = '<script>alert(1)</script>';
    const threadId = await inboundEmail(emailOf(owner), {
      fromName: `${evil} Mallory`,
      subject: `Subject ${evil}`,
      text: `Body ${evil}`,
      filename: `${evil}.txt`,
    });
    for (const path of ['/conversations', `/conversations/${threadId}`]) {
      const res = await get(ownerBrowser, path).expect(200);
      expect(res.text).not.toContain('<script>alert');
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    }
    const page = (await get(ownerBrowser, `/conversations/${threadId}`).expect(200)).text;
    expect(page).toContain('Subject &lt;script>alert(1)&lt;/script>');
    expect(page).toContain('Body &lt;script>alert(1)&lt;/script>');
    expect(page).toContain('&lt;script>alert(1)&lt;/script>.txt');
    expect(page).toContain('&lt;script>alert(1)&lt;/script> Mallory');
    expect(page).toMatch(/href="http:\/\/127\.0\.0\.1:3000\/attachments\/[0-9a-f-]{36}\/download\?for=[A-Za-z0-9_-]{22}&amp;expires=\d+&amp;sig=[0-9a-f]{64}"/);
    const list = (await get(ownerBrowser, '/conversations').expect(200)).text;
    expect(list).toContain('&lt;script>alert(1)&lt;/script> Mallory');

    // The same through a contact's display name and a search snippet.
    const smsThread = await inboundSms(phoneOf(owner), 'hello from the evil contact');
    const form = await postForm(t, ownerBrowser, `/conversations/${smsThread}/contact`, { displayName: evil }).expect(303);
    expect(form.headers.location).toBe(`/conversations/${smsThread}?done=contact`);
    const contactPage = (await get(ownerBrowser, `/conversations/${smsThread}`).expect(200)).text;
    expect(contactPage).not.toContain('<script>alert');
    expect(contactPage).toContain('<p class="contact-name">&lt;script>alert(1)&lt;/script></p>');
    const search = (await get(ownerBrowser, `/conversations?q=${encodeURIComponent('Body')}`).expect(200)).text;
    expect(search).not.toContain('<script>alert');
  });

  it("shows an .ics attachment's invitation on the thread: title, times, organizer, attendees and status", async () => {
    const ics = readFileSync(join(__dirname, '../fixtures/attachments/invite.ics'));
    const res = await t
      .http()
      .post('/ingest/email/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('Content-Type', 'message/rfc822')
      .send(
        mixedEmail(emailOf(owner), [{ filename: 'invite.ics', mimeType: 'text/calendar; method=REQUEST; charset=UTF-8', content: ics }], {
          messageId: `<kickoff-${randomUUID()}@partner.example>`,
          subject: 'Kickoff invitation',
          text: 'Please join the kickoff.',
        }),
      )
      .expect(201);
    const path = `/conversations/${res.body.threadId}`;
    // The invitation is read by the extraction in the background: until then the page says why there is none yet.
    const page = await waitUntil(async () => {
      const html = (await get(ownerBrowser, path).expect(200)).text;
      return html.includes('<dt>Invitation</dt>') && html;
    }, 'the thread page to show the invitation');
    const invite = /<dl class="details invite">([\s\S]*?)<\/dl>/.exec(page)![1];
    const text = invite
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim();
    expect(text).toBe(
      'Invitation Project kickoff When 2026-03-02 15:00:00 UTC – 2026-03-02 16:00:00 UTC Organizer ana.perez@example.org ' +
        'Attendees bob@example.com, carla@example.net Status REQUEST, CONFIRMED',
    );
    expect(page).toContain('>invite.ics</a>');
  });

  it("a reply on an email thread leaves from the thread's own mailbox as Re: <subject>, threaded by In-Reply-To and References", async () => {
    const messageId = `<question-${randomUUID()}@partner.example>`;
    const res = await t
      .http()
      .post('/ingest/email/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('Content-Type', 'message/rfc822')
      .send(mixedEmail(emailOf(owner), [], { messageId, subject: 'Opening hours', text: 'Are you open on Sunday?' }))
      .expect(201);
    const path = `/conversations/${res.body.threadId}`;
    const key = replyKey((await get(ownerBrowser, path).expect(200)).text);
    const answer = `We open at ten on Sundays (${randomUUID()}).`;
    await postForm(t, ownerBrowser, `${path}/reply`, { body: answer, idempotencyKey: key }).expect(303);
    const raw = await waitUntil(() => smtp.mails.find((m) => m.includes(answer)), 'the reply at the SMTP server');
    const mail = await simpleParser(raw);
    expect(mail.from?.value[0].address).toBe(emailOf(owner));
    expect(mail.to).toMatchObject({ value: [{ address: 'maria@partner.example' }] });
    expect(mail.subject).toBe('Re: Opening hours');
    expect(mail.inReplyTo).toBe(messageId);
    expect(mail.references).toBe(messageId);
    expect(mail.text?.trim()).toBe(answer);
  });

  it('a reply posted twice with the same key queues one outbound message, then 303s back to the thread', async () => {
    const threadId = await inboundSms(phoneOf(owner), 'Can you confirm?');
    const page = await get(ownerBrowser, `/conversations/${threadId}`).expect(200);
    expect(page.text).toContain(`<section id="live-messages" data-live="thread" data-thread-id="${threadId}"`);
    const key = replyKey(page.text);
    const first = await postForm(t, ownerBrowser, `/conversations/${threadId}/reply`, { body: 'Confirmed, see you at 8.', idempotencyKey: key }).expect(303);
    const second = await postForm(t, ownerBrowser, `/conversations/${threadId}/reply`, { body: 'Confirmed, see you at 8.', idempotencyKey: key }).expect(303);
    expect(first.headers.location).toBe(`/conversations/${threadId}?done=sent`);
    expect(second.headers.location).toBe(first.headers.location);
    const rows = await db.query(`SELECT body, from_value FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND'`, [threadId]);
    expect(rows).toEqual([{ body: 'Confirmed, see you at 8.', from_value: phoneOf(owner) }]);
    const after = await get(ownerBrowser, `/conversations/${threadId}?done=sent`).expect(200);
    expect(after.text).toContain('Your reply is queued');
    expect(replyKey(after.text)).not.toBe(key);

    // A FAILED message shows why (get_thread's error).
    await db.query(`UPDATE messages SET status = 'FAILED', error = 'carrier refused: unknown number' WHERE thread_id = $1 AND direction = 'OUTBOUND'`, [
      threadId,
    ]);
    expect((await get(ownerBrowser, `/conversations/${threadId}`).expect(200)).text).toContain('Failed: carrier refused: unknown number');

    // The same key with another text is refused (the tool's rule), next to the form, keeping the text.
    const reused = await postForm(t, ownerBrowser, `/conversations/${threadId}/reply`, { body: 'Something else', idempotencyKey: key }).expect(409);
    expect(reused.text).toContain('idempotencyKey');
    expect(reused.text).toContain('>Something else</textarea>');
    // A blank reply and an SMS over 1,600 characters are refused naming the body.
    const blank = await postForm(t, ownerBrowser, `/conversations/${threadId}/reply`, { body: '   ', idempotencyKey: randomUUID() }).expect(400);
    expect(blank.text).toContain('id="body-error"');
    expect(blank.text).toContain('body must not be blank');
    const long = await postForm(t, ownerBrowser, `/conversations/${threadId}/reply`, { body: 'x'.repeat(1601), idempotencyKey: randomUUID() }).expect(400);
    expect(long.text).toContain('body must be at most 1600 characters');
    expect(await db.query(`SELECT count(*)::int AS n FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND'`, [threadId])).toEqual([{ n: 1 }]);
  });

  it("a reply key repeated by someone who may not see the thread is the unknown thread's 404, never the first reply", async () => {
    const threadId = await inboundSms(phoneOf(owner), 'Private question');
    const key = replyKey((await get(ownerBrowser, `/conversations/${threadId}`).expect(200)).text);
    const body = `Private answer ${randomUUID()}`;
    await postForm(t, ownerBrowser, `/conversations/${threadId}/reply`, { body, idempotencyKey: key }).expect(303);

    // The member (another line) repeats the form exactly: the same page as any thread they may not see.
    const replayed = await postForm(t, memberBrowser, `/conversations/${threadId}/reply`, { body, idempotencyKey: key }).expect(404);
    const guessed = await postForm(t, memberBrowser, `/conversations/${threadId}/reply`, { body: 'a guess', idempotencyKey: key }).expect(404);
    expect(replayed.text).toBe(guessed.text);
    // Through the tool, with the member's key: not the owner's message (its status, its partner), only "not found".
    const tool = await callTool(t, member.apiKey, 'reply_to_thread', { threadId, body, idempotencyKey: key });
    expect(tool.isError).toBe(true);
    expect(tool.content[0].text).toBe(`thread ${threadId} not found`);
    expect(JSON.stringify(tool)).not.toContain('Private answer');
    // A wrong guess of the text, and the key on a thread that does not exist, answer alike: the key confirms nothing.
    const guess = await callTool(t, member.apiKey, 'reply_to_thread', { threadId, body: 'a guess', idempotencyKey: key });
    expect(guess.content[0].text).toBe(`thread ${threadId} not found`);
    const ghost = randomUUID();
    const nowhere = await callTool(t, member.apiKey, 'reply_to_thread', { threadId: ghost, body, idempotencyKey: key });
    expect(nowhere.content[0].text).toBe(`thread ${ghost} not found`);
    // On a thread of their own the key is one in use (nothing sent), the same whatever its first call was.
    const mine = await inboundSms(phoneOf(member), 'A question on my line');
    const taken = await callTool(t, member.apiKey, 'reply_to_thread', { threadId: mine, body, idempotencyKey: key });
    expect(taken).toMatchObject({
      isError: true,
      content: [{ text: `idempotencyKey "${key}" is in use for another message; a key stands for one message: use a new key for a new message` }],
    });
    expect(await db.query(`SELECT count(*)::int AS n FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND'`, [mine])).toEqual([{ n: 0 }]);

    // The owner, who lost the line since, is refused alike; nothing is sent again.
    const later = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const laterBrowser = await signInBrowser(t, later.userId);
    const own = await inboundSms(phoneOf(later), 'Mine for now');
    const ownKey = replyKey((await get(laterBrowser, `/conversations/${own}`).expect(200)).text);
    await postForm(t, laterBrowser, `/conversations/${own}/reply`, { body: 'Sent once', idempotencyKey: ownKey }).expect(303);
    await postForm(t, laterBrowser, `/conversations/${own}/reply`, { body: 'Sent once', idempotencyKey: ownKey }).expect(303);
    await t.admin.delete(`/admin/lines/${later.lines[0].id}/members/${later.userId}`).expect(204);
    await postForm(t, laterBrowser, `/conversations/${own}/reply`, { body: 'Sent once', idempotencyKey: ownKey }).expect(404);
    expect(await db.query(`SELECT count(*)::int AS n FROM messages WHERE thread_id = ANY ($1) AND direction = 'OUTBOUND'`, [[threadId, own]])).toEqual([
      { n: 2 },
    ]);
  });

  it("line breaks are sent and kept as typed, not as the form's CRLF: a reply's length and the notes", async () => {
    const threadId = await inboundSms(phoneOf(owner), 'Send me the list');
    // 1,599 characters as typed (LF); a browser posts each line break as CRLF (2,398 characters).
    const typed = 'x\n'.repeat(799) + 'y';
    await postForm(t, ownerBrowser, `/conversations/${threadId}/reply`, { body: typed.replace(/\n/g, '\r\n'), idempotencyKey: randomUUID() }).expect(303);
    expect(await db.query(`SELECT body FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND'`, [threadId])).toEqual([{ body: typed }]);

    await postForm(t, ownerBrowser, `/conversations/${threadId}/contact`, { displayName: 'List Keeper' }).expect(303);
    await postForm(t, ownerBrowser, `/conversations/${threadId}/contact/notes`, { notes: 'Line one\r\nLine two' }).expect(303);
    const [contact] = await db.query(
      `SELECT c.notes FROM threads t JOIN identities i ON i.id = t.partner_identity_id JOIN contacts c ON c.id = i.contact_id WHERE t.id = $1`,
      [threadId],
    );
    expect(contact.notes).toBe('Line one\nLine two');
  });

  it('limits count characters, as the tools do: an emoji is one, not two UTF-16 units', async () => {
    const threadId = await inboundSms(phoneOf(owner), 'Send emoji');
    const reply = (body: string) => postForm(t, ownerBrowser, `/conversations/${threadId}/reply`, { body, idempotencyKey: randomUUID() });
    await reply('🎉'.repeat(1600)).expect(303);
    const over = await reply('🎉'.repeat(1601)).expect(400);
    expect(over.text).toContain('body must be at most 1600 characters on an SMS thread');
    await postForm(t, ownerBrowser, `/conversations/${threadId}/labels`, { label: '⭐'.repeat(50) + '🌟'.repeat(50) }).expect(303);
    await postForm(t, ownerBrowser, `/conversations/${threadId}/contact`, { displayName: '🙂'.repeat(200) }).expect(303);
    const page = (await get(ownerBrowser, `/conversations/${threadId}`).expect(200)).text;
    expect(page).toContain(`<span>${'⭐'.repeat(50)}${'🌟'.repeat(50)}</span>`);
    expect(page).toContain(`<p class="contact-name">${'🙂'.repeat(200)}</p>`);
    const label = await postForm(t, ownerBrowser, `/conversations/${threadId}/labels`, { label: '🌟'.repeat(101) }).expect(400);
    expect(label.text).toContain('label must NOT have more than 100 characters');
  });

  it('adds and removes labels; the list shows them as chips and filters by them', async () => {
    const threadId = await inboundSms(phoneOf(owner), 'Label me');
    const label = `vip-${randomUUID().slice(0, 6)}`;
    const added = await postForm(t, ownerBrowser, `/conversations/${threadId}/labels`, { label }).expect(303);
    expect(added.headers.location).toBe(`/conversations/${threadId}?done=labelled`);
    expect((await get(ownerBrowser, `/conversations/${threadId}`).expect(200)).text).toContain(`aria-label="Remove label ${label}"`);
    const filtered = (await get(ownerBrowser, `/conversations?label=${label}`).expect(200)).text;
    expect(filtered).toContain(`/conversations/${threadId}`);
    expect(filtered).toContain(`<li class="chip">${label}</li>`);
    expect(filtered.match(/class="thread-row"/g)).toHaveLength(1);

    const blank = await postForm(t, ownerBrowser, `/conversations/${threadId}/labels`, { label: '   ' }).expect(400);
    expect(blank.text).toContain('id="label-error"');
    expect(blank.text).toMatch(/label must be 1 to 100 characters/);

    await postForm(t, ownerBrowser, `/conversations/${threadId}/labels/remove`, { label }).expect(303);
    expect((await get(ownerBrowser, `/conversations/${threadId}`).expect(200)).text).not.toContain(`Remove label ${label}`);
    expect((await get(ownerBrowser, `/conversations?label=${label}`).expect(200)).text).not.toContain(`/conversations/${threadId}`);
  });

  it("edits the partner's notes; too long notes are refused naming the field", async () => {
    const threadId = await inboundSms(phoneOf(owner), 'Notes please');
    await postForm(t, ownerBrowser, `/conversations/${threadId}/contact`, { displayName: 'Ada Lovelace' }).expect(303);
    const notFirst = await get(ownerBrowser, `/conversations/${threadId}`).expect(200);
    expect(notFirst.text).toContain('<label for="notes">Notes</label>');
    const saved = await postForm(t, ownerBrowser, `/conversations/${threadId}/contact/notes`, { notes: 'Prefers SMS.\nAllergic to nuts.' }).expect(303);
    expect(saved.headers.location).toBe(`/conversations/${threadId}?done=notes`);
    const page = (await get(ownerBrowser, `/conversations/${threadId}`).expect(200)).text;
    expect(page).toContain('>Prefers SMS.\nAllergic to nuts.</textarea>');
    const tooLong = await postForm(t, ownerBrowser, `/conversations/${threadId}/contact/notes`, { notes: 'n'.repeat(10_001) }).expect(400);
    expect(tooLong.text).toContain('id="notes-error"');
    expect(tooLong.text).toMatch(/notes must NOT have more than 10000 characters/);
    const blankName = await postForm(t, ownerBrowser, `/conversations/${await inboundSms(phoneOf(owner), 'who?')}/contact`, { displayName: '' }).expect(400);
    expect(blankName.text).toContain('id="displayName-error"');
  });

  it('a label filter tells nothing of a label only on lines the person may not see: the same page and the same work as no such label', async () => {
    const hidden = `reorg-${randomUUID().slice(0, 8)}`;
    const ownerThread = await inboundSms(phoneOf(owner), 'For the owner only');
    await postForm(t, ownerBrowser, `/conversations/${ownerThread}/labels`, { label: hidden }).expect(303);
    const none = `never-${randomUUID().slice(0, 8)}`;

    // Timing would tell the two apart if one ran statements the other does not: record what each runs on thread_labels.
    const spy = jest.spyOn(PostgresQueryRunner.prototype, 'query');
    const statements = async (label: string) => {
      spy.mockClear();
      const res = await get(memberBrowser, `/conversations?label=${label}`).expect(200);
      const run = spy.mock.calls.map(([sql]) => String(sql)).filter((sql) => sql.includes('thread_labels tl'));
      return { text: res.text.replaceAll(label, 'LABEL'), run };
    };
    try {
      const [exists, absent] = [await statements(hidden), await statements(none)];
      expect(exists.text).toContain('No conversations match these filters.');
      expect(exists.text).toBe(absent.text);
      expect(exists.run.length).toBeGreaterThan(0);
      expect(exists.run).toEqual(absent.run);
    } finally {
      spy.mockRestore();
    }
  });

  it("a search hit marks the words that matched, even in text that has ** of its own (an agent's markdown)", async () => {
    const word = `quokka${randomUUID().slice(0, 6)}`;
    await inboundSms(phoneOf(owner), `Your table is **confirmed** for ${word}`);
    const page = (await get(ownerBrowser, `/conversations?q=${word}`).expect(200)).text;
    const snippet = /<p class="snippet">(.*?)<\/p>/s.exec(page)![1];
    expect(snippet).toBe(`Your table is **confirmed** for <mark>${word}</mark>`);
    // The tool's snippet keeps its ** marks.
    const hits = (await toolOk(t, owner.apiKey, 'search_messages', { query: word })).hits as Array<{ snippet: string }>;
    expect(hits.map((h) => h.snippet)).toEqual([`Your table is **confirmed** for **${word}**`]);
  });

  it('bad filters and ids are refused naming the field', async () => {
    const line = await get(ownerBrowser, '/conversations?line=not-a-uuid').expect(400);
    expect(line.text).toContain('Line: lineId must match format');
    expect(line.text).toContain('<select id="line" name="line" aria-invalid="true">');
    const cursor = await get(ownerBrowser, '/conversations?cursor=garbage').expect(400);
    expect(cursor.text).toContain('Page (Older link): cursor');
    const query = await get(ownerBrowser, '/conversations?q=%2B%2B%2B').expect(400);
    expect(query.text).toContain('Search: query has no words');
    const id = await get(ownerBrowser, '/conversations/not-a-uuid').expect(400);
    expect(id.text).toContain('ThreadId must match format');
  });

  it('keyset pages: "Older" carries the cursor and the filters', async () => {
    const pager = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const b = await signInBrowser(t, pager.userId);
    const ids: string[] = [];
    for (let i = 0; i < 27; i++) ids.push(await inboundSms(pager.lines[0].address, `message ${i}`));
    const first = (await get(b, `/conversations?line=${pager.lines[0].id}`).expect(200)).text;
    expect(first.match(/class="thread-row"/g)).toHaveLength(25);
    const older = /<a href="(\/conversations\?[^"]+)" rel="next">Older<\/a>/.exec(first)![1].replace(/&amp;/g, '&');
    expect(older).toContain(`line=${pager.lines[0].id}`);
    const second = (await get(b, older).expect(200)).text;
    expect(second.match(/class="thread-row"/g)).toHaveLength(2);
    expect(second).toContain(`/conversations/${ids[0]}`);
    expect(second).not.toContain('rel="next"');
  });

  it('the awaiting-approval filter and marker follow the agent turns awaiting a human', async () => {
    const threadId = await inboundSms(phoneOf(owner), 'Agent, answer me');
    const other = await inboundSms(phoneOf(owner), 'No draft here');
    const agent = await t.admin.post(`/admin/lines/${owner.lines[1].id}/agents`, { name: 'Drafter', mode: 'DRAFT' });
    expect(agent.status).toBe(201);
    await t
      .http()
      .post(`/api/agents/${agent.body.id}/turns`)
      .set('Authorization', `Bearer ${owner.apiKey}`)
      .send({ threadId, body: 'Draft answer' })
      .expect(201);
    const all = (await get(ownerBrowser, '/conversations').expect(200)).text;
    const row = all.slice(all.indexOf(`/conversations/${threadId}`));
    expect(row.slice(0, row.indexOf('</li>'))).toContain('Awaiting approval');
    const only = (await get(ownerBrowser, '/conversations?awaiting=1').expect(200)).text;
    expect(only).toContain(`/conversations/${threadId}`);
    expect(only).not.toContain(`/conversations/${other}`);
    expect((await get(ownerBrowser, `/conversations/${threadId}`).expect(200)).text).toContain('Awaiting approval');
    // The member's list has none of it.
    expect((await get(memberBrowser, '/conversations?awaiting=1').expect(200)).text).not.toContain(threadId);
  });
});
