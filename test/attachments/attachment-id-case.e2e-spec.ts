import { randomBytes } from 'node:crypto';
import { callTool } from '../support/mcp';
import { createMessagingTestApp, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';

/**
 * read_attachment names its attachment by a UUID in either letter case (the one id rule,
 * docs/decisions.md): the batched read of the thread page must not turn an upper-case id into
 * "not found", as it did when its rows (lowercase ids from PostgreSQL) were matched to the ids
 * given by exact text.
 */
jest.setTimeout(60_000);

describe('read_attachment takes the id in either case', () => {
  let m: MessagingTestApp;
  let s: Session;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin);
  });
  afterAll(async () => {
    await m?.close();
  });

  it('answers the same attachment for its id in lower and in upper case', async () => {
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const media = [{ filename: 'a.txt', mimeType: 'text/plain', contentBase64: Buffer.from('hello').toString('base64') }];
    const res = await m
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to: phone.address, from: partnerPhone(), body: 'see attached', providerMessageId: `case-${randomBytes(6).toString('hex')}`, media });
    expect(res.status).toBe(201);
    const [attachmentId] = res.body.attachmentIds as string[];
    const lower = await callTool(m, s.apiKey, 'read_attachment', { attachmentId });
    const upper = await callTool(m, s.apiKey, 'read_attachment', { attachmentId: attachmentId.toUpperCase() });
    expect(lower.isError).toBeUndefined();
    expect(upper.isError).toBeUndefined();
    expect((upper.structuredContent as { attachment: { id: string } }).attachment.id).toBe(attachmentId);
  });
});
