import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { getQueueToken } from '@nestjs/bull';
import { Queue } from 'bull';
import { DataSource } from 'typeorm';
import { AttachmentUrls } from '../../src/common/attachment-urls';
import { AttachmentExtractionService, EXTRACTION_QUEUE, INTERRUPTED_MESSAGE } from '../../src/attachments/attachment-extraction.service';
import { TextExtractor } from '../../src/attachments/extractors/text-extractor';
import { verifyWebhook, WebhookEnvelope } from '../../src/sdk';
import { DOCX_PARAGRAPHS, ICS_INVITE, makeDocx, makeIcs, makePdf, makePng, PDF_LINES } from '../fixtures/attachments/make-fixtures';
import { createTestApp, TestApp } from '../support/app';
import { ISO_MS, toolError, toolOk, UUID } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession, Session, uniquePhone } from '../support/session';
import { INGEST_TOKEN, privateQueuePrefix } from '../support/test-env';
import { waitUntil } from '../support/wait';

const EVENTS = ['message.received', 'attachment.extracted'];
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const CORRUPT_NAME = 'relevé de compte.pdf'; // non-ASCII: checks the RFC 6266 download header too

jest.setTimeout(30_000);

describe('attachments: extraction, read_attachment, downloads', () => {
  let t: TestApp;
  let db: DataSource;
  let extraction: AttachmentExtractionService;
  const receiver = new TestReceiver();
  let receiverUrl: string;
  let s: Session;
  let phone: Session['lines'][number];
  const hooks: Record<'concise' | 'verbose', { path: string; secret: string }> = {} as never;

  type File = { filename: string; mimeType: string; content: Buffer };
  const files: Record<'pdf' | 'png' | 'docx' | 'ics' | 'corrupt', File> = {
    pdf: { filename: 'invoice.pdf', mimeType: 'application/pdf', content: makePdf() },
    png: { filename: 'scan.png', mimeType: 'image/png', content: makePng() },
    docx: { filename: 'memo.docx', mimeType: DOCX, content: Buffer.alloc(0) },
    ics: { filename: 'invite.ics', mimeType: 'text/calendar', content: makeIcs() },
    corrupt: { filename: CORRUPT_NAME, mimeType: 'application/pdf', content: Buffer.from('%PDF-1.4 this is not really a PDF\n') },
  };
  type Kind = keyof typeof files;
  const ids = {} as Record<Kind, string>;
  let messageId: string;
  let inbound: Record<string, unknown>;

  const received = (mode: 'concise' | 'verbose', type?: string): Array<WebhookEnvelope<any>> =>
    receiver.requests
      .filter((r) => r.url === hooks[mode].path)
      .map((r) => verifyWebhook<any>(r.body, r.headers['x-service-signature'] as string, [hooks[mode].secret]))
      .filter((e) => type === undefined || e.type === type);

  /** One attachment's extraction, within the test's own timeout. */
  const EXTRACTION = { timeoutMs: 25_000 };

  const extractedFor = (mode: 'concise' | 'verbose', attachmentId: string) =>
    received(mode, 'attachment.extracted').filter((e) => e.data.attachment.id === attachmentId);

  const ingest = (body: Record<string, unknown>) => t.http().post('/ingest/sms/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).send(body);

  const outboxCount = async (attachmentId: string): Promise<number> => {
    const [row] = await db.query(`SELECT count(*)::int AS n FROM outbox_events WHERE type = 'attachment.extracted' AND data->'attachment'->>'id' = $1`, [
      attachmentId,
    ]);
    return row.n;
  };

  /** An attachment row with no job behind it, as if its enqueue had been lost (or a worker died). */
  const insertAttachment = async (fields: { status: 'pending' | 'extracting'; startedMinutesAgo?: number; createdMinutesAgo?: number; file?: File }) => {
    const file = fields.file ?? { filename: 'late.txt', mimeType: 'text/plain', content: Buffer.from('found by the sweep') };
    const [row] = await db.query(
      `INSERT INTO attachments (org_id, message_id, filename, mime_type, size_bytes, content, extraction_status, extraction_started_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $8::int IS NULL THEN NULL ELSE now() - make_interval(mins => $8::int) END,
               now() - make_interval(mins => $9::int))
       RETURNING id`,
      [
        s.orgId,
        messageId,
        file.filename,
        file.mimeType,
        file.content.length,
        file.content,
        fields.status,
        fields.startedMinutesAgo ?? null,
        fields.createdMinutesAgo ?? 0,
      ],
    );
    return row.id as string;
  };

  beforeAll(async () => {
    files.docx.content = await makeDocx();
    receiverUrl = await receiver.start();
    t = await createTestApp({ env: { APP_ENV: 'development', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', QUEUE_PREFIX: privateQueuePrefix('attachments') } });
    await t.app.listen(0, '127.0.0.1'); // for the official MCP client
    db = t.app.get(DataSource);
    extraction = t.app.get(AttachmentExtractionService);
    s = await createSession(t.admin, { tier: 'PRO' });
    phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    for (const mode of ['concise', 'verbose'] as const) {
      const path = `/hook/${mode}`;
      const { secret } = await toolOk(t, s.apiKey, 'register_webhook', { url: `${receiverUrl}${path}`, events: EVENTS, mode });
      hooks[mode] = { path, secret };
    }

    const kinds = Object.keys(files) as Kind[];
    inbound = {
      to: phone.address,
      from: uniquePhone(),
      body: 'documents attached',
      providerMessageId: `att-${randomBytes(6).toString('hex')}`,
      media: kinds.map((k) => ({ filename: files[k].filename, mimeType: files[k].mimeType, contentBase64: files[k].content.toString('base64') })),
    };
    const res = await ingest(inbound);
    expect(res.status).toBe(201);
    messageId = res.body.messageId;
    expect(res.body.attachmentIds).toHaveLength(kinds.length);
    kinds.forEach((k, i) => (ids[k] = res.body.attachmentIds[i]));
    // OCR starts a tesseract worker on first use: allow for a slow, shared machine.
    await waitUntil(
      () => received('verbose', 'attachment.extracted').length >= kinds.length && received('concise', 'attachment.extracted').length >= kinds.length,
      'attachment.extracted x5 on both endpoints',
      { timeoutMs: 45_000 },
    );
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await receiver.stop();
  });

  it('publishes message.received first, then exactly one attachment.extracted per attachment', async () => {
    const published: Array<{ type: string; attachment_id: string | null }> = await db.query(
      `SELECT type, data->'attachment'->>'id' AS attachment_id FROM outbox_events WHERE data->'message'->>'id' = $1 ORDER BY id`,
      [messageId],
    );
    expect(published[0]).toEqual({ type: 'thread.created', attachment_id: null });
    expect(published[1]).toEqual({ type: 'message.received', attachment_id: null });
    expect(published.slice(2).map((p) => p.type)).toEqual(Array(5).fill('attachment.extracted'));
    expect(
      published
        .slice(2)
        .map((p) => p.attachment_id)
        .sort(),
    ).toEqual(Object.values(ids).sort());

    for (const mode of ['concise', 'verbose'] as const) {
      const messageReceived = received(mode, 'message.received');
      expect(messageReceived).toHaveLength(1);
      expect(messageReceived[0].data.message.id).toBe(messageId);
      // Nothing about extraction in message.received: the text is signalled only by attachment.extracted.
      expect(messageReceived[0].data.attachment).toBeUndefined();
      for (const id of Object.values(ids)) expect(extractedFor(mode, id)).toHaveLength(1);
    }
  });

  it('concise attachment.extracted: the message.received base data plus attachment and calendarEvents', () => {
    const [event] = extractedFor('concise', ids.pdf);
    expect(event.mode).toBe('concise');
    expect(Object.keys(event.data).sort()).toEqual(['attachment', 'calendarEvents', 'labels', 'message', 'person', 'thread']);
    expect(Object.keys(event.data.thread).sort()).toEqual(['id', 'lastMessageAt', 'messageCount', 'subject']);
    expect(event.data.person).toEqual({ id: null, displayName: expect.any(String) });
    expect(event.data.message).toMatchObject({ id: messageId, channel: 'SMS', direction: 'INBOUND', status: 'RECEIVED', body: 'documents attached' });
    expect(event.data.attachment).toEqual({
      id: ids.pdf,
      filename: 'invoice.pdf',
      mimeType: 'application/pdf',
      sizeBytes: files.pdf.content.length,
      messageId,
      textLength: PDF_LINES.join('\n').length,
      hasText: true,
      extractedAt: expect.stringMatching(ISO_MS),
    });
    expect(event.data.calendarEvents).toEqual([]);
  });

  it('verbose attachment.extracted adds history, identities, signed attachment links and label confidence', () => {
    const [event] = extractedFor('verbose', ids.docx);
    expect(event.mode).toBe('verbose');
    expect(Object.keys(event.data).sort()).toEqual(['attachment', 'attachments', 'calendarEvents', 'labelConfidence', 'labels', 'message', 'person', 'thread']);
    expect(event.data.thread.recentMessages.map((m: { id: string }) => m.id)).toEqual([messageId]);
    expect(event.data.person.identities).toHaveLength(1);
    expect(event.data.labelConfidence).toEqual({});
    expect(event.data.attachments).toHaveLength(5);
    for (const a of event.data.attachments) {
      expect(a).toEqual({
        id: expect.stringMatching(UUID),
        filename: expect.any(String),
        mimeType: expect.any(String),
        sizeBytes: expect.any(Number),
        url: expect.stringContaining(`/attachments/${a.id}/download?for=`),
      });
    }
    expect(event.data.attachment).toMatchObject({ id: ids.docx, filename: 'memo.docx', mimeType: DOCX, hasText: true });
  });

  it('PDF text is read back with read_attachment', async () => {
    const result = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: ids.pdf });
    expect(result.attachment).toEqual({
      id: ids.pdf,
      filename: 'invoice.pdf',
      mimeType: 'application/pdf',
      sizeBytes: files.pdf.content.length,
      messageId,
      extractionStatus: 'extracted',
      textLength: PDF_LINES.join('\n').length,
      hasText: true,
      extractedAt: extractedFor('concise', ids.pdf)[0].data.attachment.extractedAt,
      extractionError: null,
    });
    expect(result.text).toBe(PDF_LINES.join('\n'));
    expect(result.calendarEvents).toEqual([]);
    expect(result.note).toBeNull();
    expect(result.downloadUrl).toContain(`/attachments/${ids.pdf}/download?for=`);
    expect(Date.parse(result.downloadUrlExpiresAt) - Date.now()).toBeGreaterThan(59 * 60_000);
  });

  it('OCR of the PNG finds the printed words', async () => {
    const result = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: ids.png });
    expect(result.attachment.extractionStatus).toBe('extracted');
    expect(result.text.toLowerCase()).toContain('quarterly invoice');
    expect(result.text).toContain('4521');
    const [event] = extractedFor('concise', ids.png);
    expect(event.data.attachment).toMatchObject({ hasText: true, textLength: result.attachment.textLength });
  });

  it('docx text is read back', async () => {
    const result = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: ids.docx });
    expect(result.text).toBe(DOCX_PARAGRAPHS.join('\n\n'));
  });

  it('an .ics invite gives calendarEvents in the event and in read_attachment', async () => {
    const expected = {
      id: expect.stringMatching(UUID),
      uid: ICS_INVITE.uid,
      method: 'REQUEST',
      status: 'CONFIRMED',
      summary: ICS_INVITE.summary,
      startsAt: ICS_INVITE.startsAt,
      endsAt: ICS_INVITE.endsAt,
      organizerEmail: ICS_INVITE.organizer,
      attendeeEmails: ICS_INVITE.attendees,
    };
    for (const mode of ['concise', 'verbose'] as const) {
      const [event] = extractedFor(mode, ids.ics);
      expect(event.data.calendarEvents).toEqual([expected]);
      expect(event.data.attachment).toMatchObject({ filename: 'invite.ics', mimeType: 'text/calendar', hasText: true });
    }
    const result = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: ids.ics });
    expect(result.calendarEvents).toEqual([{ ...expected, id: extractedFor('concise', ids.ics)[0].data.calendarEvents[0].id }]);
    expect(result.text).toContain(`Event: ${ICS_INVITE.summary}`);
    expect(result.text).toContain(`Organizer: ${ICS_INVITE.organizer}`);
  });

  it('a corrupt file still gets its one event, with hasText false', async () => {
    for (const mode of ['concise', 'verbose'] as const) {
      const events = extractedFor(mode, ids.corrupt);
      expect(events).toHaveLength(1);
      expect(events[0].data.attachment).toMatchObject({ filename: CORRUPT_NAME, textLength: 0, hasText: false, extractedAt: expect.stringMatching(ISO_MS) });
      expect(events[0].data.calendarEvents).toEqual([]);
    }
    const result = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: ids.corrupt });
    expect(result.attachment).toMatchObject({
      extractionStatus: 'failed',
      hasText: false,
      textLength: 0,
      extractionError: expect.stringMatching(/not a readable PDF/),
    });
    expect(result.text).toBeNull();
    expect(result.note).toMatch(/No text could be extracted/);
  });

  it('replaying the jobs, running them again or sweeping publishes no second event', async () => {
    const queue = t.app.get<Queue>(getQueueToken(EXTRACTION_QUEUE));
    const drained = async () => {
      const counts = await queue.getJobCounts();
      return counts.waiting + counts.active + counts.delayed === 0;
    };
    // The run's database is shared: files of other test files whose apps closed before their
    // extraction ended are still pending or claimed. The sweep takes them all (it is the service's
    // own recovery): done once here and drained, the sweep below counts only what this test left.
    await extraction.sweep({ lostJobAfterMs: 0, interruptedAfterMs: 0 });
    await waitUntil(drained, "other files' leftover attachments to be extracted", { timeoutMs: 120_000 });
    for (const id of Object.values(ids)) {
      await queue.add({ attachmentId: id }, { jobId: `extract:${id}`, removeOnComplete: true, removeOnFail: true });
      expect(await extraction.extract(id)).toBe(false);
    }
    expect(await extraction.sweep({ lostJobAfterMs: 0, interruptedAfterMs: 0 })).toEqual({ requeued: 0, interrupted: 0 });
    // The replayed jobs run and find nothing to claim.
    await waitUntil(drained, 'the replayed jobs to run');
    // A repeated carrier webhook (same providerMessageId) enqueues again (before it answers): also nothing.
    const repeat = await ingest(inbound);
    expect(repeat.status).toBe(200);
    expect([...repeat.body.attachmentIds].sort()).toEqual(Object.values(ids).sort());
    await waitUntil(drained, 'the jobs of the repeated webhook to run');
    // A job publishes in the transaction that closes its claim: no second outbox row, no second event.
    for (const id of Object.values(ids)) {
      expect(await outboxCount(id)).toBe(1);
      expect(extractedFor('verbose', id)).toHaveLength(1);
    }
  }, 150_000);

  it('the sweep enqueues a pending attachment whose job was lost', async () => {
    const id = await insertAttachment({ status: 'pending', createdMinutesAgo: 2 });
    const { requeued } = await extraction.sweep({ interruptedAfterMs: 60 * 60_000 });
    expect(requeued).toBeGreaterThanOrEqual(1);
    await waitUntil(() => extractedFor('concise', id).length === 1, 'the swept attachment to be extracted', EXTRACTION);
    expect(extractedFor('concise', id)[0].data.attachment).toMatchObject({ filename: 'late.txt', textLength: 'found by the sweep'.length, hasText: true });
    const result = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: id });
    expect(result.text).toBe('found by the sweep');
  });

  it('an interrupted claim is not re-run: the sweep closes it as failed with its one event', async () => {
    const id = await insertAttachment({ status: 'extracting', startedMinutesAgo: 10, file: files.pdf });
    const recent = await insertAttachment({ status: 'extracting', startedMinutesAgo: 1, file: files.pdf });
    expect(await extraction.extract(id)).toBe(false); // claimed already: never parsed twice
    const first = await extraction.sweep();
    expect(first.interrupted).toBe(1);
    expect(await extraction.sweep()).toMatchObject({ interrupted: 0 });
    await waitUntil(() => extractedFor('verbose', id).length === 1, 'the interrupted attachment event', EXTRACTION);
    expect(extractedFor('verbose', id)[0].data.attachment).toMatchObject({ hasText: false, textLength: 0 });
    expect(await outboxCount(id)).toBe(1);
    const result = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: id });
    expect(result.attachment).toMatchObject({ extractionStatus: 'failed', extractionError: INTERRUPTED_MESSAGE });
    // A claim younger than the limit may still be running somewhere: left alone.
    expect(await outboxCount(recent)).toBe(0);
    const pending = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: recent });
    expect(pending.attachment.extractionStatus).toBe('extracting');
  });

  it('a job that finishes after the sweep closed its claim publishes nothing more', async () => {
    const id = await insertAttachment({ status: 'pending', file: files.png });
    // Hold this one extraction after its claim, until the sweep has closed the claim.
    const extractor = t.app.get(TextExtractor);
    const original = extractor.extract.bind(extractor);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const spy = jest.spyOn(extractor, 'extract').mockImplementationOnce(async (file, limits) => {
      await gate;
      return original(file, limits);
    });
    try {
      const running = extraction.extract(id);
      await waitUntil(() => spy.mock.calls.length === 1, 'the claim');
      expect((await extraction.sweep({ interruptedAfterMs: 0 })).interrupted).toBeGreaterThanOrEqual(1);
      release();
      expect(await running).toBe(true); // it did extract, but its result came too late
    } finally {
      release();
      spy.mockRestore();
    }
    await waitUntil(() => extractedFor('concise', id).length === 1, 'the interrupted event', EXTRACTION);
    // The late job has finished (running resolved): had it published, its row would be there.
    expect(await outboxCount(id)).toBe(1);
    expect(extractedFor('concise', id)[0].data.attachment.hasText).toBe(false);
    const result = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: id });
    expect(result.attachment).toMatchObject({ extractionStatus: 'failed', extractionError: INTERRUPTED_MESSAGE });
  });

  it('read_attachment says clearly when extraction has not finished', async () => {
    const id = await insertAttachment({ status: 'pending' });
    const result = await toolOk(t, s.apiKey, 'read_attachment', { attachmentId: id });
    expect(result.attachment).toMatchObject({ extractionStatus: 'pending', textLength: 0, hasText: false, extractedAt: null });
    expect(result.text).toBeNull();
    expect(result.note).toMatch(/not finished yet/);
  });

  it('the official MCP client accepts every shape of read_attachment result (its outputSchema holds)', async () => {
    const pending = await insertAttachment({ status: 'pending' });
    const client = new Client({ name: 'e2e-attachments', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${await t.app.getUrl()}/api/mcp`), { requestInit: { headers: { Authorization: `Bearer ${s.apiKey}` } } }),
    );
    try {
      // The client validates structuredContent against the outputSchema it was given by tools/list.
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('read_attachment');
      for (const attachmentId of [ids.pdf, ids.ics, ids.corrupt, pending]) {
        const result = (await client.callTool({ name: 'read_attachment', arguments: { attachmentId } })) as CallToolResult;
        expect(result.isError).toBeFalsy();
        expect((result.structuredContent as { attachment: { id: string } }).attachment.id).toBe(attachmentId);
      }
      const missing = (await client.callTool({ name: 'read_attachment', arguments: { attachmentId: randomUUID() } })) as CallToolResult;
      expect(missing.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('the verbose webhook link downloads the exact bytes', async () => {
    const [event] = extractedFor('verbose', ids.corrupt);
    for (const a of event.data.attachments as Array<{ id: string; url: string }>) {
      const kind = (Object.keys(ids) as Kind[]).find((k) => ids[k] === a.id)!;
      const url = new URL(a.url);
      const res = await t
        .http()
        .get(`${url.pathname}${url.search}`)
        .buffer(true)
        .parse((r, cb) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => cb(null, Buffer.concat(chunks)));
        });
      expect(res.status).toBe(200);
      expect(Buffer.compare(res.body as Buffer, files[kind].content)).toBe(0);
      expect(res.headers['content-type']).toBe(files[kind].mimeType);
      expect(res.headers['content-length']).toBe(String(files[kind].content.length));
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      if (kind === 'corrupt') {
        expect(res.headers['content-disposition']).toBe(`attachment; filename="relev_ de compte.pdf"; filename*=UTF-8''relev%C3%A9%20de%20compte.pdf`);
      } else {
        expect(res.headers['content-disposition']).toBe(`attachment; filename="${files[kind].filename}"; filename*=UTF-8''${files[kind].filename}`);
      }
    }
  });

  it('a tampered or expired link is 403; a valid link to no attachment is 404', async () => {
    const urls = t.app.get(AttachmentUrls);
    const holder = { userId: s.userId, keyId: null };
    const good = new URL(urls.sign(ids.pdf, holder, new Date()));
    const sig = good.searchParams.get('sig')!;
    const forParam = `for=${good.searchParams.get('for')}`;
    const tampered = `${good.pathname}?${forParam}&expires=${good.searchParams.get('expires')}&sig=${(sig[0] === 'a' ? 'b' : 'a') + sig.slice(1)}`;
    const res = await t.http().get(tampered);
    expect(res.status).toBe(403);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toMatchObject({ statusCode: 403, message: expect.stringMatching(/invalid or has expired/) });
    // The signature covers the expiry: a later one with the same digest is refused.
    expect((await t.http().get(`${good.pathname}?${forParam}&expires=${Number(good.searchParams.get('expires')) + 3600}&sig=${sig}`)).status).toBe(403);
    expect((await t.http().get(good.pathname)).status).toBe(403);
    // Another attachment's signature does not open this one.
    const other = new URL(urls.sign(ids.docx, holder, new Date()));
    expect((await t.http().get(`${good.pathname}${other.search}`)).status).toBe(403);

    const expired = new URL(urls.sign(ids.pdf, holder, new Date(Date.now() - 2 * 60 * 60_000)));
    const late = await t.http().get(`${expired.pathname}${expired.search}`);
    expect(late.status).toBe(403);
    expect(late.body.statusCode).toBe(403);

    const missing = new URL(urls.sign(randomUUID(), holder, new Date()));
    const gone = await t.http().get(`${missing.pathname}${missing.search}`);
    expect(gone.status).toBe(404);
    expect(gone.body.statusCode).toBe(404);
    expect((await t.http().get(`${good.pathname}${good.search}`)).status).toBe(200); // the untampered link works
  });

  it("another org's attachment, or a line the key does not cover, reads as not found", async () => {
    const stranger = await createSession(t.admin);
    expect(await toolError(t, stranger.apiKey, 'read_attachment', { attachmentId: ids.pdf })).toMatch(/attachment .* not found/);
    expect(await toolError(t, s.apiKey, 'read_attachment', { attachmentId: randomUUID() })).toMatch(/not found/);

    const email = s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
    const keyFor = async (lines: string[]) =>
      (await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'scoped', channelAccess: { mode: 'LINES', lines } })).body.key as string;
    const emailOnly = await keyFor([email.address]);
    expect(await toolError(t, emailOnly, 'read_attachment', { attachmentId: ids.pdf })).toMatch(/not found/);
    const phoneOnly = await keyFor([phone.address]);
    expect((await toolOk(t, phoneOnly, 'read_attachment', { attachmentId: ids.pdf })).attachment.id).toBe(ids.pdf);
  });
});
