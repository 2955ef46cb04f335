import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { ADMIN_TOKEN, INGEST_TOKEN } from '../../support/test-env';

/**
 * HTTP clients for the service under test, over keep-alive connections: the admin API, the MCP
 * endpoint (raw JSON-RPC) and the ingest API, plus a small load driver.
 */

/** Keep-alive connections, many per origin; a request never waits longer than `timeoutMs`. */
export const agent = new Agent({ connections: 64, keepAliveTimeout: 10_000, pipelining: 1 });

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  ms: number;
  /** Set when no HTTP answer came (connection refused, reset, timed out). */
  error?: string;
}

export async function send(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  const started = performance.now();
  try {
    const res = await request(url, {
      method,
      headers: options.headers,
      body: options.body,
      dispatcher: agent,
      headersTimeout: options.timeoutMs ?? 30_000,
      bodyTimeout: options.timeoutMs ?? 30_000,
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, text, ms: performance.now() - started };
  } catch (error) {
    const e = error as { code?: string; name?: string; message?: string };
    return { status: 0, headers: {}, text: '', ms: performance.now() - started, error: `${e.code ?? e.name}: ${e.message}` };
  }
}

export function json<T = any>(answer: HttpAnswer): T {
  try {
    return JSON.parse(answer.text) as T;
  } catch {
    throw new Error(`expected JSON, got ${answer.status} ${answer.error ?? ''} ${answer.text.slice(0, 300)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Admin API

export async function admin<T = any>(base: string, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: object): Promise<T> {
  const answer = await send(method, `${base}${path}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (answer.status >= 300 || answer.status === 0) throw new Error(`admin ${method} ${path} answered ${answer.status} ${answer.error ?? ''} ${answer.text}`);
  return answer.text ? json<T>(answer) : (undefined as T);
}

let counter = 0;
/** A unique E.164 number per call (prefix +1555 for our lines, +1666 for partners). */
export function phone(prefix = '+1555'): string {
  counter += 1;
  return `${prefix}${String(Date.now() % 1e4).padStart(4, '0')}${String(counter % 1e3).padStart(3, '0')}`;
}

export function email(local = 'user'): string {
  return `${local}.${randomBytes(5).toString('hex')}@example.com`;
}

export interface Line {
  id: string;
  type: 'EMAIL_ACCOUNT' | 'PHONE_NUMBER';
  address: string;
}

export interface Tenant {
  orgId: string;
  userId: string;
  lines: Line[];
  apiKey: string;
  apiKeyId: string;
}

/** An org (or a user in `orgId`), lines the user is a member of, and an API key, through the admin API. */
export async function createTenant(
  base: string,
  options: {
    orgId?: string;
    tier?: 'STARTER' | 'PRO' | 'POWER';
    role?: 'OWNER' | 'ADMIN' | 'MEMBER';
    lines?: Array<'EMAIL_ACCOUNT' | 'PHONE_NUMBER'>;
    channelAccess?: { mode: 'ALL' } | { mode: 'LINES'; lines: string[] };
    /** The key acts on the first of the user's lines only (LINES mode). */
    keyOnFirstLine?: boolean;
  } = {},
): Promise<Tenant> {
  const orgId = options.orgId ?? (await admin(base, 'POST', '/admin/orgs', { name: 'Reliability Org', tier: options.tier ?? 'POWER' })).id;
  const user = await admin(base, 'POST', `/admin/orgs/${orgId}/users`, { email: email(), displayName: 'Reliability User', role: options.role ?? 'OWNER' });
  const lines: Line[] = [];
  for (const type of options.lines ?? ['EMAIL_ACCOUNT', 'PHONE_NUMBER']) {
    const address = type === 'EMAIL_ACCOUNT' ? email('inbox') : phone();
    const line = await admin(base, 'POST', `/admin/orgs/${orgId}/lines`, { type, address });
    await admin(base, 'PUT', `/admin/lines/${line.id}/members/${user.id}`);
    lines.push({ id: line.id, type, address });
  }
  const channelAccess = options.keyOnFirstLine ? { mode: 'LINES', lines: [lines[0].address] } : (options.channelAccess ?? { mode: 'ALL' });
  const key = await admin(base, 'POST', `/admin/users/${user.id}/api-keys`, { name: 'reliability', channelAccess });
  return { orgId, userId: user.id, lines, apiKey: key.key, apiKeyId: key.id };
}

// ---------------------------------------------------------------------------------------------
// MCP (raw JSON-RPC over one POST)

let rpcId = 1;

export async function rpc(base: string, key: string, method: string, params?: unknown, timeoutMs?: number): Promise<HttpAnswer> {
  return send('POST', `${base}/api/mcp`, {
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: rpcId++, method, ...(params === undefined ? {} : { params }) }),
    timeoutMs,
  });
}

export interface ToolResult {
  content: Array<{ type: string; text: string }>;
  structuredContent?: Record<string, any>;
  isError?: boolean;
}

export async function callTool(
  base: string,
  key: string,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ answer: HttpAnswer; result?: ToolResult }> {
  const answer = await rpc(base, key, 'tools/call', { name, arguments: args });
  const body = answer.status === 200 ? json(answer) : undefined;
  return { answer, result: body?.result };
}

/** A tool call that must succeed; returns structuredContent. */
export async function toolOk<T = Record<string, any>>(base: string, key: string, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const { answer, result } = await callTool(base, key, name, args);
  if (!result || result.isError) throw new Error(`${name} failed: ${answer.status} ${answer.text.slice(0, 500)}`);
  return result.structuredContent as T;
}

// ---------------------------------------------------------------------------------------------
// Ingest API

export interface IngestOutcome {
  status: number;
  ms: number;
  messageId?: string;
  error?: string;
  /** The answer's body when it was not a 2xx. */
  text?: string;
}

export async function ingestSms(
  base: string,
  sms: { to: string; from: string; body: string; providerMessageId: string },
  timeoutMs = 30_000,
): Promise<IngestOutcome> {
  const answer = await send('POST', `${base}/ingest/sms/inbound`, {
    headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(sms),
    timeoutMs,
  });
  const ok = answer.status >= 200 && answer.status < 300;
  return {
    status: answer.status,
    ms: answer.ms,
    messageId: ok ? json(answer).messageId : undefined,
    error: answer.error,
    text: ok ? undefined : answer.text.slice(0, 500),
  };
}

export async function ingestEmail(base: string, raw: Buffer | string, timeoutMs = 30_000): Promise<IngestOutcome> {
  const answer = await send('POST', `${base}/ingest/email/inbound`, {
    headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'message/rfc822' },
    body: raw,
    timeoutMs,
  });
  const ok = answer.status >= 200 && answer.status < 300;
  return {
    status: answer.status,
    ms: answer.ms,
    messageId: ok ? json(answer).messageId : undefined,
    error: answer.error,
    text: ok ? undefined : answer.text.slice(0, 500),
  };
}

