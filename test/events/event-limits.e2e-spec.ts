import { EVENT_LIMITS } from '../../src/conversations/message-data.builder';
import { MAX_NOTES_CHARS } from '../../src/conversations/contacts/contacts.service';
import { RESULT_BOUNDS } from '../../src/common/result-bounds';
import { toolError, toolOk } from '../support/mcp';
import { createMessagingTestApp, Envelope, Hook, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';

/**
 * What one event may hold (docs/webhooks.md, "Payload size"): bodies, the subject, email headers
 * and the attachment list are cut in the one place that builds event data, a cut body says so,
 * the signature covers what is sent, and get_message still gives the whole message (a window at a
 * time). The read tools' own bounds (docs/mcp.md, "Result sizes") are tested here with the same
 * largest messages.
 */
jest.setTimeout(60_000);

type Json = Record<string, any>;

/** The first `n` Unicode code points of `text` (a cut never splits a character). */
const codePoints = (text: string, n: number) => Array.from(text).slice(0, n).join('');

describe('event data limits', () => {
  let m: MessagingTestApp;
  let s: Session;
  let verbose: Hook;
  let concise: Hook;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    verbose = await Hook.register(m, s.apiKey, { events: ['message.received'], mode: 'verbose', messageHistoryCount: 50 });
    concise = await Hook.register(m, s.apiKey, { events: ['message.received'] });
  });
  afterAll(async () => {
    await m?.close();
  });

  /** A raw email: 8-bit UTF-8 text in lines well under the 998-byte line limit. */
  function rawEmail(to: string, headers: Record<string, string>, body: string, attachments: string[] = []): string {
    const boundary = `b-${Date.now()}`;
    const head = Object.entries({ From: 'Ada <ada@analytical.example>', To: to, 'MIME-Version': '1.0', ...headers })
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n');
    const text = `Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n${body.replace(/\n/g, '\r\n')}\r\n`;
    if (attachments.length === 0) return `${head}\r\n${text}`;
    const parts = attachments.map(
      (name) => `--${boundary}\r\nContent-Type: text/plain; name="${name}"\r\nContent-Disposition: attachment; filename="${name}"\r\n\r\nx\r\n`,
    );
    return `${head}\r\nContent-Type: multipart/mixed; boundary="${boundary}"\r\n\r\n--${boundary}\r\n${text}${parts.join('')}--${boundary}--\r\n`;
  }

  async function postEmail(raw: string): Promise<{ messageId: string; threadId: string }> {
    const res = await m.http().post('/ingest/email/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).set('Content-Type', 'message/rfc822').send(raw);
    expect(res.status).toBe(201);
    return res.body;
  }

  const eventOf = (hook: Hook, messageId: string): Envelope | undefined => hook.events('message.received').find((e) => e.data.message.id === messageId);
  function waitEvent(hook: Hook, messageId: string): Promise<Envelope> {
    return waitUntil(() => eventOf(hook, messageId), `message.received of ${messageId}`);
  }

  it('a long email: its body, subject, References and attachment list are cut, the body says so, and get_message has it all', async () => {
    const line = (i: number) => `Línea ${i}: café ☕ y más texto para llenar la línea 🚀 ${'·'.repeat(20)}`;
    const longBody = Array.from({ length: 2_000 }, (_, i) => line(i)).join('\n');
    expect(Array.from(longBody).length).toBeGreaterThan(EVENT_LIMITS.messageBodyChars * 4);
    const subject = `Asunto ${'muy largo '.repeat(150)}`.trim();
    const references = Array.from({ length: 40 }, (_, i) => `<ref-${i}-${Date.now()}@partner.example>`);
    // 300-character names: cut to 255 in events and get_message, to 100 in get_thread.
    const files = Array.from({ length: EVENT_LIMITS.attachments + 5 }, (_, i) => `file-${String(i).padStart(3, '0')}-`.padEnd(296, 'n') + '.txt');
    const messageIdHeader = `<long-${Date.now()}@partner.example>`;
    const first = await postEmail(
      rawEmail(s.lines[0].address, { Subject: subject, 'Message-ID': messageIdHeader, References: references.join('\r\n ') }, longBody, files),
    );

    // get_thread cuts the body to 2,000 characters by default; get_message reads all of it, window by window.
    const [inThread] = (await toolOk(m, s.apiKey, 'get_thread', { threadId: first.threadId })).messages;
    expect(inThread).toMatchObject({ body: codePoints(longBody, RESULT_BOUNDS.bodyChars), truncated: true });
    expect(inThread.attachmentCount).toBe(files.length);
    // The subject is cut in tool results as in events.
    expect(Array.from(subject).length).toBeGreaterThan(RESULT_BOUNDS.subjectChars);
    expect((await toolOk(m, s.apiKey, 'get_message', { messageId: first.messageId })).message.subject).toBe(codePoints(subject, RESULT_BOUNDS.subjectChars));
    expect((await toolOk(m, s.apiKey, 'get_thread', { threadId: first.threadId })).thread.subject).toBe(codePoints(subject, RESULT_BOUNDS.subjectChars));
    expect(inThread.attachments.map((a: Json) => a.filename)).toEqual(files.slice(0, RESULT_BOUNDS.threadAttachments).map((f) => f.slice(0, 100)));
    let body = '';
    const windows: Array<number | null> = [];
    for (let offset: number | null = 0; offset !== null;) {
      const page: Json = await toolOk(m, s.apiKey, 'get_message', { messageId: first.messageId, offset, maxChars: 50_000 });
      body += page.message.body;
      windows.push(page.nextOffset);
      expect(page.bodyLength).toBe(Array.from(longBody).length);
      offset = page.nextOffset;
    }
    expect(body).toBe(longBody);
    expect(windows).toEqual([50_000, 100_000, null]);
    // get_message lists the attachments 100 at a time.
    const listed: Json[] = [];
    for (let attachmentOffset: number | null = 0; attachmentOffset !== null;) {
      const page: Json = await toolOk(m, s.apiKey, 'get_message', { messageId: first.messageId, attachmentOffset });
      expect(page.message.attachmentCount).toBe(files.length);
      listed.push(...page.message.attachments);
      attachmentOffset = page.nextAttachmentOffset;
    }
    expect(listed.map((a) => a.filename)).toEqual(files.map((f) => f.slice(0, 255)));
    expect(new Set(listed.map((a) => a.id)).size).toBe(files.length);
    expect(await toolError(m, s.apiKey, 'get_message', { messageId: first.messageId, attachmentOffset: files.length + 1 })).toBe(
      `attachmentOffset ${files.length + 1} is past the end of the attachments (attachmentCount ${files.length})`,
    );
    const full = { body };

    const event = await waitEvent(verbose, first.messageId); // signature verified by the hook
    expect(event.data.message.body).toBe(codePoints(full.body, EVENT_LIMITS.messageBodyChars));
    expect(event.data.message.bodyTruncated).toBe(true);
    const [entry] = event.data.thread.recentMessages;
    expect(entry).toEqual({ ...event.data.message, body: codePoints(full.body, EVENT_LIMITS.recentMessageBodyChars), bodyTruncated: true });
    expect(Array.from(event.data.thread.subject as string)).toHaveLength(EVENT_LIMITS.headerChars);
    expect(event.data.emailHeaders.references).toEqual([references[0], ...references.slice(-(EVENT_LIMITS.references - 1))]);
    expect(event.data.attachments.map((a: { filename: string }) => a.filename)).toEqual(files.slice(0, EVENT_LIMITS.attachments).map((f) => f.slice(0, 255)));

    const short = await waitEvent(concise, first.messageId);
    expect(short.data.message).toEqual(event.data.message);

    // A short reply: its own body whole; the long one appears in its history cut to the history limit.
    const reply = await postEmail(
      rawEmail(s.lines[0].address, { Subject: 'Re: corto', 'Message-ID': `<reply-${Date.now()}@partner.example>`, 'In-Reply-To': messageIdHeader }, 'Gracias.'),
    );
    expect(reply.threadId).toBe(first.threadId);
    const replied = await waitEvent(verbose, reply.messageId);
    expect(replied.data.message).toMatchObject({ body: 'Gracias.\n', bodyTruncated: false });
    expect(replied.data.thread.recentMessages).toEqual([entry, replied.data.message]);
  });

  it('an SMS under the body limit is whole in message, cut in recentMessages', async () => {
    const partner = partnerPhone();
    const body = `${'ñ'.repeat(EVENT_LIMITS.recentMessageBodyChars)}🚀 and more`;
    const first = await inboundSms(m, s.lines[1].address, partner, body);
    const event = await waitEvent(verbose, first.messageId);
    expect(event.data.message).toMatchObject({ body, bodyTruncated: false });
    expect(event.data.thread.recentMessages[0]).toMatchObject({ body: 'ñ'.repeat(EVENT_LIMITS.recentMessageBodyChars), bodyTruncated: true });

    const second = await inboundSms(m, s.lines[1].address, partner, 'ok');
    const next = await waitEvent(verbose, second.messageId);
    expect(next.data.thread.recentMessages.map((r: { bodyTruncated: boolean }) => r.bodyTruncated)).toEqual([true, false]);
  });

  describe('tool results with default arguments stay under the documented size', () => {
    const BIG = 100_000;
    /** The JSON text a host puts in the model's context. */
    async function resultText(key: string, name: string, args: Json): Promise<{ text: string; result: Json }> {
      const res = await m
        .http()
        .post('/api/mcp')
        .set('Authorization', `Bearer ${key}`)
        .set('Accept', 'application/json, text/event-stream')
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
      expect(res.body.result.isError).toBeFalsy();
      return { text: res.body.result.content[0].text, result: res.body.result.structuredContent };
    }
    /** A raw email with one base64 attachment. */
    function withFile(to: string, subject: string, file: { name: string; type: string; content: string }): string {
      const boundary = `f-${Date.now()}`;
      const b64 = Buffer.from(file.content).toString('base64').replace(/.{76}/g, '$&\r\n');
      return [
        `From: Ada <ada@analytical.example>\r\nTo: ${to}\r\nSubject: ${subject}\r\nMIME-Version: 1.0`,
        `Content-Type: multipart/mixed; boundary="${boundary}"\r\n\r\n--${boundary}`,
        `Content-Type: text/plain; charset=utf-8\r\n\r\nSee attached.\r\n--${boundary}`,
        `Content-Type: ${file.type}; name="${file.name}"\r\nContent-Disposition: attachment; filename="${file.name}"\r\nContent-Transfer-Encoding: base64\r\n`,
        `${b64}\r\n--${boundary}--\r\n`,
      ].join('\r\n');
    }
    /** 99,999 characters; stored with the line break that ends the text part, 100,000. */
    const bigBody = (i: number) => Array.from({ length: BIG / 50 }, (_, k) => `${i}:${k} ${'word '.repeat(9)}`.slice(0, 49)).join('\n');

    it('list_threads: 25 threads whose last message is 100,000 characters, with 10,000-character subjects and sender names', async () => {
      const own = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
      const address = own.lines[0].address;
      // Folded header lines: a header may be as long as the sender likes.
      const long = (i: number, word: string) => Array.from({ length: 1_000 }, (_, k) => `${i}${word}${k}`.padEnd(10, 'x')).join('\r\n ');
      for (let i = 0; i < 25; i += 1) {
        await postEmail(rawEmail(address, { From: `"${long(i, 'n')}" <p${i}@partner.example>`, Subject: long(i, 's') }, bigBody(i)));
      }
      const { text, result } = await resultText(own.apiKey, 'list_threads', {});
      expect(result.threads).toHaveLength(25);
      for (const { thread, person } of result.threads) {
        expect(Array.from(thread.subject as string)).toHaveLength(RESULT_BOUNDS.subjectChars);
        expect(Array.from(person.displayName as string)).toHaveLength(200); // cut when the mail came in, as long as a contact's name may be
      }
      for (const { lastMessage } of result.threads) {
        expect(lastMessage.body).toBeUndefined();
        expect(lastMessage.truncated).toBe(true);
        expect(Array.from(lastMessage.preview as string)).toHaveLength(RESULT_BOUNDS.previewChars);
        expect(lastMessage.preview).not.toMatch(/\n|\s{2}/);
      }
      expect(text.length).toBeLessThan(RESULT_BOUNDS.resultChars);
    });

    it('get_thread: a thread of 25 messages of 100,000 characters; get_message: one of them', async () => {
      const own = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
      const address = own.lines[0].address;
      let first = { messageId: '', threadId: '' };
      const root = `<long-root-${Date.now()}@partner.example>`;
      for (let i = 0; i < 25; i += 1) {
        const headers: Record<string, string> = i === 0 ? { Subject: 'Long thread', 'Message-ID': root } : { Subject: 'Re: Long thread', 'In-Reply-To': root };
        // Messages 1 to 23 carry 10 files with long names (the first and the last stay single-part: their bodies are checked whole).
        const files = i > 0 && i < 24 ? Array.from({ length: 10 }, (_, k) => `${i}-${k}-`.padEnd(250, 'n') + '.txt') : [];
        const posted = await postEmail(rawEmail(address, headers, bigBody(i), files));
        if (i === 0) first = posted;
        else expect(posted.threadId).toBe(first.threadId);
      }
      const thread = await resultText(own.apiKey, 'get_thread', { threadId: first.threadId });
      expect(thread.result.messages).toHaveLength(RESULT_BOUNDS.threadMessages);
      expect(thread.result.messages.every((x: Json) => x.truncated && Array.from(x.body as string).length === RESULT_BOUNDS.bodyChars)).toBe(true);
      expect(thread.result.messages.map((x: Json) => [x.attachments.length, x.attachmentCount])).toEqual([
        [0, 0],
        ...Array.from({ length: RESULT_BOUNDS.threadMessages - 1 }, () => [RESULT_BOUNDS.threadAttachments, 10]),
      ]);
      expect(thread.text.length).toBeLessThan(RESULT_BOUNDS.resultChars);
      // Asked for more, it gives more: whole bodies, flagged as such.
      const whole = await resultText(own.apiKey, 'get_thread', { threadId: first.threadId, limit: 1, maxBodyChars: RESULT_BOUNDS.maxBodyChars });
      // The parsed text part keeps the line break that ends it.
      expect(whole.result.messages[0]).toMatchObject({ body: `${bigBody(24)}\n`, truncated: false });

      const message = await resultText(own.apiKey, 'get_message', { messageId: first.messageId });
      expect(message.result).toMatchObject({ bodyLength: BIG, nextOffset: RESULT_BOUNDS.messageChars });
      expect(message.result.message.body).toBe(bigBody(0).slice(0, RESULT_BOUNDS.messageChars));
      expect(message.text.length).toBeLessThan(RESULT_BOUNDS.resultChars);
      const past = await toolError(m, own.apiKey, 'get_message', { messageId: first.messageId, offset: BIG + 1 });
      expect(past).toBe(`offset ${BIG + 1} is past the end of the body (bodyLength ${BIG})`);
      // An offset beyond any text is refused by the schema, before it reaches SQL's 32-bit integers.
      expect(await toolError(m, own.apiKey, 'get_message', { messageId: first.messageId, offset: 2 ** 31 })).toBe(
        `invalid arguments: offset must be <= ${RESULT_BOUNDS.maxOffset}`,
      );
      expect(await toolError(m, s.apiKey, 'get_message', { messageId: first.messageId })).toBe(`message ${first.messageId} not found`);
    });

    it('list_agent_turns: 25 drafts of 100,000 characters; get_agent_turn reads one a window at a time', async () => {
      const own = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
      const line = own.lines[0];
      const { threadId } = await postEmail(rawEmail(line.address, { Subject: 'Drafts' }, 'Please answer at length.'));
      const agent = (await m.admin.post(`/admin/lines/${line.id}/agents`, { name: 'Verbose drafter', mode: 'DRAFT' }).expect(201)).body;
      const draft = (i: number) => bigBody(i).slice(0, BIG - 1) + '.';
      let firstTurnId = '';
      for (let i = 0; i < 25; i += 1) {
        const res = await m
          .http()
          .post(`/api/agents/${agent.id}/turns`)
          .set('Authorization', `Bearer ${own.apiKey}`)
          .send({ threadId, body: draft(i) });
        expect(res.status).toBe(201);
        expect(res.body.turn.body).toBe(draft(i)); // the REST route gives the turn whole
        if (i === 0) firstTurnId = res.body.turn.id;
      }
      const list = await resultText(own.apiKey, 'list_agent_turns', {});
      expect(list.result.turns).toHaveLength(25);
      for (const turn of list.result.turns) {
        expect(turn).toMatchObject({ bodyLength: BIG, truncated: true });
        expect(Array.from(turn.body as string)).toHaveLength(RESULT_BOUNDS.bodyChars);
      }
      expect(list.text.length).toBeLessThan(RESULT_BOUNDS.resultChars);

      const first = await resultText(own.apiKey, 'get_agent_turn', { turnId: firstTurnId });
      expect(first.result).toMatchObject({ nextOffset: RESULT_BOUNDS.messageChars, turn: { bodyLength: BIG, truncated: true } });
      expect(first.text.length).toBeLessThan(RESULT_BOUNDS.resultChars);
      let body = first.result.turn.body as string;
      for (let offset = first.result.nextOffset; offset !== null;) {
        const next = await resultText(own.apiKey, 'get_agent_turn', { turnId: firstTurnId, offset });
        body += next.result.turn.body;
        offset = next.result.nextOffset;
      }
      expect(body).toBe(draft(0));
      const past = await toolError(m, own.apiKey, 'get_agent_turn', { turnId: firstTurnId, offset: BIG + 1 });
      expect(past).toBe(`offset ${BIG + 1} is past the end of the body (bodyLength ${BIG})`);
    });

    it('read_attachment: 1,000,000 characters of text come 20,000 at a time; a calendar of 120 events lists 20', async () => {
      const own = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
      const address = own.lines[0].address;
      const big = Array.from({ length: 20_000 }, (_, k) => `line ${String(k).padStart(5, '0')} ${'abc '.repeat(10)}`.slice(0, 49)).join('\n');
      expect(big.length).toBe(999_999);
      const events = Array.from({ length: 120 }, (_, k) =>
        [
          'BEGIN:VEVENT',
          `UID:ev-${k}@partner.example`,
          `DTSTART:2027${String((k % 12) + 1).padStart(2, '0')}01T0${k % 10}0000Z`,
          'DTEND:20280101T000000Z',
          `SUMMARY:Meeting ${k}`,
          ...Array.from({ length: 60 }, (_, a) => `ATTENDEE:mailto:guest${a}@partner.example`),
          'END:VEVENT',
        ].join('\r\n'),
      );
      const ics = `BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n${events.join('\r\n')}\r\nEND:VCALENDAR\r\n`;
      const text = await postEmail(withFile(address, 'big text', { name: 'big.txt', type: 'text/plain', content: big }));
      const cal = await postEmail(withFile(address, 'calendar', { name: 'invites.ics', type: 'text/calendar', content: ics }));
      const attachmentOf = async (messageId: string) => (await toolOk(m, own.apiKey, 'get_message', { messageId })).message.attachments[0].id;
      const [textId, calId] = [await attachmentOf(text.messageId), await attachmentOf(cal.messageId)];
      const read = (attachmentId: string, extra: Json = {}) => resultText(own.apiKey, 'read_attachment', { attachmentId, ...extra });
      await waitUntil(async () => (await read(textId)).result.attachment.extractionStatus === 'extracted', 'the text extracted', { timeoutMs: 30_000 });
      await waitUntil(async () => (await read(calId)).result.attachment.extractionStatus === 'extracted', 'the calendar extracted', { timeoutMs: 30_000 });

      const firstWindow = await read(textId);
      expect(firstWindow.result.attachment.textLength).toBe(big.length);
      expect(firstWindow.result).toMatchObject({ text: big.slice(0, RESULT_BOUNDS.attachmentChars), nextOffset: RESULT_BOUNDS.attachmentChars });
      expect(firstWindow.text.length).toBeLessThan(RESULT_BOUNDS.resultChars);
      const last = await read(textId, { offset: 990_000, maxChars: 50_000 });
      expect(last.result).toMatchObject({ text: big.slice(990_000), nextOffset: null });
      expect(await toolError(m, own.apiKey, 'read_attachment', { attachmentId: textId, offset: big.length + 1 })).toBe(
        `offset ${big.length + 1} is past the end of the text (textLength ${big.length})`,
      );

      const calendar = await read(calId);
      expect(calendar.result.calendarEventCount).toBe(120);
      expect(calendar.result.calendarEvents).toHaveLength(RESULT_BOUNDS.calendarEvents);
      expect(calendar.result.calendarEvents.every((e: Json) => e.attendeeEmails.length === RESULT_BOUNDS.attendeesPerEvent)).toBe(true);
      expect(calendar.text.length).toBeLessThan(RESULT_BOUNDS.resultChars);
    });

    it('list_contacts: 25 contacts with notes of 10,000 characters; get_contact has them whole; a merge past 10,000 is refused', async () => {
      const own = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      // 10,000 code points, a quarter of them outside the BMP (two UTF-16 units each): the bound counts code points.
      const notes = (i: number) => codePoints(`${i} ${'🙂 noted. '.repeat(2_000)}`, MAX_NOTES_CHARS);
      const ids: string[] = [];
      for (let i = 0; i < 25; i += 1) {
        const args = { displayName: `Contact ${String(i).padStart(2, '0')}`, identities: [{ kind: 'PHONE', value: partnerPhone() }] };
        const { contact } = await toolOk(m, own.apiKey, 'create_contact', args);
        await toolOk(m, own.apiKey, 'update_contact', { contactId: contact.id, notes: notes(i) });
        ids.push(contact.id);
      }
      const list = await resultText(own.apiKey, 'list_contacts', {});
      expect(list.result.contacts.map((c: Json) => c.id)).toEqual(ids);
      list.result.contacts.forEach((c: Json, i: number) => {
        expect(c).toMatchObject({ notes: codePoints(notes(i), RESULT_BOUNDS.contactNotesChars), notesTruncated: true });
      });
      expect(list.text.length).toBeLessThan(RESULT_BOUNDS.resultChars);

      const whole = await resultText(own.apiKey, 'get_contact', { contactId: ids[0] });
      expect(whole.result.contact).toMatchObject({ notes: notes(0), notesTruncated: false });
      expect(whole.text.length).toBeLessThan(RESULT_BOUNDS.resultChars);

      // Joined with a blank line, two notes of 5,000 would be 10,002 characters: refused, and both contacts stay as they were.
      const half = (i: number) => codePoints(notes(i), 5_000);
      await toolOk(m, own.apiKey, 'update_contact', { contactId: ids[1], notes: half(1) });
      await toolOk(m, own.apiKey, 'update_contact', { contactId: ids[2], notes: half(2) });
      expect(await toolError(m, own.apiKey, 'merge_contacts', { contactIds: [ids[1], ids[2]] })).toBe(
        `the notes of these contacts joined would be 10002 characters, more than the ${MAX_NOTES_CHARS} a contact keeps; shorten them with update_contact, then merge`,
      );
      expect((await toolOk(m, own.apiKey, 'get_contact', { contactId: ids[2] })).contact).toMatchObject({ notes: half(2), identities: [expect.anything()] });
      // Exactly 10,000 joined is kept whole.
      await toolOk(m, own.apiKey, 'update_contact', { contactId: ids[2], notes: codePoints(half(2), 4_998) });
      const merged = await toolOk(m, own.apiKey, 'merge_contacts', { contactIds: [ids[1], ids[2]] });
      expect(merged.contact).toMatchObject({ id: ids[1], notes: `${half(1)}\n\n${codePoints(half(2), 4_998)}`, notesTruncated: false });
      expect(Array.from(merged.contact.notes as string)).toHaveLength(MAX_NOTES_CHARS);
    });

    it("get_message gives a FAILED message the carrier's reason", async () => {
      const own = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
      const { threadId } = await inboundSms(m, own.lines[0].address, partnerPhone(), 'hi');
      const { message } = await toolOk(m, own.apiKey, 'reply_to_thread', { threadId, body: 'hello' });
      const providerMessageId = await waitUntil(async () => {
        const [row] = await m.db.query(`SELECT provider_message_id FROM messages WHERE id = $1 AND status = 'SENT'`, [message.id]);
        return row?.provider_message_id as string | undefined;
      }, 'the carrier to take the SMS');
      await m
        .http()
        .post('/ingest/sms/status')
        .set('Authorization', `Bearer ${INGEST_TOKEN}`)
        .send({ providerMessageId, status: 'FAILED', error: 'the handset is unreachable' })
        .expect(200);
      const failed = await toolOk(m, own.apiKey, 'get_message', { messageId: message.id });
      expect(failed.message).toMatchObject({ status: 'FAILED', subject: null, error: 'the handset is unreachable', attachments: [] });
      expect(failed).toMatchObject({ bodyLength: 5, nextOffset: null });
    });
  });

  it('the largest stored payload stays under the documented bound', async () => {
    const [{ max }] = await m.db.query(
      `SELECT max(octet_length(p.data::text))::int AS max FROM webhook_payloads p JOIN webhook_deliveries d ON d.payload_id = p.id
        WHERE d.endpoint_id = ANY($1::uuid[])`,
      [[verbose.id, concise.id]],
    );
    expect(max).toBeGreaterThan(EVENT_LIMITS.messageBodyChars);
    expect(max).toBeLessThan(200_000);
  });
});
