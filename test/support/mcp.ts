import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { FORBIDDEN_URLS, resolverFor } from '../fixtures/forbidden-urls';
import { HOST_RESOLVER, HostResolver } from '../../src/outbound-http/url-policy';
import { createTestApp, TestApp, TestEnv } from './app';
import { validatedEventsResult } from './event-schemas';
import { runQueuePrefix } from './test-env';

export const MCP_URL = '/api/mcp';
/** What the fake resolver answers for every name the corpus does not mention (example.com's address). */
export const PUBLIC_ADDRESS = '93.184.216.34';

export type FakeResolver = HostResolver & { calls: string[] };

/**
 * A resolver that never touches DNS: the forbidden corpus's names answer their `resolvesTo`,
 * every other name (hooks.example.com, ...) answers a public address.
 */
export function fakeResolver(): FakeResolver {
  return resolverFor(FORBIDDEN_URLS, () => [PUBLIC_ADDRESS]);
}

export interface McpTestApp extends TestApp {
  resolver: FakeResolver;
  db: DataSource;
}

/**
 * The whole service with the fake resolver; `env` is laid over the defaults below for this app only.
 *
 * The app runs as PROCESS_ROLE=api on its own Bull key prefix: the tool surface is under test,
 * not the delivery engine, so nothing it enqueues (resend) is ever attempted, and no request
 * leaves for the public address the fake resolver hands out. On close, deliveries still owed to
 * the test endpoints (https://hooks.example.com/...) are cancelled, so no other app's sweep
 * picks them up.
 */
export async function createMcpTestApp(env: TestEnv = {}): Promise<McpTestApp> {
  const resolver = fakeResolver();
  const t = await createTestApp({
    env: {
      APP_ENV: 'production',
      WEBHOOK_ALLOWED_CIDRS: 'none',
      MCP_ALLOWED_ORIGINS: '',
      MCP_MAX_BODY_BYTES: undefined,
      PROCESS_ROLE: 'api',
      QUEUE_PREFIX: runQueuePrefix('mcp'),
      ...env,
    },
    overrides: (builder) => builder.overrideProvider(HOST_RESOLVER).useValue(resolver),
  });
  const db = t.app.get(DataSource);
  const close = async () => {
    await db
      .query(
        `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL
          WHERE status IN ('pending', 'retrying')
            AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE url LIKE 'https://hooks.example.com/%')`,
      )
      .catch(() => undefined);
    await t.close();
  };
  return { ...t, resolver, db, close };
}

/** A POST to the MCP endpoint with the headers a Streamable HTTP client sends. */
export function mcpPost(t: TestApp, key?: string): request.Test {
  const req = t.http().post(MCP_URL).set('Content-Type', 'application/json').set('Accept', 'application/json, text/event-stream');
  return key === undefined ? req : req.set('Authorization', `Bearer ${key}`);
}

let nextId = 1;

/** One JSON-RPC request; returns the raw HTTP answer. */
export function rpc(t: TestApp, key: string, method: string, params?: unknown, id: string | number = nextId++): request.Test {
  const body: Record<string, unknown> = { jsonrpc: '2.0', id, method };
  if (params !== undefined) body.params = params;
  return checkedEvents(method, mcpPost(t, key).send(body));
}

/** A request of an events/* method whose result, when it succeeds, is checked against the event catalog (test/support/event-schemas.ts). */
export function checkedEvents(method: string, test: request.Test): request.Test {
  return method.startsWith('events/') ? test.expect((res) => void validatedEventsResult(method, res.body?.result)) : test;
}

export interface ToolResult {
  content: Array<{ type: string; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** tools/call; asserts a JSON-RPC success and returns the tool result. */
export async function callTool(t: TestApp, key: string, name: string, args?: Record<string, unknown>): Promise<ToolResult> {
  const id = nextId++;
  const res = await rpc(t, key, 'tools/call', args === undefined ? { name } : { name, arguments: args }, id);
  if (res.status !== 200 || !res.body?.result) throw new Error(`tools/call ${name} answered ${res.status} ${res.text}`);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body.jsonrpc).toBe('2.0');
  expect(res.body.id).toBe(id);
  return res.body.result as ToolResult;
}

/** A successful result's text block: the JSON of structuredContent, but a webhook secret (both forms) is only in structuredContent (docs/mcp.md). */
export function expectedToolText(structured: Record<string, unknown>): string {
  const withheld = 'withheld from this text; read it from structuredContent';
  return JSON.stringify(
    'secret' in structured ? { ...structured, secret: withheld, ...('signingSecret' in structured ? { signingSecret: withheld } : {}) } : structured,
  );
}

/** A tool call that must succeed: checks the MCP result shape and returns structuredContent. */
export async function toolOk<T = Record<string, any>>(t: TestApp, key: string, name: string, args?: Record<string, unknown>): Promise<T> {
  const result = await callTool(t, key, name, args);
  if (result.isError) throw new Error(`${name} failed: ${result.content[0]?.text}`);
  expect(Object.keys(result).sort()).toEqual(['content', 'structuredContent']);
  expect(result.content).toEqual([{ type: 'text', text: expectedToolText(result.structuredContent!) }]);
  return result.structuredContent as T;
}

/** A tool call that must fail as a tool (isError), not as a protocol error; returns its message. */
export async function toolError(t: TestApp, key: string, name: string, args?: Record<string, unknown>): Promise<string> {
  const result = await callTool(t, key, name, args);
  if (!result.isError) throw new Error(`${name} was expected to fail but answered ${JSON.stringify(result.structuredContent)}`);
  expect(result).toEqual({ content: [{ type: 'text', text: expect.any(String) }], isError: true });
  return result.content[0].text;
}

export const EVENT_KINDS = [
  'message.received',
  'message.sent',
  'message.status_changed',
  'thread.created',
  'email.opened',
  'attachment.extracted',
  'contact.merged',
  'email_account.health_changed',
  'agent_turn.awaiting_approval',
  'agent_turn.sent',
  'sms.opted_out',
  'sms.opted_in',
] as const;

/** A public-looking webhook URL, unique per call. */
export function hookUrl(): string {
  return `https://hooks.example.com/in/${randomBytes(4).toString('hex')}`;
}

/** The JSON-RPC error a raw answer carries, with its HTTP status and id. */
export function rpcError(res: request.Response): { status: number; id: unknown; code: number; message: string } {
  return { status: res.status, id: res.body?.id, code: res.body?.error?.code, message: res.body?.error?.message };
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
