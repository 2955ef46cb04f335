/**
 * `npm run demo`: the service end to end in about a minute, for a newcomer.
 *
 *  1. makes sure PostgreSQL and Redis answer (scripts/ensure-services.sh) and creates a fresh
 *     database `messaging_demo` (dropped again at the end; DEMO_KEEP=1 keeps it);
 *  2. seeds it with the development seed (a demo org, an OWNER, inbox@demo.example and
 *     +15551230001, and an API key);
 *  3. starts the service (APP_ENV=development, WEBHOOK_ALLOWED_CIDRS=127.0.0.0/8,
 *     DELIVERY_RETRY_SCHEDULE=3s,3s,3s) and a webhook receiver on 127.0.0.1 that verifies every
 *     signature with the project's own helper (src/sdk, verifyWebhook);
 *  4. registers a webhook through the MCP endpoint with the official MCP SDK client;
 *  5. feeds inbound SMS and emails (one with a PDF) through the ingest API and prints each event
 *     as it arrives, then makes the receiver answer 500 once and shows the retry;
 *  6. shuts everything down.
 *
 * Environment: DEMO_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/messaging_demo),
 * REDIS_URL (default redis://127.0.0.1:6379), DEMO_PORT (default: a free port), DEMO_KEEP=1.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, createServer as createNetServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Redis from 'ioredis';
import { Client as PgClient } from 'pg';
import { SIGNATURE_HEADER, verifyWebhook, WebhookEnvelope, WebhookVerificationError } from '../src/sdk';

const ROOT = resolve(__dirname, '..');
const DATABASE_URL = process.env.DEMO_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/messaging_demo';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUEUE_PREFIX = '{mss_demo}';
const KEEP = process.env.DEMO_KEEP === '1';
const LOG_DIR = join(ROOT, '.dev');
const SERVICE_LOG = join(LOG_DIR, 'demo-service.log');

const color = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code: string) => (text: string) => (color ? `\u001b[${code}m${text}\u001b[0m` : text);
const bold = paint('1');
const dim = paint('2');
const green = paint('32');
const red = paint('31');
const cyan = paint('36');
const yellow = paint('33');

const started = Date.now();
const clock = () => dim(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s]`);
const say = (text = '') => process.stdout.write(`${text}\n`);
const step = (n: number, text: string) => say(`\n${bold(`${n}. ${text}`)}`);

// ---------------------------------------------------------------------------------------------
// The receiver: verifies every delivery with src/sdk and prints it

interface Received {
  event: WebhookEnvelope<any>;
  status: number;
  at: number;
}

class DemoReceiver {
  secret = '';
  readonly received: Received[] = [];
  private readonly seen = new Map<string, number>();
  private failNext = 0;
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', done));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/webhooks`;
  }

  /** The next `count` deliveries are answered 500 (after verification). */
  failNextDeliveries(count: number): void {
    this.failNext = count;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let event: WebhookEnvelope<any>;
      try {
        // The raw bytes, the header, the secret(s): what every receiver should do first.
        event = verifyWebhook(Buffer.concat(chunks), req.headers[SIGNATURE_HEADER.toLowerCase()] as string | undefined, [this.secret]);
      } catch (error) {
        const code = error instanceof WebhookVerificationError ? error.code : 'error';
        say(`${clock()} ${red('✗ rejected')}  signature check failed: ${code}`);
        res.writeHead(400).end();
        return;
      }
      const attempt = (this.seen.get(event.id) ?? 0) + 1;
      this.seen.set(event.id, attempt);
      const status = this.failNext > 0 ? 500 : 200;
      if (this.failNext > 0) this.failNext -= 1;
      this.received.push({ event, status, at: Date.now() });
      const again = attempt > 1 ? yellow(` (attempt ${attempt}: a retry, same id)`) : '';
      const answer = status === 200 ? green('→ 200') : red('→ 500 (forced by the demo)');
      say(`${clock()} ${cyan(event.type.padEnd(22))} ${event.id}  ${green('verified ✓')}  ${answer}${again}`);
      const summary = describe(event);
      if (summary) say(`${' '.repeat(9)}${dim(summary)}`);
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'try again');
    });
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
  }
}

