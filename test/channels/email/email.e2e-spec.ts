import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { getQueueToken } from '@nestjs/bull';
import { Queue } from 'bull';
import { ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer, SMTPServerSession } from 'smtp-server';
import { DataSource } from 'typeorm';
import { OUTBOUND_QUEUE, OutboundService } from '../../../src/conversations/outbound/outbound.service';
import { TRACKING_GIF } from '../../../src/channels/email/open-tracking.controller';
import { verifyWebhook, WebhookEnvelope } from '../../../src/sdk';
import { createTestApp, TestApp } from '../../support/app';
import { TestReceiver } from '../../support/receiver';
import { createSession, Session } from '../../support/session';
import { INGEST_TOKEN } from '../../support/test-env';
import { sleep, waitUntil } from '../../support/wait';

// One open-tracking test waits out the (shortened) scanner and dedup windows.
jest.setTimeout(30_000);

const FIXTURES = join(__dirname, '../../fixtures', 'emails');
/** The address the fixtures are written to; each test swaps in its own line's address. */
const FIXTURE_LINE = /support@acme\.example/g;
const SCANNER_WINDOW_SECONDS = 1;
const DEDUP_SECONDS = 1;
const GMAIL_PROXY_UA = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';
const MIMECAST_UA = 'Mozilla/5.0 (compatible; Mimecast URL Protect/1.0)';
const EVENTS = ['thread.created', 'message.received', 'message.sent', 'message.status_changed', 'email.opened'];

type Data = any; // event data is asserted field by field

