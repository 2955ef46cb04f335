import { mixedEmail } from '../fixtures/emails/make-invite-email';
import { getEvents } from '../support/event-feed';
import { EventSchemaError, validatedFeedAnswer } from '../support/event-schemas';
import { rpc } from '../support/mcp';
import { createMessagingTestApp, MessagingTestApp } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';

type Result = Record<string, any>;

/**
 * Verbose feed events carry attachment links signed for the caller at each read, as read_attachment
 * signs them (the holder is the caller's user and key): the payload then validates against the
 * catalog (which requires `url`; rpc and getEvents check every answer), and the link downloads the file.
 */
describe('event feed: attachment links of verbose events', () => {
  let m: MessagingTestApp;
  let s: Session;
  const CONTENT = Buffer.from('minutes of the planning meeting\n');

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
  });
  afterAll(async () => {
    await m?.close();
  });

  async function download(link: string): Promise<{ status: number; body: Buffer }> {
    const url = new URL(link);
    const res = await fetch(`${m.baseUrl}${url.pathname}${url.search}`);
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
  }

  it('signs each attachment for the caller over events/poll and GET /api/events; concise events have none', async () => {
    const subscription = { name: 'message.received', arguments: { mode: 'verbose' } };
    const start = (await rpc(m, s.apiKey, 'events/poll', { ...subscription, cursor: null }).expect(200)).body.result;
    const httpStart = (await getEvents(m, `Bearer ${s.apiKey}`, { type: 'message.received', mode: 'verbose' }).expect(200)).body;
    const conciseStart = (await rpc(m, s.apiKey, 'events/poll', { name: 'message.received', cursor: null }).expect(200)).body.result;
    const ingested = await m
      .http()
      .post('/ingest/email/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('Content-Type', 'message/rfc822')
      .send(
        mixedEmail(s.lines[0].address, [{ filename: 'minutes.txt', mimeType: 'text/plain', content: CONTENT }], {
          messageId: `<minutes-${Date.now()}@partner.example>`,
          subject: 'Minutes',
          text: 'See the minutes attached.',
        }),
      );
    expect(ingested.status).toBe(201);
    const [attachmentId] = ingested.body.attachmentIds as string[];

    const polled: Result = (await rpc(m, s.apiKey, 'events/poll', { ...subscription, cursor: start.cursor, timeoutMs: 10_000 }).expect(200)).body.result;
    const viaHttp: Result = (
      await getEvents(m, `Bearer ${s.apiKey}`, { type: 'message.received', mode: 'verbose', cursor: httpStart.cursor, wait: '10' }).expect(200)
    ).body;
    for (const answer of [polled, viaHttp]) {
      expect(answer.events).toHaveLength(1);
      const [attachment] = answer.events[0].data.data.attachments;
      expect(attachment).toMatchObject({ id: attachmentId, filename: 'minutes.txt', sizeBytes: CONTENT.length });
      // Minted for the user and the key, as read_attachment mints: `for=<user>.<key>`, valid an hour.
      expect(attachment.url).toMatch(/\/attachments\/[0-9a-f-]{36}\/download\?for=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{22}&expires=\d+&sig=[0-9a-f]{64}$/);
      const expires = Number(new URL(attachment.url).searchParams.get('expires')) * 1000;
      expect(expires - Date.now()).toBeGreaterThan(59 * 60_000);
      expect(expires - Date.now()).toBeLessThanOrEqual(60 * 60_000);
      const file = await download(attachment.url);
      expect(file.status).toBe(200);
      expect(file.body.equals(CONTENT)).toBe(true);
    }
    // The check every feed read goes through refuses the event without its link (the catalog requires `url`) and with a field it does not document.
    const event = polled.events[0];
    const unsigned = { ...event, data: { ...event.data, data: { ...event.data.data, attachments: [{ ...event.data.data.attachments[0], url: undefined }] } } };
    expect(() => validatedFeedAnswer({ events: [JSON.parse(JSON.stringify(unsigned))] })).toThrow(EventSchemaError);
    expect(() => validatedFeedAnswer({ events: [{ ...event, data: { ...event.data, endpointId: s.userId } }] })).toThrow(EventSchemaError);
    // A link whose signature was tampered with is refused: the signature is what the download checks.
    const link = new URL(polled.events[0].data.data.attachments[0].url);
    link.searchParams.set('sig', '0'.repeat(64));
    expect((await download(link.href)).status).not.toBe(200);

    const concise: Result = (await rpc(m, s.apiKey, 'events/poll', { name: 'message.received', cursor: conciseStart.cursor, timeoutMs: 10_000 }).expect(200))
      .body.result;
    expect(concise.events).toHaveLength(1);
    expect(concise.events[0].data.data).not.toHaveProperty('attachments');
  });
});
