import { EVENT_LIMITS } from '../src/messaging/message-data.builder';
import { toolOk } from './support/mcp';
import { createMessagingTestApp, Envelope, Hook, inboundSms, MessagingTestApp, partnerPhone } from './support/messaging-hooks';
import { createSession, Session } from './support/session';
import { INGEST_TOKEN } from './support/test-env';
import { waitUntil } from './support/wait';

/**
 * What one event may hold (docs/webhooks.md, "Payload size"): bodies, the subject, email headers
 * and the attachment list are cut in the one place that builds event data, a cut body says so,
 * the signature covers what is sent, and get_thread still gives the whole message.
 */
jest.setTimeout(60_000);

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

  it('a long email: its body, subject, References and attachment list are cut, the body says so, and get_thread has it all', async () => {
    const line = (i: number) => `Línea ${i}: café ☕ y más texto para llenar la línea 🚀 ${'·'.repeat(20)}`;
    const longBody = Array.from({ length: 2_000 }, (_, i) => line(i)).join('\n');
    expect(Array.from(longBody).length).toBeGreaterThan(EVENT_LIMITS.messageBodyChars * 4);
    const subject = `Asunto ${'muy largo '.repeat(150)}`.trim();
    const references = Array.from({ length: 40 }, (_, i) => `<ref-${i}-${Date.now()}@partner.example>`);
    const files = Array.from({ length: EVENT_LIMITS.attachments + 5 }, (_, i) => `file-${String(i).padStart(3, '0')}.txt`);
    const messageIdHeader = `<long-${Date.now()}@partner.example>`;
    const first = await postEmail(
      rawEmail(s.lines[0].address, { Subject: subject, 'Message-ID': messageIdHeader, References: references.join('\r\n ') }, longBody, files),
    );

    const [full] = (await toolOk(m, s.apiKey, 'get_thread', { threadId: first.threadId })).messages;
    expect(full.body.length).toBeGreaterThan(EVENT_LIMITS.messageBodyChars * 4);
    expect(full.attachments).toHaveLength(files.length);

    const event = await waitEvent(verbose, first.messageId); // signature verified by the hook
    expect(event.data.message.body).toBe(codePoints(full.body, EVENT_LIMITS.messageBodyChars));
    expect(event.data.message.bodyTruncated).toBe(true);
    const [entry] = event.data.thread.recentMessages;
    expect(entry).toEqual({ ...event.data.message, body: codePoints(full.body, EVENT_LIMITS.recentMessageBodyChars), bodyTruncated: true });
    expect(Array.from(event.data.thread.subject as string)).toHaveLength(EVENT_LIMITS.headerChars);
    expect(event.data.emailHeaders.references).toEqual([references[0], ...references.slice(-(EVENT_LIMITS.references - 1))]);
    expect(event.data.attachments.map((a: { filename: string }) => a.filename)).toEqual(files.slice(0, EVENT_LIMITS.attachments));

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
