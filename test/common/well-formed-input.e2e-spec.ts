import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { TRACKING_GIF } from '../../src/channels/email/open-tracking.controller';
import { AttachmentExtractionService } from '../../src/attachments/attachment-extraction.service';
import { createMessagingTestApp, inboundSms, MessagingTestApp } from '../support/messaging-hooks';
import { hookUrl, toolError, toolOk } from '../support/mcp';
import { createSession, Session, uniqueEmail, uniquePhone } from '../support/session';
import { ADMIN_TOKEN, INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';

/**
 * Issue 10, §4: U+0000 and lone surrogates anywhere in the input. Every REST body, query and
 * route param and every tool argument is refused naming the field; inbound email is never
 * refused: it is stored with U+0000 removed and lone surrogates replaced by U+FFFD.
 */
describe('text that PostgreSQL would refuse (U+0000, lone surrogates)', () => {
  let m: MessagingTestApp;
  let s: Session;
  let email: Session['lines'][number];
  let phone: Session['lines'][number];
  let errorLog: jest.SpyInstance;

  /** A JSON body sent as text: JSON.stringify writes U+0000 as \u0000 and a lone surrogate as \ud800. */
  const postJson = (path: string, token: string, body: unknown) =>
    m.http().post(path).set('Authorization', `Bearer ${token}`).set('Content-Type', 'application/json').send(JSON.stringify(body));

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    email = s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
    phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
  });
  afterAll(async () => {
    await m?.close();
  });
  beforeEach(() => {
    errorLog = jest.spyOn(Logger.prototype, 'error');
  });
  afterEach(() => {
    // Nothing in here is a server fault: no request logs an error.
    expect(errorLog).not.toHaveBeenCalled();
    errorLog.mockRestore();
  });

  describe('REST: 400 naming the field', () => {
    it.each([
      ['an admin body value', '/admin/orgs', ADMIN_TOKEN, { name: 'Acme\u0000', tier: 'PRO' }, 'name', 'name contains U+0000 (NUL), which is not allowed'],
      [
        'a lone surrogate in an admin body',
        '/admin/orgs',
        ADMIN_TOKEN,
        { name: 'Acme \ud800', tier: 'PRO' },
        'name',
        'name contains a lone UTF-16 surrogate, which is not well-formed Unicode',
      ],
      [
        'a property name',
        '/admin/orgs',
        ADMIN_TOKEN,
        { name: 'Acme', tier: 'PRO', 'x\u0000': 1 },
        '["x\\u0000"]',
        '["x\\u0000"]: the property name contains U+0000 (NUL), which is not allowed',
      ],
    ])('%s', async (_, path, token, body, field, message) => {
      const res = await postJson(path, token, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message, field });
    });

    it('a nested admin value (an API key allowlist entry)', async () => {
      const res = await postJson(`/admin/users/${s.userId}/api-keys`, ADMIN_TOKEN, {
        name: 'k',
        channelAccess: { mode: 'LINES', lines: [phone.address, '\ud83d'] },
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        field: 'channelAccess.lines[1]',
        message: expect.stringMatching(/^channelAccess\.lines\[1\] contains a lone UTF-16 surrogate/),
      });
    });

    it('a query parameter and a route parameter', async () => {
      const query = await m.admin.get(`/admin/orgs/${s.orgId}?view=%00`);
      expect(query.status).toBe(400);
      expect(query.body).toMatchObject({ field: 'view', message: 'view contains U+0000 (NUL), which is not allowed' });
      const param = await m.http().get('/attachments/a%00b/download?expires=1&sig=00');
      expect(param.status).toBe(400);
      expect(param.body).toMatchObject({ field: 'id', message: 'id contains U+0000 (NUL), which is not allowed' });
    });

    it('authentication still comes first: 401 without a token', async () => {
      const res = await m
        .http()
        .post('/admin/orgs')
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ name: '\u0000' }));
      expect(res.status).toBe(401);
    });

    it('SMS ingest: the body, the sender name of a media file; nothing is stored', async () => {
      const providerMessageId = `nul-${randomBytes(4).toString('hex')}`;
      const body = await postJson('/ingest/sms/inbound', INGEST_TOKEN, { to: phone.address, from: uniquePhone(), body: 'hi\u0000', providerMessageId });
      expect(body.status).toBe(400);
      expect(body.body).toMatchObject({ field: 'body', message: 'body contains U+0000 (NUL), which is not allowed' });
      const media = await postJson('/ingest/sms/inbound', INGEST_TOKEN, {
        to: phone.address,
        from: uniquePhone(),
        body: 'see photo',
        providerMessageId,
        media: [{ filename: 'photo\ud800.png', mimeType: 'image/png', contentBase64: Buffer.from('png').toString('base64') }],
      });
      expect(media.status).toBe(400);
      expect(media.body).toMatchObject({ field: 'media[0].filename' });
      const status = await postJson('/ingest/sms/status', INGEST_TOKEN, { providerMessageId: 'x\u0000', status: 'DELIVERED' });
      expect(status.status).toBe(400);
      expect(status.body).toMatchObject({ field: 'providerMessageId' });
      expect(await m.db.query('SELECT 1 FROM messages WHERE provider_message_id = $1', [providerMessageId])).toEqual([]);
    });

    it('mailbox sync and agent turns', async () => {
      const sync = await postJson(`/ingest/email-accounts/${email.id}/sync`, INGEST_TOKEN, { ok: false, errorKind: 'AUTH', error: 'bad\u0000password' });
      expect(sync.status).toBe(400);
      expect(sync.body).toMatchObject({ field: 'error' });
      const agent = await postJson(`/admin/lines/${phone.id}/agents`, ADMIN_TOKEN, { name: 'Desk', mode: 'DRAFT' });
      expect(agent.status).toBe(201);
      const { threadId } = await inboundSms(m, phone.address, uniquePhone());
      const turn = await postJson(`/api/agents/${agent.body.id}/turns`, s.apiKey, { threadId, body: 'draft \ud800' });
      expect(turn.status).toBe(400);
      expect(turn.body).toMatchObject({ field: 'body' });
    });

    it('the tracking pixel answers the GIF for a token holding U+0000, and looks nothing up', async () => {
      const res = await m.http().get('/t/o/ab%00cd');
      expect(res.status).toBe(200);
      expect(Buffer.from(res.body)).toEqual(TRACKING_GIF);
    });
  });

  describe('MCP tools: a tool error naming the argument', () => {
    let threadId: string;
    let identityId: string;
    let contactId: string;

    beforeAll(async () => {
      const partner = uniquePhone();
      ({ threadId } = await inboundSms(m, phone.address, partner));
      const { contact } = await toolOk(m, s.apiKey, 'create_contact', { displayName: 'Ada', identities: [{ kind: 'PHONE', value: partner }] });
      contactId = contact.id;
      identityId = contact.identities[0].id;
    });

    it('label_thread with a lone surrogate as a label stores nothing (no label_id null rows)', async () => {
      const message = await toolError(m, s.apiKey, 'label_thread', { threadId, add: [{ name: 'vip' }, { name: '\ud800' }] });
      expect(message).toBe('invalid arguments: add[1].name contains a lone UTF-16 surrogate, which is not well-formed Unicode');
      expect(await m.db.query('SELECT * FROM thread_labels WHERE thread_id = $1', [threadId])).toEqual([]);
      expect(await m.db.query('SELECT count(*)::int AS n FROM thread_labels WHERE label_id IS NULL')).toEqual([{ n: 0 }]);
      const { labels } = await toolOk(m, s.apiKey, 'label_thread', { threadId, add: [{ name: 'vip' }] });
      expect(labels).toEqual([{ name: 'vip', confidence: 1 }]);
    });

    it.each([
      ['label_thread', () => ({ threadId, remove: ['x\u0000'] }), 'remove[0]', 'U+0000'],
      ['list_threads', () => ({ label: 'a\u0000' }), 'label', 'U+0000'],
      ['send_sms', () => ({ threadId, identityId, smsBody: 'hi\u0000' }), 'smsBody', 'U+0000'],
      ['send_email', () => ({ to: uniqueEmail(), fromAccountId: email.id, subject: 'S\ud800', body: 'b' }), 'subject', 'lone'],
      ['create_contact', () => ({ displayName: 'Bob\u0000', identities: [{ kind: 'PHONE', value: uniquePhone() }] }), 'displayName', 'U+0000'],
      ['create_contact', () => ({ displayName: 'Bob', identities: [{ kind: 'EMAIL', value: 'b\u0000@x.example' }] }), 'identities[0].value', 'U+0000'],
      ['update_contact', () => ({ contactId, notes: 'note \udc00' }), 'notes', 'lone'],
      ['list_contacts', () => ({ query: '\u0000' }), 'query', 'U+0000'],
      ['register_webhook', () => ({ url: `${hookUrl()}\u0000`, events: ['message.received'] }), 'url', 'U+0000'],
      ['read_attachment', () => ({ attachmentId: '\u0000' }), 'attachmentId', 'U+0000'],
      ['get_thread', () => ({ threadId, cursor: '\ud800' }), 'cursor', 'lone'],
      ['list_agent_turns', () => ({ status: '\u0000' }), 'status', 'U+0000'],
      ['merge_contacts', () => ({ contactIds: [contactId, '\u0000'] }), 'contactIds[1]', 'U+0000'],
    ])('%s refuses %#', async (tool, args, path, fault) => {
      const message = await toolError(m, s.apiKey, tool, args());
      expect(message).toBe(
        `invalid arguments: ${path} contains ${fault === 'U+0000' ? 'U+0000 (NUL), which is not allowed' : 'a lone UTF-16 surrogate, which is not well-formed Unicode'}`,
      );
    });

    it('a property name in the arguments', async () => {
      expect(await toolError(m, s.apiKey, 'list_threads', { 'x\u0000': 1 })).toBe(
        'invalid arguments: ["x\\u0000"]: the property name contains U+0000 (NUL), which is not allowed',
      );
    });
  });

  describe('inbound email: never refused, stored without U+0000 or lone surrogates', () => {
    const postEmail = (raw: Buffer) =>
      m.http().post('/ingest/email/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).set('Content-Type', 'message/rfc822').send(raw);
    const halfPair = (text: string) => `=?UTF-16LE?B?${Buffer.concat([Buffer.from(text, 'utf16le'), Buffer.from([0x00, 0xd8])]).toString('base64')}?=`;

    it('U+0000 in the raw body, quoted-printable =00 and encoded-words of Subject, From name and filename: 201, visible via get_thread', async () => {
      const id = randomBytes(4).toString('hex');
      const raw = Buffer.concat([
        Buffer.from(
          [
            `From: =?UTF-8?Q?Grace=00_Hopper?= <grace.${id}@navy.example>`,
            `To: ${email.address}`,
            `Subject: =?UTF-8?B?${Buffer.from('Bug\u0000 report').toString('base64')}?=`,
            `Message-ID: <nul-${id}@navy.example>`,
            'Content-Type: multipart/mixed; boundary=zz',
            '',
            '--zz',
            'Content-Type: text/plain; charset=utf-8',
            'Content-Transfer-Encoding: quoted-printable',
            '',
            'moth=00found',
            '--zz',
            'Content-Type: text/html; charset=utf-8',
            '',
            '<p>raw',
          ].join('\r\n'),
        ),
        Buffer.from([0]),
        Buffer.from(
          [
            'byte</p>',
            '--zz',
            'Content-Type: text/plain',
            'Content-Disposition: attachment; filename="=?UTF-8?Q?log=00book.txt?="',
            '',
            'Relay #70 Panel F',
            '--zz--',
            '',
          ].join('\r\n'),
        ),
      ]);
      const res = await postEmail(raw);
      expect(res.status).toBe(201);
      const [row] = await m.db.query(
        `SELECT m.body, m.html, m.subject, t.subject AS thread_subject, i.display_name, a.filename
           FROM messages m JOIN threads t ON t.id = m.thread_id JOIN identities i ON i.id = t.partner_identity_id
           JOIN attachments a ON a.message_id = m.id WHERE m.id = $1`,
        [res.body.messageId],
      );
      expect(row).toEqual({
        body: expect.stringContaining('mothfound'),
        html: expect.stringContaining('<p>rawbyte</p>'),
        subject: 'Bug report',
        thread_subject: 'Bug report',
        display_name: 'Grace Hopper',
        filename: 'logbook.txt',
      });
      const thread = await toolOk(m, s.apiKey, 'get_thread', { threadId: res.body.threadId });
      expect(thread.thread.subject).toBe('Bug report');
      expect(thread.person.displayName).toBe('Grace Hopper');
      expect(thread.messages[0].body).toContain('mothfound');
      expect(thread.messages[0].attachments.map((a: { filename: string }) => a.filename)).toEqual(['logbook.txt']);
      // The same message again is a repeat, not a second message.
      expect((await postEmail(raw)).status).toBe(200);
    });

    it('lone surrogates from UTF-16 encoded-words become U+FFFD', async () => {
      const id = randomBytes(4).toString('hex');
      const raw = [
        `From: ${halfPair('Ann')} <ann.${id}@x.example>`,
        `To: ${email.address}`,
        `Subject: ${halfPair('Hello')}`,
        `Message-ID: <half-${id}@x.example>`,
        'Content-Type: multipart/mixed; boundary=zz',
        '',
        '--zz',
        'Content-Type: text/plain',
        '',
        'body',
        '--zz',
        'Content-Type: application/octet-stream',
        `Content-Disposition: attachment; filename="${halfPair('scan')}"`,
        '',
        'x',
        '--zz--',
        '',
      ].join('\r\n');
      const res = await postEmail(Buffer.from(raw));
      expect(res.status).toBe(201);
      const thread = await toolOk(m, s.apiKey, 'get_thread', { threadId: res.body.threadId });
      expect(thread.thread.subject).toBe('Hello\ufffd');
      expect(thread.person.displayName).toBe('Ann\ufffd');
      expect(thread.messages[0].attachments.map((a: { filename: string }) => a.filename)).toEqual(['scan\ufffd']);
    });

    it('an invite whose SUMMARY holds U+0000 is extracted, its calendar event stored without it', async () => {
      const id = randomBytes(4).toString('hex');
      const ics = [
        'BEGIN:VCALENDAR',
        'VERSION:2.0',
        'PRODID:-//t//t//EN',
        'METHOD:REQUEST',
        'BEGIN:VEVENT',
        `UID:nul-${id}`,
        'DTSTAMP:20260201T090000Z',
        'DTSTART:20260301T090000Z',
        'DTEND:20260301T100000Z',
        'SUMMARY:Stand\u0000up',
        'END:VEVENT',
        'END:VCALENDAR',
        '',
      ].join('\r\n');
      const raw = [
        `From: cal.${id}@x.example`,
        `To: ${email.address}`,
        'Subject: invite',
        `Message-ID: <ics-${id}@x.example>`,
        'Content-Type: multipart/mixed; boundary=zz',
        '',
        '--zz',
        'Content-Type: text/plain',
        '',
        'see invite',
        '--zz',
        'Content-Type: text/calendar; method=REQUEST',
        'Content-Disposition: attachment; filename="invite.ics"',
        'Content-Transfer-Encoding: base64',
        '',
        Buffer.from(ics).toString('base64'),
        '--zz--',
        '',
      ].join('\r\n');
      const res = await postEmail(Buffer.from(raw));
      expect(res.status).toBe(201);
      const [attachmentId] = res.body.attachmentIds as string[];
      // Run the extraction here (a worker of this app may race it: whichever claims it finishes it).
      await m.app.get(AttachmentExtractionService).extract(attachmentId);
      const status = await waitUntil(async () => {
        const [{ extraction_status: current }] = await m.db.query('SELECT extraction_status FROM attachments WHERE id = $1', [attachmentId]);
        return current !== 'pending' && current !== 'extracting' && current;
      }, 'the extraction to end');
      expect(status).toBe('extracted');
      expect(await m.db.query('SELECT uid, summary FROM calendar_events WHERE attachment_id = $1', [attachmentId])).toEqual([
        { uid: `nul-${id}`, summary: 'Standup' },
      ]);
    });
  });
});
