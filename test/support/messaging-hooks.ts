import { randomBytes } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { getQueueToken } from '@nestjs/bull';
import { Queue } from 'bull';
import { DataSource } from 'typeorm';
import { EXTRACTION_QUEUE } from '../../src/attachments/attachment-extraction.service';
import { verifyWebhook, WebhookEnvelope } from '../../src/sdk';
import { mixedEmail } from '../fixtures/emails/make-invite-email';
import { createTestApp, TestApp, TestEnv } from './app';
import { toolOk } from './mcp';
import { TestReceiver } from './receiver';
import { INGEST_TOKEN, privateQueuePrefix } from './test-env';
import { waitUntil } from './wait';

export type Envelope<T = any> = WebhookEnvelope<T>;

/** The service listening on 127.0.0.1, a webhook receiver it may deliver to, and a local SMS carrier. */
export interface MessagingTestApp extends TestApp {
  db: DataSource;
  receiver: TestReceiver;
  receiverUrl: string;
  /** The app's own base URL (for the MCP SDK client). */
  baseUrl: string;
  /** Every SMS the carrier was handed. */
  carried: Array<{ from: string; to: string; body: string }>;
}

/** An SMS carrier's HTTP API on 127.0.0.1 (SMS_CARRIER_URL): keeps every SMS handed to it, answers {providerMessageId}. */
export interface CarrierStandIn {
  url: string;
  carried: Array<{ from: string; to: string; body: string }>;
  close: () => Promise<void>;
}

