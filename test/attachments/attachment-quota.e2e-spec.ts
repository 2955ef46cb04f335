import { randomBytes, randomUUID } from 'node:crypto';
import { toolError, toolOk } from '../support/mcp';
import { createMessagingTestApp, extractedEventsPublished, extractionIdle, Hook, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';

/**
 * The per-org attachment storage quota: an inbound message is never refused over it; an
 * attachment that does not fit keeps its metadata without bytes, is never extracted, and
 * read_attachment and downloads say why.
 */
jest.setTimeout(60_000);

const QUOTA_ERROR = /was not stored: the organization's attachment storage quota was reached/;

describe('attachment storage quota', () => {
  let m: MessagingTestApp;
  let s: Session;
  let hook: Hook;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    hook = await Hook.register(m, s.apiKey, { events: ['message.received', 'attachment.extracted'], mode: 'verbose' });
  });
  afterAll(async () => {
    await m?.close();
  });

  const phone = () => s.lines.find((l) => l.type === 'PHONE_NUMBER')!.address;
  const email = () => s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!.address;
  const text = (bytes: number, fill = 'a') => Buffer.from(fill.repeat(bytes));
  const quota = (body?: object) =>
    body === undefined ? m.admin.get(`/admin/orgs/${s.orgId}/attachment-quota`) : m.admin.put(`/admin/orgs/${s.orgId}/attachment-quota`, body);

  async function smsWithMedia(files: Array<{ filename: string; content: Buffer }>): Promise<{ messageId: string; attachmentIds: string[] }> {
    const res = await m
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({
        to: phone(),
        from: partnerPhone(),
        body: 'see attached',
        providerMessageId: `q-${randomBytes(6).toString('hex')}`,
        media: files.map((f) => ({ filename: f.filename, mimeType: 'text/plain', contentBase64: f.content.toString('base64') })),
      });
    expect(res.status).toBe(201);
    return res.body;
  }

  it('keeps the message and every attachment row; only the files that fit are stored and extracted', async () => {
    expect((await quota({ quotaBytes: 1_000 })).body).toEqual({ orgId: s.orgId, quotaBytes: 1_000, source: 'org', usedBytes: 0 });
    const { messageId, attachmentIds } = await smsWithMedia([
      { filename: 'a.txt', content: text(600, 'a') },
      { filename: 'b.txt', content: text(600, 'b') }, // 1,200 would pass the quota
      { filename: 'c.txt', content: text(300, 'c') }, // 900 does not
    ]);
    expect(attachmentIds).toHaveLength(3);
    const [a, b, c] = attachmentIds;
    expect((await quota()).body).toMatchObject({ quotaBytes: 1_000, usedBytes: 900 });

    // message.received lists all three, as always.
    const [received] = (await hook.waitFor(1, 'message.received')).filter((e) => e.data.message.id === messageId);
    expect(received.data.attachments.map((x: { filename: string; sizeBytes: number }) => [x.filename, x.sizeBytes])).toEqual([
      ['a.txt', 600],
      ['b.txt', 600],
      ['c.txt', 300],
    ]);

    // a and c are extracted (one event each); b never is.
    const extracted = await hook.waitFor(2, 'attachment.extracted');
    // Once every job has run to its end, an event for b would have its outbox row.
    await extractionIdle(m);
    expect(await extractedEventsPublished(m, [a, b, c])).toEqual({ [a]: 1, [b]: 0, [c]: 1 });
    expect(
      hook
        .events('attachment.extracted')
        .map((e) => e.data.attachment.id)
        .sort(),
    ).toEqual([a, c].sort());
    expect(extracted.every((e) => e.data.attachment.hasText)).toBe(true);

    expect((await toolOk(m, s.apiKey, 'read_attachment', { attachmentId: a })).text).toBe('a'.repeat(600));
    expect(await toolError(m, s.apiKey, 'read_attachment', { attachmentId: b })).toMatch(new RegExp(`^attachment ${b} \\(b\\.txt\\) ${QUOTA_ERROR.source}`));

    // The signed links of the webhook: a downloads, b answers 409 with the reason.
    const link = (id: string) => new URL(received.data.attachments.find((x: { id: string }) => x.id === id).url);
    const ok = await m.http().get(`${link(a).pathname}${link(a).search}`);
    expect(ok.status).toBe(200);
    expect(ok.text ?? ok.body.toString()).toBe('a'.repeat(600));
    const refused = await m.http().get(`${link(b).pathname}${link(b).search}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ statusCode: 409, message: expect.stringMatching(QUOTA_ERROR) });

    const rows = await m.db.query(
      `SELECT filename, content IS NULL AS no_bytes, content_status, extraction_status FROM attachments WHERE message_id = $1 ORDER BY created_at`,
      [messageId],
    );
    expect(rows).toEqual([
      { filename: 'a.txt', no_bytes: false, content_status: 'stored', extraction_status: 'extracted' },
      { filename: 'b.txt', no_bytes: true, content_status: 'quota_exceeded', extraction_status: 'failed' },
      { filename: 'c.txt', no_bytes: false, content_status: 'stored', extraction_status: 'extracted' },
    ]);
  });

  it('an inbound email over the quota is accepted; its attachment is kept without bytes', async () => {
    await quota({ quotaBytes: 900 }); // exactly what is stored: nothing more fits
    const boundary = 'q-boundary';
    const raw = [
      `From: Ada <ada@analytical.example>`,
      `To: ${email()}`,
      `Subject: invoice`,
      `Message-ID: <quota-${Date.now()}@analytical.example>`,
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Invoice attached.',
      '',
      `--${boundary}`,
      'Content-Type: text/plain; name="invoice.txt"',
      'Content-Disposition: attachment; filename="invoice.txt"',
      '',
      'total: 42',
      '',
      `--${boundary}--`,
      '',
    ].join('\r\n');
    const res = await m.http().post('/ingest/email/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).set('Content-Type', 'message/rfc822').send(raw);
    expect(res.status).toBe(201);
    const [attachmentId] = res.body.attachmentIds;
    const thread = await toolOk(m, s.apiKey, 'get_thread', { threadId: res.body.threadId });
    expect(thread.messages[0]).toMatchObject({ body: 'Invoice attached.\n', attachments: [{ id: attachmentId, filename: 'invoice.txt', sizeBytes: 11 }] });
    expect(await toolError(m, s.apiKey, 'read_attachment', { attachmentId })).toMatch(QUOTA_ERROR);
    expect((await quota()).body).toMatchObject({ usedBytes: 900 });
  });

  it('counts concurrent messages one after the other: exactly what fits is stored', async () => {
    await quota({ quotaBytes: 900 + 5 * 200 });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => smsWithMedia([{ filename: `p${i}.txt`, content: text(200, 'p') }])));
    const ids = results.map((r) => r.attachmentIds[0]);
    const [{ stored }] = await m.db.query(`SELECT count(*)::int AS stored FROM attachments WHERE id = ANY($1::uuid[]) AND content_status = 'stored'`, [ids]);
    expect(stored).toBe(5);
    expect((await quota()).body).toMatchObject({ usedBytes: 1_900 });
  });

  it('an operator sets, reads and removes the org quota; bad values are refused naming the field', async () => {
    expect((await m.admin.put(`/admin/orgs/${s.orgId}/attachment-quota`, { quotaBytes: -1 })).body).toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('quotaBytes'),
    });
    expect((await m.admin.put(`/admin/orgs/${s.orgId}/attachment-quota`, { quotaBytes: '10GB' })).status).toBe(400);
    expect((await m.admin.get(`/admin/orgs/${randomUUID()}/attachment-quota`)).status).toBe(404);
    const removed = await m.admin.delete(`/admin/orgs/${s.orgId}/attachment-quota`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ orgId: s.orgId, quotaBytes: 5 * 1024 ** 3, source: 'default', usedBytes: 1_900 });
    // Back on the default, the next file is stored.
    const { attachmentIds } = await smsWithMedia([{ filename: 'after.txt', content: text(10) }]);
    expect((await toolOk(m, s.apiKey, 'read_attachment', { attachmentId: attachmentIds[0] })).attachment.filename).toBe('after.txt');
  });
});