/** A small raw email with one PDF attachment, unique Message-ID. */
export function emailWithPdf(to: string, from: string, pdf: Buffer, subject = 'Invoice attached'): string {
  const boundary = `b_${randomBytes(6).toString('hex')}`;
  return [
    `From: Sender <${from}>`,
    `To: <${to}>`,
    `Subject: ${subject}`,
    `Message-ID: <${randomBytes(8).toString('hex')}@reliability.example>`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Please find the invoice attached.',
    `--${boundary}`,
    'Content-Type: application/pdf; name="invoice.pdf"',
    'Content-Disposition: attachment; filename="invoice.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    pdf.toString('base64').replace(/.{76}/g, '$&\r\n'),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

// ---------------------------------------------------------------------------------------------
// Load

/** Runs `count` tasks with at most `concurrency` at once; `onProgress` after each. */
export async function runPool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const runners = Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const i = next++;
      await task(i);
    }
  });
  await Promise.all(runners);
}

/** Calls `task` `perSecond` times a second (spread evenly) until `stop()`; returns every promise's outcome. */
export function steadyTraffic<T>(perSecond: number, task: (i: number) => Promise<T>): { stop: () => Promise<T[]>; outcomes: T[] } {
  const outcomes: T[] = [];
  const pending = new Set<Promise<void>>();
  let i = 0;
  const timer = setInterval(() => {
    const n = i++;
    const p = task(n).then((o) => {
      outcomes.push(o);
    });
    pending.add(p);
    void p.finally(() => pending.delete(p));
  }, 1000 / perSecond);
  return {
    outcomes,
    stop: async () => {
      clearInterval(timer);
      await Promise.all([...pending]);
      return outcomes;
    },
  };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