/** A real SMTP server on loopback: records every message, or refuses as the test says. */
class TestSmtpServer {
  readonly received: Array<{ from: string; to: string[]; raw: Buffer }> = [];
  connections = 0;
  down = false;
  private server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    logger: false,
    onConnect: (_session: SMTPServerSession, callback: (err?: Error) => void) => {
      this.connections += 1;
      if (!this.down) return callback();
      callback(Object.assign(new Error('Service not available, try again later'), { responseCode: 421 }));
    },
    onRcptTo: (address, _session, callback) => {
      if (address.address.startsWith('bounce@')) return callback(Object.assign(new Error('5.1.1 mailbox unavailable'), { responseCode: 550 }));
      callback();
    },
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        this.received.push({
          from: (session.envelope.mailFrom as { address: string }).address,
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
        });
        callback();
      });
    },
  });

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('email: inbound, send_email over SMTP, open tracking', () => {
  let t: TestApp;
  let db: DataSource;
  let queue: Queue;
  const receiver = new TestReceiver();
  const smtp = new TestSmtpServer();
  let receiverUrl: string;
  let rpcId = 1;

  beforeAll(async () => {
    const port = await smtp.start();
    receiverUrl = await receiver.start();
    t = await createTestApp({
      env: {
        APP_ENV: 'development',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
        SMTP_URL: `smtp://127.0.0.1:${port}`,
        EMAIL_OPEN_SCANNER_WINDOW_SECONDS: String(SCANNER_WINDOW_SECONDS),
        EMAIL_OPEN_DEDUP_SECONDS: String(DEDUP_SECONDS),
        EMAIL_OPEN_IGNORED_USER_AGENTS: undefined,
      },
    });
    db = t.app.get(DataSource);
    queue = t.app.get<Queue>(getQueueToken(OUTBOUND_QUEUE));
  });

  afterAll(async () => {
    await t?.close();
    await receiver.stop();
    await smtp.stop();
  });

  /** A user with email lines, and two webhook endpoints (concise and verbose) on paths of their own. */
  async function setup(lines: Array<'EMAIL_ACCOUNT' | 'PHONE_NUMBER'> = ['EMAIL_ACCOUNT']) {
    const session = await createSession(t.admin, { lines });
    const tag = randomBytes(4).toString('hex');
    const secrets: Record<string, string> = {};
    for (const mode of ['concise', 'verbose'] as const) {
      const result = await tool(session, 'register_webhook', { url: `${receiverUrl}/${tag}/${mode}`, events: EVENTS, mode });
      expect(result.isError).toBeFalsy();
      secrets[mode] = result.structuredContent.secret;
    }
    const events = (mode: 'concise' | 'verbose', type?: string): Array<WebhookEnvelope<Data>> =>
      receiver.requests
        .filter((r) => r.url === `/${tag}/${mode}`)
        .map((r) => verifyWebhook<Data>(r.body, r.headers['x-service-signature'] as string, [secrets[mode]]))
        .filter((e) => type === undefined || e.type === type);
    const waitFor = (mode: 'concise' | 'verbose', type: string, count = 1) =>
      waitUntil(() => events(mode, type).length >= count && events(mode, type), `${count} ${type} (${mode})`);
    const line = session.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
    /**
     * The events of `mode` (and `type`) once nothing more is coming: when every outbox row of the
     * line has been relayed, a sentinel email is posted to it and its message.received awaited at
     * both endpoints. Whatever was published before it was handed to delivery first, so it has
     * arrived by then. The sentinel's own events are left out of the answer.
     */
    const settled = async (mode: 'concise' | 'verbose', type?: string): Promise<Array<WebhookEnvelope<Data>>> => {
      await waitUntil(
        async () => (await db.query(`SELECT 1 FROM outbox_events WHERE line_id = $1 AND relayed_at IS NULL LIMIT 1`, [line.id])).length === 0,
        `the outbox of line ${line.id} to be relayed`,
      );
      const tag = randomBytes(4).toString('hex');
      const sentinel = await postEmail(
        `From: sentinel-${tag}@else.example\r\nTo: ${line.address}\r\nMessage-ID: <sentinel-${tag}@else.example>\r\nSubject: sentinel\r\n\r\nlast\r\n`,
      );
      expect(sentinel.status).toBe(201);
      const isSentinel = (e: WebhookEnvelope<Data>) => e.data.message?.id === sentinel.body.messageId;
      for (const m of ['concise', 'verbose'] as const) {
        await waitUntil(() => events(m, 'message.received').some(isSentinel), `the sentinel email's message.received (${m})`);
      }
      return events(mode, type).filter((e) => !isSentinel(e));
    };
    return { session, line, events, waitFor, settled };
  }

  async function tool(session: Session, name: string, args: Record<string, unknown>) {
    const res = await t
      .http()
      .post('/api/mcp')
      .set('Authorization', `Bearer ${session.apiKey}`)
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: rpcId++, method: 'tools/call', params: { name, arguments: args } });
    expect(res.status).toBe(200);
    return res.body.result as { isError?: boolean; structuredContent: Data; content: Array<{ text: string }> };
  }

  function fixture(name: string, lineAddress: string): Buffer {
    return Buffer.from(readFileSync(join(FIXTURES, name)).toString('latin1').replace(FIXTURE_LINE, lineAddress), 'latin1');
  }

  function postEmail(raw: Buffer | string, token: string | null = INGEST_TOKEN, contentType = 'message/rfc822') {
    const req = t.http().post('/ingest/email/inbound').set('Content-Type', contentType);
    return (token ? req.set('Authorization', `Bearer ${token}`) : req).send(Buffer.isBuffer(raw) ? raw : Buffer.from(raw));
  }

  async function messageRow(id: string) {
    const [row] = await db.query(`SELECT * FROM messages WHERE id = $1`, [id]);
    return row;
  }

  async function waitStatus(id: string, status: string) {
    return waitUntil(
      async () => {
        const row = await messageRow(id);
        return row.status === status && row;
      },
      `message ${id} to be ${status}`,
      { timeoutMs: 20_000 },
    );
  }

  function smtpMessageTo(address: string, after = 0) {
    return waitUntil(() => smtp.received.slice(after).find((m) => m.to.includes(address)), `an SMTP message to ${address}`);
  }

  describe('POST /ingest/email/inbound', () => {
    it('records a new email as an orphan-partner thread: thread.created + message.received, concise and verbose', async () => {
      const { line, waitFor, events } = await setup();
      const res = await postEmail(fixture('plain.eml', line.address));
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ threadCreated: true, duplicate: false, attachmentIds: [] });

      const [verbose] = await waitFor('verbose', 'message.received');
      const [concise] = await waitFor('concise', 'message.received');
      await waitFor('verbose', 'thread.created');
      const [created] = await waitFor('concise', 'thread.created');

      const message = {
        id: res.body.messageId,
        threadId: res.body.threadId,
        channel: 'EMAIL',
        direction: 'INBOUND',
        status: 'RECEIVED',
        body: expect.stringContaining('order #1843'),
        fromIdentity: { value: 'ada@analytical.example', kind: 'EMAIL' },
        toIdentity: { value: line.address, kind: 'EMAIL' },
      };
      expect(concise.data).toEqual({
        thread: { id: res.body.threadId, subject: 'Question about my order', lastMessageAt: expect.any(String), messageCount: 1 },
        person: { id: null, displayName: 'Ada Lovelace' },
        labels: [],
        message: expect.objectContaining(message),
      });
      expect(created.data.message.id).toBe(res.body.messageId);
      expect(verbose.data.emailHeaders).toEqual({
        messageId: '<plain-0001@analytical.example>',
        inReplyTo: null,
        references: [],
        listUnsubscribe: null,
        authentication: { spf: null, dkim: null, dmarc: null },
      });
      expect(verbose.data.person).toEqual({
        id: null,
        displayName: 'Ada Lovelace',
        identities: [{ id: expect.any(String), kind: 'EMAIL', value: 'ada@analytical.example', displayName: 'Ada Lovelace' }],
      });
      expect(verbose.data.attachments).toEqual([]);
      expect(
        events('concise')
          .map((e) => e.type)
          .sort(),
      ).toEqual(['message.received', 'thread.created']);
    });

    it('answers a repeated Message-ID with 200 and the same ids, creating nothing and publishing nothing', async () => {
      const { line, waitFor, settled } = await setup();
      const raw = fixture('plain.eml', line.address);
      const first = await postEmail(raw);
      expect(first.status).toBe(201);
      await waitFor('verbose', 'message.received');
      const again = await postEmail(raw);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ messageId: first.body.messageId, threadId: first.body.threadId, duplicate: true });
      const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM messages WHERE line_id = $1`, [line.id]);
      expect(count).toBe(1);
      expect((await settled('verbose')).map((e) => e.type).sort()).toEqual(['message.received', 'thread.created']);
    });

    it('identifies a message without Message-ID by the SHA-256 of its bytes', async () => {
      const { line } = await setup();
      const raw = `From: someone@else.example\r\nTo: ${line.address}\r\nSubject: no id\r\n\r\nhello\r\n`;
      const first = await postEmail(raw);
      expect(first.status).toBe(201);
      expect((await postEmail(raw)).status).toBe(200);
      const row = await messageRow(first.body.messageId);
      expect(row.provider_message_id).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(row.header_message_id).toBeNull();
      expect((await postEmail(raw.replace('hello', 'hello again'))).status).toBe(201);
    });

    it('threads a reply by In-Reply-To/References into the existing thread: message.received only', async () => {
      const { line, waitFor, settled } = await setup();
      const first = await postEmail(fixture('plain.eml', line.address));
      await waitFor('verbose', 'message.received');
      const reply = await postEmail(fixture('reply.eml', line.address));
      expect(reply.status).toBe(201);
      expect(reply.body).toMatchObject({ threadId: first.body.threadId, threadCreated: false });

      const received = await waitFor('verbose', 'message.received', 2);
      const data = received.find((e) => e.data.message.id === reply.body.messageId)!.data;
      expect(data.thread).toMatchObject({ id: first.body.threadId, subject: 'Question about my order', messageCount: 2 });
      expect(data.thread.recentMessages.map((m: Data) => m.id)).toEqual([first.body.messageId, reply.body.messageId]);
      expect(data.message.body).toContain('any news about order #1843?');
      expect(data.emailHeaders).toMatchObject({
        messageId: '<reply-0002@analytical.example>',
        inReplyTo: '<plain-0001@analytical.example>',
        references: ['<plain-0001@analytical.example>'],
      });
      expect(await settled('verbose', 'thread.created')).toHaveLength(1);
    });

    it('takes SPF/DKIM/DMARC from the topmost Authentication-Results header', async () => {
      const { line, waitFor } = await setup();
      const res = await postEmail(fixture('authenticated.eml', line.address));
      expect(res.status).toBe(201);
      const [verbose] = await waitFor('verbose', 'message.received');
      expect(verbose.data.emailHeaders.authentication).toEqual({ spf: 'pass', dkim: 'fail', dmarc: 'pass' });
      const [concise] = await waitFor('concise', 'message.received');
      expect(concise.data).not.toHaveProperty('emailHeaders');
      const row = await messageRow(res.body.messageId);
      expect([row.auth_spf, row.auth_dkim, row.auth_dmarc]).toEqual(['pass', 'fail', 'pass']);
    });

    it('keeps the text alternative as the body, the HTML beside it, and List-Unsubscribe', async () => {
      const { line, waitFor } = await setup();
      const res = await postEmail(fixture('alternative.eml', line.address));
      expect(res.status).toBe(201);
      const [verbose] = await waitFor('verbose', 'message.received');
      expect(verbose.data.message.body).toBe("This week's specials: sourdough loaf and cardamom buns.\nOrder by Friday for weekend pickup.\n");
      expect(verbose.data.thread.subject).toBe('This week’s specials');
      expect(verbose.data.person.displayName).toBe('Corner Bakery');
      expect(verbose.data.emailHeaders.listUnsubscribe).toBe('<mailto:unsubscribe@news.bakery.example?subject=8841>, <https://news.bakery.example/u/8841>');
      expect((await messageRow(res.body.messageId)).html).toContain('<b>Sourdough loaf</b>');
    });

    it('turns an HTML-only message into a text body', async () => {
      const { line, waitFor } = await setup();
      const res = await postEmail(fixture('html-only.eml', line.address));
      expect(res.status).toBe(201);
      const [concise] = await waitFor('concise', 'message.received');
      expect(concise.data.message.body).toBe('Good news: your package has shipped.\n\nTracking number: PX-77120');
    });

    it('stores a PDF attachment of a multipart/mixed message', async () => {
      const { line, waitFor } = await setup();
      const res = await postEmail(fixture('attachment.eml', line.address));
      expect(res.status).toBe(201);
      expect(res.body.attachmentIds).toHaveLength(1);
      const pdf = readFileSync(join(FIXTURES, 'invoice-42.pdf'));
      const [verbose] = await waitFor('verbose', 'message.received');
      expect(verbose.data.attachments).toEqual([
        expect.objectContaining({ id: res.body.attachmentIds[0], filename: 'invoice-42.pdf', mimeType: 'application/pdf', sizeBytes: pdf.length }),
      ]);
      expect(verbose.data.message.body).toBe('Hi, please find invoice 42 attached.\n\nGrace\n');
      const [row] = await db.query(`SELECT content FROM attachments WHERE id = $1`, [res.body.attachmentIds[0]]);
      expect(Buffer.compare(row.content, pdf)).toBe(0);
    });

    it('delivers to the first To/Cc/Delivered-To address that is one of our lines, whatever its case', async () => {
      const { line } = await setup();
      const viaCc = await postEmail(
        `From: Bob <bob@else.example>\r\nTo: team@else.example\r\nCc: ${line.address.toUpperCase()}\r\n` +
          `Message-ID: <cc-${randomBytes(4).toString('hex')}@else.example>\r\nSubject: cc\r\n\r\nhi\r\n`,
      );
      expect(viaCc.status).toBe(201);
      expect((await messageRow(viaCc.body.messageId)).to_value).toBe(line.address);
      const viaDeliveredTo = await postEmail(
        `Delivered-To: ${line.address}\r\nFrom: list@lists.example\r\nTo: everyone@lists.example\r\n` +
          `Message-ID: <dt-${randomBytes(4).toString('hex')}@lists.example>\r\nSubject: list\r\n\r\nhi\r\n`,
      );
      expect(viaDeliveredTo.status).toBe(201);
      expect((await messageRow(viaDeliveredTo.body.messageId)).line_id).toBe(line.id);
    });

    it('answers 404 when no recipient is one of our lines', async () => {
      const res = await postEmail('From: a@else.example\r\nTo: nobody@unknown.example\r\nSubject: x\r\n\r\nhi\r\n');
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ field: 'to', message: expect.stringContaining('nobody@unknown.example') });
    });

    it('answers 400 naming the problem for a message that cannot be taken', async () => {
      const noRecipient = await postEmail('From: a@else.example\r\nSubject: x\r\n\r\nhi\r\n');
      expect(noRecipient.status).toBe(400);
      expect(noRecipient.body.message).toMatch(/no recipient/);
      const noFrom = await postEmail('this is not an email at all');
      expect(noFrom.status).toBe(400);
      expect(noFrom.body.message).toMatch(/no From address/);
      const empty = await postEmail(Buffer.alloc(0));
      expect(empty.status).toBe(400);
      expect(empty.body.message).toMatch(/empty/);
      const json = await postEmail(JSON.stringify({ to: 'x' }), INGEST_TOKEN, 'application/json');
      expect(json.status).toBe(415);
      expect(json.body.message).toMatch(/message\/rfc822/);
    });

    it('answers 413 (JSON) above 25 MB', async () => {
      const res = await postEmail(Buffer.alloc(25 * 1024 * 1024 + 1, 0x61));
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ statusCode: 413, message: expect.stringContaining('larger than') });
    });

    it('requires the ingest token', async () => {
      const { session, line } = await setup();
      const raw = fixture('plain.eml', line.address);
      expect((await postEmail(raw, null)).status).toBe(401);
      expect((await postEmail(raw, session.apiKey)).status).toBe(401);
      const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM messages WHERE line_id = $1`, [line.id]);
      expect(count).toBe(0);
    });
  });

  describe('send_email', () => {
    it('replies on a thread over SMTP with threading headers and a tracking pixel; message.sent + status_changed', async () => {
      const { session, line, waitFor } = await setup();
      const inbound = await postEmail(fixture('plain.eml', line.address));
      const before = smtp.received.length;
      const result = await tool(session, 'send_email', {
        threadId: inbound.body.threadId,
        body: 'Hi Ada,\nit ships on <Monday> & arrives Tuesday.',
        readReceipt: true,
      });
      expect(result.isError).toBeFalsy();
      const message = result.structuredContent.message;
      expect(message).toMatchObject({
        threadId: inbound.body.threadId,
        channel: 'EMAIL',
        direction: 'OUTBOUND',
        status: 'QUEUED',
        fromIdentity: { value: line.address, kind: 'EMAIL' },
        toIdentity: { value: 'ada@analytical.example', kind: 'EMAIL' },
        sentAt: null,
      });

      const sent = await smtpMessageTo('ada@analytical.example', before);
      expect(sent.from).toBe(line.address);
      const mail: ParsedMail = await simpleParser(sent.raw);
      const row = await waitStatus(message.id, 'SENT');
      expect(mail.subject).toBe('Re: Question about my order');
      expect(mail.messageId).toBe(row.header_message_id);
      expect(row.header_message_id).toMatch(new RegExp(`^<[0-9a-f-]{36}@${line.address.split('@')[1].replace('.', '\\.')}>$`));
      expect(mail.inReplyTo).toBe('<plain-0001@analytical.example>');
      expect(mail.references).toBe('<plain-0001@analytical.example>');
      expect(mail.text?.trim()).toBe('Hi Ada,\nit ships on <Monday> & arrives Tuesday.');
      expect(row.tracking_token).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(mail.html).toContain(`<img src="http://127.0.0.1:3000/t/o/${row.tracking_token}" width="1" height="1"`);
      expect(mail.html).toContain('it ships on &lt;Monday&gt; &amp; arrives Tuesday.');

      const [sentEvent] = await waitFor('verbose', 'message.sent');
      expect(sentEvent.data.message).toMatchObject({ id: message.id, status: 'SENT', direction: 'OUTBOUND', sentAt: expect.any(String) });
      expect(sentEvent.data.emailHeaders).toMatchObject({
        messageId: row.header_message_id,
        inReplyTo: '<plain-0001@analytical.example>',
        references: ['<plain-0001@analytical.example>'],
      });
      const [changed] = await waitFor('concise', 'message.status_changed');
      expect(changed.data).toMatchObject({ previousStatus: 'QUEUED', currentStatus: 'SENT', message: { id: message.id, status: 'SENT' } });
      expect(changed.data.thread.messageCount).toBe(2);
    });

    it('starts a new thread with to (thread.created), from the chosen account, plain text without a pixel', async () => {
      const { session, waitFor } = await setup(['EMAIL_ACCOUNT', 'EMAIL_ACCOUNT']);
      const [, second] = session.lines;
      const to = `carol.${randomBytes(3).toString('hex')}@partner.example`;
      const ambiguous = await tool(session, 'send_email', { to, subject: 'Hello', body: 'x' });
      expect(ambiguous.isError).toBe(true);
      expect(ambiguous.content[0].text).toMatch(/fromAccountId is required/);

      const result = await tool(session, 'send_email', {
        to: to.toUpperCase(),
        fromAccountId: second.id,
        subject: 'Meeting next week',
        body: 'Are you free on Tuesday?',
      });
      expect(result.isError).toBeFalsy();
      const message = result.structuredContent.message;
      expect(message).toMatchObject({ status: 'QUEUED', fromIdentity: { value: second.address }, toIdentity: { value: to } });

      const sent = await smtpMessageTo(to);
      expect(sent.from).toBe(second.address);
      const mail = await simpleParser(sent.raw);
      expect(mail.subject).toBe('Meeting next week');
      expect(mail.html).toBeFalsy();
      expect(mail.inReplyTo).toBeUndefined();
      expect(sent.raw.toString()).not.toContain('/t/o/');
      expect((await messageRow(message.id)).tracking_token).toBeNull();

      const [created] = await waitFor('verbose', 'thread.created');
      expect(created.data).toMatchObject({
        thread: { id: message.threadId, subject: 'Meeting next week', messageCount: 1 },
        person: { id: null, displayName: to },
        message: { id: message.id, direction: 'OUTBOUND' },
      });
      await waitFor('verbose', 'message.sent');
    });

    it('refuses bad argument combinations and threads outside the key', async () => {
      const { session, line } = await setup(['EMAIL_ACCOUNT', 'PHONE_NUMBER']);
      const other = await setup();
      const inbound = await postEmail(fixture('plain.eml', other.line.address));
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ body: 'x' }, /exactly one of threadId/],
        [{ threadId: inbound.body.threadId, to: 'a@b.example', subject: 's', body: 'x' }, /exactly one of threadId/],
        [{ threadId: inbound.body.threadId, body: 'x' }, /not found/],
        [{ to: 'a@b.example', body: 'x' }, /subject is required/],
        [{ to: 'a@b.example', subject: 's', body: 'x', fromAccountId: session.lines[1].id }, /not found/],
        [{ to: 'not an address', subject: 's', body: 'x' }, /email/],
      ];
      for (const [args, message] of cases) {
        const result = await tool(session, 'send_email', args);
        expect(result.isError).toBe(true);
        expect(result.content[0].text).toMatch(message);
      }
      const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM messages WHERE line_id = $1`, [line.id]);
      expect(count).toBe(0);
    });

    it('gives an email queued without a Message-ID (e.g. an agent reply) one before sending, and keeps it', async () => {
      const { session, line } = await setup();
      const inbound = await postEmail(fixture('plain.eml', line.address));
      const outbound = t.app.get(OutboundService);
      const id = await db.transaction((tx) =>
        outbound.insertQueued(tx, {
          orgId: session.orgId,
          threadId: inbound.body.threadId,
          lineId: line.id,
          channel: 'EMAIL',
          body: 'queued elsewhere',
          subject: 'Re: Question about my order',
          from: { value: line.address, kind: 'EMAIL' },
          to: { value: 'ada@analytical.example', kind: 'EMAIL' },
          origin: { userId: null, keyId: null },
        }),
      );
      const before = smtp.received.length;
      await outbound.enqueue(id);
      const row = await waitStatus(id, 'SENT');
      expect(row.header_message_id).toMatch(/^<[0-9a-f-]{36}@/);
      const mail = await simpleParser((await smtpMessageTo('ada@analytical.example', before)).raw);
      expect(mail.messageId).toBe(row.header_message_id);
    });

    it('marks a message the mail server refuses (5xx) FAILED at once: status_changed, no message.sent', async () => {
      const { session, waitFor, settled } = await setup();
      const connections = smtp.connections;
      const result = await tool(session, 'send_email', { to: 'bounce@partner.example', subject: 'hi', body: 'x' });
      const row = await waitStatus(result.structuredContent.message.id, 'FAILED');
      expect(row.error).toMatch(/refused.*550/);
      expect(smtp.connections - connections).toBe(1);
      const [changed] = await waitFor('verbose', 'message.status_changed');
      expect(changed.data).toMatchObject({ previousStatus: 'QUEUED', currentStatus: 'FAILED', message: { status: 'FAILED', sentAt: null } });
      expect(await settled('verbose', 'message.sent')).toHaveLength(0);
    });

    it('retries while the mail server is down, then marks the message FAILED', async () => {
      const { session, waitFor, settled } = await setup();
      smtp.down = true;
      const connections = smtp.connections;
      try {
        const result = await tool(session, 'send_email', { to: 'dave@partner.example', subject: 'hi', body: 'x' });
        const id = result.structuredContent.message.id;
        // Skip Bull's back-off between attempts: promote the delayed retry as soon as it is scheduled.
        const row = await waitUntil(
          async () => {
            const job = await queue.getJob(`handoff:${id}`);
            if (job && (await job.isDelayed())) await job.promote();
            const current = await messageRow(id);
            return current.status === 'FAILED' && current;
          },
          'the hand-off to fail',
          { timeoutMs: 25_000 },
        );
        expect(smtp.connections - connections).toBe(5);
        expect(row.error).toMatch(/after every attempt.*421/);
        const [changed] = await waitFor('concise', 'message.status_changed');
        expect(changed.data).toMatchObject({ previousStatus: 'QUEUED', currentStatus: 'FAILED' });
        expect(await settled('concise', 'message.sent')).toHaveLength(0);
      } finally {
        smtp.down = false;
      }
    });
  });

  describe('reply_to_thread and idempotencyKey on email', () => {
    it('reply_to_thread answers an email thread from its own account: Re: subject, In-Reply-To and References', async () => {
      const { session, line } = await setup();
      const inbound = await postEmail(fixture('plain.eml', line.address));
      const before = smtp.received.length;
      const result = await tool(session, 'reply_to_thread', { threadId: inbound.body.threadId, body: 'Thanks, on its way.' });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ message: expect.objectContaining({ channel: 'EMAIL', direction: 'OUTBOUND', status: 'QUEUED' }) });
      expect(result.structuredContent.message).toMatchObject({
        threadId: inbound.body.threadId,
        fromIdentity: { value: line.address, kind: 'EMAIL' },
        toIdentity: { value: 'ada@analytical.example', kind: 'EMAIL' },
      });
      const sent = await smtpMessageTo('ada@analytical.example', before);
      const mail: ParsedMail = await simpleParser(sent.raw);
      expect(sent.from).toBe(line.address);
      expect(mail.subject).toBe('Re: Question about my order');
      expect(mail.inReplyTo).toBe('<plain-0001@analytical.example>');
      expect(mail.references).toBe('<plain-0001@analytical.example>');
      expect(mail.text?.trim()).toBe('Thanks, on its way.');

      const blank = await tool(session, 'reply_to_thread', { threadId: inbound.body.threadId, body: '  \n ' });
      expect(blank).toMatchObject({ isError: true, content: [{ text: 'body must not be blank' }] });
    });

    it('send_email with an idempotencyKey sends one email for any number of calls; other arguments under the key are refused', async () => {
      const { session, line } = await setup();
      const to = `once.${randomBytes(3).toString('hex')}@partner.example`;
      const args = { to, subject: 'Your order', body: 'It ships today.', idempotencyKey: `evt_${randomBytes(6).toString('hex')}` };
      const results = await Promise.all([1, 2, 3, 4].map(() => tool(session, 'send_email', args)));
      expect(results.every((r) => !r.isError)).toBe(true);
      const ids = new Set(results.map((r) => r.structuredContent.message.id));
      expect(ids.size).toBe(1);
      expect(results.map((r) => r.structuredContent.replayed).sort()).toEqual([false, true, true, true]);
      await smtpMessageTo(to);
      const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM messages WHERE line_id = $1 AND direction = 'OUTBOUND'`, [line.id]);
      expect(count).toBe(1);
      // The mail server has it; the hand-off records SENT just after its SMTP transaction ends.
      await waitUntil(async () => (await db.query(`SELECT status FROM messages WHERE id = $1`, [[...ids][0]]))[0].status === 'SENT', 'the email recorded SENT');
      // The default (readReceipt false) and the same value given explicitly are the same call.
      const again = await tool(session, 'send_email', { ...args, readReceipt: false });
      expect(again.structuredContent).toMatchObject({ message: { id: [...ids][0], status: 'SENT' }, replayed: true });

      const changed = await tool(session, 'send_email', { ...args, body: 'It ships tomorrow.' });
      expect(changed).toMatchObject({ isError: true });
      expect(changed.content[0].text).toBe(
        `idempotencyKey "${args.idempotencyKey}" was used in the last 24 hours with other arguments; a key stands for one message: use a new key for a new message`,
      );
      await sleep(300);
      expect(smtp.received.filter((m) => m.to.includes(to))).toHaveLength(1);
    });
  });

  describe('open tracking: GET /t/o/:token', () => {
    /** Sends a tracked reply and waits until the mail server took it. */
    async function trackedEmail() {
      const hooks = await setup();
      const inbound = await postEmail(fixture('plain.eml', hooks.line.address));
      const result = await tool(hooks.session, 'send_email', { threadId: inbound.body.threadId, body: 'tracked', readReceipt: true });
      const row = await waitStatus(result.structuredContent.message.id, 'SENT');
      return { ...hooks, id: row.id as string, token: row.tracking_token as string, sentAt: row.sent_at as Date };
    }

    /** Moves the email's sending time back past the scanner window, for tests that are not about it. */
    async function pastScannerWindow(id: string): Promise<void> {
      await db.query(`UPDATE messages SET sent_at = sent_at - make_interval(secs => $2) WHERE id = $1`, [id, SCANNER_WINDOW_SECONDS + 1]);
    }

    const fetchPixel = (token: string, userAgent = GMAIL_PROXY_UA) => t.http().get(`/t/o/${token}`).set('User-Agent', userAgent);

    function expectGif(res: { status: number; headers: Record<string, string>; body: unknown }) {
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('image/gif');
      expect(res.headers['cache-control']).toContain('no-store');
      expect(Buffer.compare(res.body as Buffer, TRACKING_GIF)).toBe(0);
    }

    /** The email_opens rows of a message, oldest first: counted opens, and counters of fetches that were not opens. */
    async function opens(id: string): Promise<Array<{ counted: boolean; reason: string | null; fetches: number }>> {
      return db.query(`SELECT counted, reason, fetch_count AS fetches FROM email_opens WHERE message_id = $1 ORDER BY opened_at, id`, [id]);
    }

    it('counts distinct opens after the scanner window, not scanner fetches, refetches or security gateways', async () => {
      const { id, token, sentAt, events, waitFor, settled } = await trackedEmail();
      // Within the scanner window of sending: a prefetch, not an open.
      expectGif(await fetchPixel(token));
      expect(Date.now() - sentAt.getTime()).toBeLessThan(SCANNER_WINDOW_SECONDS * 1000);
      await sleep(SCANNER_WINDOW_SECONDS * 1000 - (Date.now() - sentAt.getTime()) + 100);

      expectGif(await fetchPixel(token));
      const [opened] = await waitFor('verbose', 'email.opened');
      expect(opened.data.message).toMatchObject({ id, direction: 'OUTBOUND', status: 'SENT' });
      expect(opened.data.open).toEqual({ firstOpenedAt: expect.any(String), lastOpenedAt: opened.data.open.firstOpenedAt, openCount: 1 });
      expect(opened.data.emailHeaders.messageId).toMatch(/^<.+>$/);
      const [concise] = await waitFor('concise', 'email.opened');
      expect(concise.data).toMatchObject({ open: opened.data.open, message: { id }, person: { id: null, displayName: 'Ada Lovelace' } });

      expectGif(await fetchPixel(token)); // the same view, within the dedup window
      expectGif(await fetchPixel(token, MIMECAST_UA)); // a security gateway
      await sleep(DEDUP_SECONDS * 1000 + 100);
      expectGif(await fetchPixel(token, MIMECAST_UA)); // still a gateway after the window
      expectGif(await fetchPixel(token)); // a second distinct open

      const both = await waitFor('verbose', 'email.opened', 2);
      const second = both.find((e) => e.data.open.openCount === 2)!;
      expect(second.data.open.firstOpenedAt).toBe(opened.data.open.firstOpenedAt);
      expect(Date.parse(second.data.open.lastOpenedAt) - Date.parse(opened.data.open.lastOpenedAt)).toBeGreaterThanOrEqual(DEDUP_SECONDS * 1000);
      expect(await settled('verbose', 'email.opened')).toHaveLength(2);
      expect(events('concise', 'email.opened')).toHaveLength(2);
      // Six fetches, four rows: the scanner fetch, the first open with its refetch, both gateway fetches, the second open.
      expect(await opens(id)).toEqual([
        { counted: false, reason: 'scanner-window', fetches: 1 },
        { counted: true, reason: null, fetches: 2 },
        { counted: false, reason: 'ignored-user-agent', fetches: 2 },
        { counted: true, reason: null, fetches: 1 },
      ]);
      const row = await messageRow(id);
      expect(row.open_count).toBe(2);
      expect(row.first_opened_at.toISOString()).toBe(opened.data.open.firstOpenedAt);
    });

    it('counts one open for concurrent fetches, and none for HEAD', async () => {
      const { id, token, waitFor, settled } = await trackedEmail();
      await pastScannerWindow(id);
      expect((await t.http().head(`/t/o/${token}`)).status).toBe(200);
      const answers = await Promise.all(Array.from({ length: 5 }, () => fetchPixel(token)));
      answers.forEach(expectGif);
      await waitFor('verbose', 'email.opened');
      expect(await settled('verbose', 'email.opened')).toHaveLength(1);
      expect(await opens(id)).toEqual([{ counted: true, reason: null, fetches: 5 }]);
      expect((await messageRow(id)).open_count).toBe(1);
    });

    it('2,000 fetches store a row per counted open, not per fetch; the counts and the events stay right', async () => {
      const { id, token, settled } = await trackedEmail();
      await pastScannerWindow(id);
      const started = Date.now();
      for (let sent = 0; sent < 2_000; sent += 50) {
        const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => fetchPixel(token, i % 10 === 0 ? MIMECAST_UA : GMAIL_PROXY_UA)));
        answers.forEach(expectGif);
      }
      const seconds = (Date.now() - started) / 1000;
      const row = await messageRow(id);
      // At most one counted open per dedup window while the fetches went on.
      expect(row.open_count).toBeGreaterThanOrEqual(1);
      expect(row.open_count).toBeLessThanOrEqual(Math.ceil(seconds / DEDUP_SECONDS) + 1);
      const rows = await opens(id);
      expect(rows.filter((r) => r.counted)).toHaveLength(row.open_count);
      expect(rows.filter((r) => !r.counted)).toEqual([{ counted: false, reason: 'ignored-user-agent', fetches: 200 }]);
      expect(rows.reduce((sum, r) => sum + r.fetches, 0)).toBe(2_000);
      // One email.opened per counted open, its openCount the running count.
      const opened = (await settled('verbose', 'email.opened')).map((e) => e.data.open.openCount).sort((a: number, b: number) => a - b);
      expect(opened).toEqual(Array.from({ length: row.open_count }, (_, i) => i + 1));
    }, 90_000);

    it('never fires for an email sent without read receipt', async () => {
      const { session, line, settled } = await setup();
      const inbound = await postEmail(fixture('plain.eml', line.address));
      const result = await tool(session, 'send_email', { threadId: inbound.body.threadId, body: 'untracked' });
      const row = await waitStatus(result.structuredContent.message.id, 'SENT');
      expect(row.tracking_token).toBeNull();
      // Even a token planted on it does not count: only read-receipt emails can fire email.opened.
      const planted = randomBytes(24).toString('base64url');
      await db.query(`UPDATE messages SET tracking_token = $2, sent_at = now() - interval '1 hour' WHERE id = $1`, [row.id, planted]);
      expectGif(await fetchPixel(planted));
      expect(await settled('verbose', 'email.opened')).toHaveLength(0);
      expect(await opens(row.id)).toEqual([]);
    });

    it('answers the GIF for unknown and malformed tokens, without authentication', async () => {
      expectGif(await fetchPixel(randomBytes(24).toString('base64url')));
      expectGif(await t.http().get('/t/o/not-a-token!'));
      expectGif(await t.http().get(`/t/o/${'x'.repeat(500)}`));
    });
  });
});

describe('email hand-off without SMTP_URL', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { SMTP_URL: undefined } });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('marks the email FAILED with a clear error', async () => {
    const session = await createSession(t.admin, { lines: ['EMAIL_ACCOUNT'] });
    const res = await t
      .http()
      .post('/api/mcp')
      .set('Authorization', `Bearer ${session.apiKey}`)
      .set('Accept', 'application/json, text/event-stream')
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'send_email', arguments: { to: 'erin@partner.example', subject: 's', body: 'x' } },
      });
    const id = res.body.result.structuredContent.message.id;
    const db = t.app.get(DataSource);
    const row = await waitUntil(async () => {
      const [current] = await db.query(`SELECT status, error FROM messages WHERE id = $1`, [id]);
      return current.status !== 'QUEUED' && current;
    }, 'the hand-off');
    expect(row).toEqual({ status: 'FAILED', error: 'no mail server is configured: SMTP_URL is not set' });
  });
});