function describe(event: WebhookEnvelope<any>): string {
  const d = event.data ?? {};
  if (event.type === 'attachment.extracted' && d.attachment) {
    const a = d.attachment;
    return `${a.filename} (${a.mimeType}, ${a.sizeBytes} bytes): ${a.hasText ? `${a.textLength} characters of text extracted` : 'no text'}`;
  }
  const message = d.message;
  if (message) {
    const text = String(message.body ?? '').replace(/\s+/g, ' ');
    return (
      `${message.channel} from ${message.fromIdentity?.value}: "${text.length > 60 ? `${text.slice(0, 57)}...` : text}"` +
      (event.type === 'thread.created' ? ` (new thread ${d.thread?.id?.slice(0, 8)}…)` : '')
    );
  }
  return '';
}

// ---------------------------------------------------------------------------------------------
// Processes and services

const children: ChildProcess[] = [];

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** `node -r ts-node/register/transpile-only <file>`: the TypeScript sources, no build needed. */
function tsNode(file: string, env: NodeJS.ProcessEnv, logTo?: string): ChildProcess {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', file], {
    cwd: ROOT,
    env: { ...process.env, ...env, TS_NODE_TRANSPILE_ONLY: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  if (logTo) {
    const log = createWriteStream(logTo, { flags: 'w' });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
  }
  return child;
}

async function run(file: string, env: NodeJS.ProcessEnv): Promise<string> {
  const child = tsNode(file, env);
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  if (code !== 0) throw new Error(`${file} failed (exit ${code}):\n${output}`);
  return output;
}

async function waitUntil<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, what: string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await Promise.resolve(probe()).catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function freshDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`unexpected database name ${name}`);
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const pg = new PgClient({ connectionString: maintenance.toString() });
  await pg.connect();
  try {
    await pg.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await pg.query(`CREATE DATABASE ${name}`);
  } finally {
    await pg.end();
  }
}

async function dropDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const pg = new PgClient({ connectionString: maintenance.toString() });
  await pg.connect();
  await pg.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => pg.end());
}