export async function startCarrier(): Promise<CarrierStandIn> {
  const carried: CarrierStandIn['carried'] = [];
  const carrier: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      carried.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ providerMessageId: `carrier-${randomBytes(6).toString('hex')}` }));
    });
  });
  await new Promise<void>((resolve) => carrier.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(carrier.address() as AddressInfo).port}/sms`,
    carried,
    close: async () => {
      carrier.closeAllConnections();
      await new Promise<void>((resolve) => carrier.close(() => resolve()));
    },
  };
}

/** `env` is laid over the messaging defaults (development, loopback receivers, the local carrier) for this app only. */
export async function createMessagingTestApp(env: TestEnv = {}): Promise<MessagingTestApp> {
  const carrier = await startCarrier();
  const { carried } = carrier;
  const receiver = new TestReceiver();
  const receiverUrl = await receiver.start();
  const t = await createTestApp({
    env: {
      APP_ENV: 'development',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
      SMS_CARRIER_URL: carrier.url,
      // Its queues are its own: `extractionIdle` then waits for this app's jobs only.
      QUEUE_PREFIX: privateQueuePrefix('messaging'),
      ...env,
    },
  });
  await t.app.listen(0, '127.0.0.1');
  const baseUrl = (await t.app.getUrl()).replace('[::1]', '127.0.0.1');
  return {
    ...t,
    db: t.app.get(DataSource),
    receiver,
    receiverUrl,
    baseUrl,
    carried,
    close: async () => {
      await t.close();
      await receiver.stop();
      await carrier.close();
    },
  };
}

/** A webhook endpoint registered through the tool, with a path of its own on the receiver. */
export class Hook {
  private constructor(
    private readonly m: MessagingTestApp,
    readonly id: string,
    readonly secret: string,
    private readonly path: string,
  ) {}

  static async register(m: MessagingTestApp, apiKey: string, args: Record<string, unknown>): Promise<Hook> {
    const path = `/hook/${randomBytes(4).toString('hex')}`;
    const { endpoint, secret } = await toolOk(m, apiKey, 'register_webhook', { url: `${m.receiverUrl}${path}`, ...args });
    return new Hook(m, endpoint.id, secret, path);
  }

  /** Everything this endpoint received so far, signature-verified. */
  events<T = any>(type?: string): Array<Envelope<T>> {
    return this.m.receiver.requests
      .filter((r) => r.url === this.path)
      .map((r) => verifyWebhook<T>(r.body, r.headers['x-service-signature'] as string, [this.secret]))
      .filter((e) => type === undefined || e.type === type);
  }

  /** Waits until `count` events (of `type`, if given) have arrived, and returns them. */
  async waitFor<T = any>(count: number, type?: string, timeoutMs = 15_000): Promise<Array<Envelope<T>>> {
    await waitUntil(
      () => this.events(type).length >= count,
      () => `${count} ${type ?? 'events'} at ${this.path}, got ${this.events(type).length}`,
      { timeoutMs },
    );
    return this.events<T>(type);
  }
}

/**
 * Waits until no attachment extraction job is waiting, running or delayed. A job publishes its
 * attachment.extracted in the transaction that closes its claim, so every event the jobs so far
 * will publish is in the outbox by then (see `extractedEventsPublished`).
 */
export async function extractionIdle(t: TestApp): Promise<void> {
  const queue = t.app.get<Queue>(getQueueToken(EXTRACTION_QUEUE));
  await waitUntil(async () => {
    const counts = await queue.getJobCounts();
    return counts.waiting + counts.active + counts.delayed === 0;
  }, 'the attachment extraction queue to be idle');
}

/** How many attachment.extracted events were published (outbox rows) for each of these attachments. */
export async function extractedEventsPublished(t: TestApp, attachmentIds: string[]): Promise<Record<string, number>> {
  const rows: Array<{ id: string; n: number }> = await t.app
    .get(DataSource)
    .query(
      `SELECT data->'attachment'->>'id' AS id, count(*)::int AS n FROM outbox_events WHERE type = 'attachment.extracted' AND data->'attachment'->>'id' = ANY($1::text[]) GROUP BY 1`,
      [attachmentIds],
    );
  return Object.fromEntries(attachmentIds.map((id) => [id, rows.find((r) => r.id === id)?.n ?? 0]));
}

/** POST /ingest/email/inbound of a raw email, as the mail server hands it over; answers what ingest answered. */
export async function inboundRawEmail(t: TestApp, raw: string | Buffer): Promise<{ messageId: string; threadId: string; attachmentIds: string[] }> {
  const res = await t
    .http()
    .post('/ingest/email/inbound')
    .set('Authorization', `Bearer ${INGEST_TOKEN}`)
    .set('Content-Type', 'message/rfc822')
    .send(typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw);
  if (res.status !== 201) throw new Error(`inbound email failed: ${res.status} ${res.text}`);
  return res.body;
}

/** POST /ingest/email/inbound of an email to `to` carrying `files` (subject `tag`); answers its attachment ids, in order. */
export async function inboundEmailWithFiles(
  t: TestApp,
  to: string,
  files: Array<{ filename: string; mimeType: string; content: Buffer }>,
  tag: string,
): Promise<string[]> {
  const email = mixedEmail(to, files, { messageId: `<${tag}-${Date.now()}@partner.example>`, subject: tag, text: `files: ${tag}` });
  return (await inboundRawEmail(t, email)).attachmentIds;
}

let sequence = 0;

/** POST /ingest/sms/inbound as the carrier would; returns {messageId, threadId, ...}. */
export async function inboundSms(
  t: TestApp,
  to: string,
  from: string,
  body = 'hello',
): Promise<{ messageId: string; threadId: string; threadCreated: boolean }> {
  sequence += 1;
  const res = await t
    .http()
    .post('/ingest/sms/inbound')
    .set('Authorization', `Bearer ${INGEST_TOKEN}`)
    .send({ to, from, body, providerMessageId: `in-${Date.now()}-${sequence}-${randomBytes(3).toString('hex')}` });
  if (res.status !== 201) throw new Error(`inbound SMS failed: ${res.status} ${res.text}`);
  return res.body;
}

const phoneBase = randomBytes(4).readUInt32BE(0) % 9_000_000;
let phones = 0;

/** A partner's E.164 number, unique within the run (the session helper's numbers start +1555). */
export function partnerPhone(): string {
  phones += 1;
  return `+1666${String((phoneBase + phones) % 10_000_000).padStart(7, '0')}`;
}