async function deleteQueueKeys(): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${QUEUE_PREFIX}*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  say(bold('Messaging sync service: demo'));
  say(dim('An inbound SMS or email becomes a signed webhook; an agent manages webhooks through MCP.'));

  step(1, 'PostgreSQL and Redis');
  const pgUrl = new URL(DATABASE_URL);
  pgUrl.pathname = '/postgres';
  const ensure = spawnSync('bash', ['scripts/ensure-services.sh', '--docker-fallback', '--postgres-url', pgUrl.toString(), '--redis-url', REDIS_URL], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (ensure.status !== 0) throw new Error(`PostgreSQL and Redis are needed:\n${ensure.stderr}`);
  for (const line of ensure.stderr.trim().split('\n')) say(dim(`   ${line}`));
  await freshDatabase(DATABASE_URL);
  say(`   fresh database ${new URL(DATABASE_URL).pathname.slice(1)} (dropped again at the end${KEEP ? '; DEMO_KEEP=1: kept' : ''})`);

  const port = Number(process.env.DEMO_PORT ?? (await freePort()));
  const env: NodeJS.ProcessEnv = {
    APP_ENV: 'development',
    DATABASE_URL,
    REDIS_URL,
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    QUEUE_PREFIX,
    // Fresh secrets for a fresh database: the demo never touches .dev/secrets.json.
    ADMIN_TOKEN: `demo_admin_${randomBytes(12).toString('hex')}`,
    INGEST_TOKEN: `demo_ingest_${randomBytes(12).toString('hex')}`,
    SECRETS_KEY: randomBytes(32).toString('hex'),
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    DELIVERY_RETRY_SCHEDULE: '3s,3s,3s',
    DELIVERY_SWEEP_INTERVAL_MS: '2000',
    DELIVERY_SWEEP_GRACE_MS: '5000',
    LOG_LEVEL: 'warn',
    PROCESS_ROLE: 'all',
    // The demo feeds its own messages and narrates each of their events: the seed's sample conversations would add events of their own.
    SEED_CONVERSATIONS: 'false',
  };

  step(2, 'The development seed (src/seed/seed.ts, as npm run seed)');
  const seeded = await run('src/seed/seed.ts', env);
  const apiKey = /API key\s+(csk_\w+)/.exec(seeded)?.[1];
  if (!apiKey) throw new Error(`the seed printed no API key:\n${seeded}`);
  say(
    dim(
      seeded
        .trim()
        .split('\n')
        .map((l) => `   ${l}`)
        .join('\n')
        .replace(apiKey, `${apiKey.slice(0, 12)}…`),
    ),
  );

  step(3, 'The service and a webhook receiver');
  mkdirSync(LOG_DIR, { recursive: true });
  const service = tsNode('src/main.ts', env, SERVICE_LOG);
  const exited = new Promise<string>((done) =>
    service.once('exit', (code, signal) => done(signal === 'SIGTERM' || code === 0 ? 'closed cleanly' : `exit ${code ?? signal}`)),
  );
  const base = `http://127.0.0.1:${port}`;
  await waitUntil(
    async () => {
      if (service.exitCode !== null) throw new Error(`the service exited; see ${SERVICE_LOG}`);
      return (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200;
    },
    'the service to be ready',
    90_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; its log: ${SERVICE_LOG}`);
  });
  say(`   service   ${base}  (PROCESS_ROLE=all, APP_ENV=development, retries after 3 s; log: ${SERVICE_LOG.replace(`${ROOT}/`, '')})`);
  const receiver = new DemoReceiver();
  const receiverUrl = await receiver.start();
  say(`   receiver  ${receiverUrl}  (verifies each request with verifyWebhook from src/sdk)`);

  step(4, 'Register a webhook through MCP (official SDK client, the seeded key)');
  const mcp = new McpClient({ name: 'demo', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`), { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } }));
  const { tools } = await mcp.listTools();
  say(
    `   tools/list: ${tools.length} tools (${tools
      .slice(0, 5)
      .map((t) => t.name)
      .join(', ')}, …)`,
  );
  const call = async <T>(name: string, args: Record<string, unknown>): Promise<T> => {
    const result = await mcp.callTool({ name, arguments: args });
    if (result.isError) throw new Error(`${name}: ${(result.content as Array<{ text: string }>)[0]?.text}`);
    return result.structuredContent as T;
  };
  const { phoneNumbers } = await call<{ phoneNumbers: Array<{ id: string; phoneNumber: string }> }>('list_phone_numbers', {});
  const { emailAccounts } = await call<{ emailAccounts: Array<{ id: string; emailAddress: string }> }>('list_email_accounts', {});
  const phone = phoneNumbers[0].phoneNumber;
  const inbox = emailAccounts[0].emailAddress;
  const { endpoint, secret } = await call<{ endpoint: { id: string; url: string; events: string[] }; secret: string }>('register_webhook', {
    url: receiverUrl,
    events: ['thread.created', 'message.received', 'attachment.extracted'],
  });
  receiver.secret = secret;
  say(`   register_webhook → endpoint ${endpoint.id}`);
  say(`                      events ${endpoint.events.join(', ')}; secret ${secret.slice(0, 8)}… (shown once)`);

  step(5, `Inbound SMS and emails through the ingest API (to ${phone} and ${inbox})`);
  const ingest = async (path: string, contentType: string, body: string | Buffer, label: string) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.INGEST_TOKEN}`, 'content-type': contentType },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    });
    const answer = (await res.json()) as { messageId: string; threadId: string };
    say(`${clock()} ${dim(`POST ${path} (${label}) → ${res.status}, message ${answer.messageId.slice(0, 8)}…`)}`);
    return answer;
  };
  const sms = (from: string, text: string, id: string) =>
    ingest('/ingest/sms/inbound', 'application/json', JSON.stringify({ to: phone, from, body: text, providerMessageId: id }), `SMS from ${from}`);
  const pdfEmail = readFileSync(join(ROOT, 'test/fixtures/emails/attachment.eml'), 'utf8').replace(/^To: .*$/m, `To: ${inbox}`);
  const plainEmail = readFileSync(join(ROOT, 'test/fixtures/emails/plain.eml'), 'utf8').replace(/^To: .*$/m, `To: ${inbox}`);

  await sms('+15557654321', 'Hi! Is the 7pm table still free tonight?', 'demo-sms-1');
  await sms('+15557654321', 'Four people, one of them vegetarian.', 'demo-sms-2');
  await ingest('/ingest/email/inbound', 'message/rfc822', plainEmail, 'email');
  await ingest('/ingest/email/inbound', 'message/rfc822', pdfEmail, 'email with a PDF');
  // thread.created + message.received for the first SMS and each email, message.received for the
  // second SMS, attachment.extracted for the PDF.
  const expected = 2 + 1 + 2 + 2 + 1;
  await waitUntil(() => receiver.received.length >= expected, `${expected} events at the receiver`, 60_000);
  const extracted = receiver.received.find((r) => r.event.type === 'attachment.extracted');
  if (extracted) {
    const { attachment, text: extractedText } = await call<{ attachment: { filename: string }; text: string | null }>('read_attachment', {
      attachmentId: extracted.event.data.attachment.id,
    });
    const text = (extractedText ?? '').replace(/\s+/g, ' ').trim();
    say(`   read_attachment ${attachment.filename} (MCP): "${text.length > 70 ? `${text.slice(0, 67)}...` : text}"`);
  }

  step(6, 'A failed delivery and its retry');
  say(`   the receiver answers the next delivery with 500; the service retries it after 3 s (DELIVERY_RETRY_SCHEDULE=3s,3s,3s)`);
  receiver.failNextDeliveries(1);
  await sms('+15550001111', 'Can I move my booking to 8pm?', 'demo-sms-3');
  const failed = await waitUntil(() => receiver.received.find((r) => r.status === 500), 'the forced 500', 30_000);
  // thread.created and message.received of the new SMS, one of them after a retry.
  await waitUntil(
    () =>
      receiver.received.some((r) => r.event.id === failed.event.id && r.status === 200) &&
      receiver.received.filter((r) => r.status === 200).length >= expected + 2,
    'the retry',
    30_000,
  );
  const retried = await waitUntil(
    async () => {
      const { deliveries } = await call<{ deliveries: Array<{ eventId: string; status: string; attempts: number; lastStatusCode: number | null }> }>(
        'list_webhook_deliveries',
        { endpointId: endpoint.id },
      );
      return deliveries.find((d) => d.eventId === failed.event.id && d.status === 'succeeded');
    },
    'the delivery log to show the retry',
    10_000,
  );
  say(`   list_webhook_deliveries (MCP): ${retried.eventId} ${retried.status} after ${retried.attempts} attempts (last status ${retried.lastStatusCode})`);

  step(7, 'Shutting down');
  await mcp.close();
  service.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), 15_000)))]);
  clearTimeout(timer);
  if (code === 'timeout') service.kill('SIGKILL');
  say(`   service stopped (${code === 'timeout' ? 'did not stop within 15 s of SIGTERM: killed' : `SIGTERM: ${code}`})`);
  await receiver.stop();
  say('   receiver stopped');
  await deleteQueueKeys();
  if (!KEEP) await dropDatabase(DATABASE_URL);
  say(`   ${KEEP ? `database kept: ${DATABASE_URL}` : 'demo database dropped'}; Bull keys ${QUEUE_PREFIX}* deleted`);

  const verified = receiver.received.length;
  const types = [...new Set(receiver.received.map((r) => r.event.type))];
  say(`\n${green(bold('Done.'))} ${verified} deliveries received, every signature verified (${types.join(', ')}); one forced 500 retried after 3 s.`);
  say(dim(`Next: docs/mcp.md (the tools), docs/webhooks.md (events and verifying them), examples/receiver.ts (a receiver to copy).`));
}

main().catch((error: unknown) => {
  say(`\n${red('demo failed:')} ${error instanceof Error ? error.message : String(error)}`);
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  process.exit(1);
});
