import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResult, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { createSession, Session } from '../support/session';
import { createMcpTestApp, expectedToolText, hookUrl, ISO_MS, McpTestApp, UUID } from '../support/mcp';
import { storePayload } from '../support/payloads';

/** The webhook-management and line tools (other modules add more tools; those have their own tests). */
const ALL_TOOLS = [
  'delete_webhook',
  'get_webhook',
  'list_email_accounts',
  'list_phone_numbers',
  'list_webhook_deliveries',
  'list_webhooks',
  'register_webhook',
  'resend_webhook_delivery',
  'rotate_webhook_secret',
  'update_webhook',
];

/**
 * The official client: it negotiates the protocol, and callTool validates every structuredContent
 * against the outputSchema the server advertised, so a passing call proves that schema.
 */
describe('MCP with the official SDK client', () => {
  let t: McpTestApp;
  let base: string;
  let s: Session;
  beforeAll(async () => {
    t = await createMcpTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = await t.app.getUrl();
    s = await createSession(t.admin, { tier: 'PRO' });
  });
  afterAll(async () => {
    await t.close();
  });

  async function connect(key: string): Promise<Client> {
    const client = new Client({ name: 'e2e-sdk', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
    await client.connect(transport);
    return client;
  }

  /** A successful call: no isError, and the text item is the JSON of structuredContent (less a secret). */
  async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: expectedToolText(result.structuredContent!) }]);
    return result.structuredContent as Record<string, any>;
  }

  it('connects, negotiates the newest revision and reads the server description', async () => {
    const client = await connect(s.apiKey);
    try {
      expect(LATEST_PROTOCOL_VERSION).toBe('2025-11-25');
      expect(client.getServerVersion()).toEqual({ name: 'messaging-sync', title: 'Messaging Sync', version: '0.1.0' });
      // The SDK keeps the extensions map (MCP Events, docs/mcp.md "Events") and drops the draft's top-level `events`.
      expect(client.getServerCapabilities()).toEqual({
        tools: { listChanged: false },
        extensions: { 'io.modelcontextprotocol/events': { listChanged: false } },
      });
      expect(client.getInstructions()).toContain('list_email_accounts');
      await expect(client.ping()).resolves.toEqual({});
    } finally {
      await client.close();
    }
  });

  it('lists the tools and calls each of the ten webhook and line tools on its success path', async () => {
    const client = await connect(s.apiKey);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(ALL_TOOLS));
      for (const tool of tools) expect(tool.outputSchema).toBeDefined();
      const called = new Set<string>();
      const run = async (name: string, args: Record<string, unknown> = {}) => {
        called.add(name);
        return call(client, name, args);
      };

      const email = s.lines.find((line) => line.type === 'EMAIL_ACCOUNT')!;
      const phone = s.lines.find((line) => line.type === 'PHONE_NUMBER')!;
      expect(await run('list_email_accounts')).toEqual({
        emailAccounts: [{ id: email.id, channelType: 'EMAIL_ACCOUNT', emailAddress: email.address, isActive: true, lastSyncedAt: null }],
      });
      expect(await run('list_phone_numbers')).toEqual({
        phoneNumbers: [{ id: phone.id, channelType: 'PHONE_NUMBER', phoneNumber: phone.address }],
      });

      const url = hookUrl();
      const registered = await run('register_webhook', {
        url,
        events: ['message.received', 'thread.created'],
        mode: 'verbose',
        messageHistoryCount: 5,
        channelScope: { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: email.id }] },
      });
      expect(registered.secret).toMatch(/^[0-9a-f]{64}$/);
      expect(registered.signingSecret).toBe(`whsec_${Buffer.from(registered.secret, 'utf8').toString('base64')}`);
      const endpoint = registered.endpoint;
      expect(endpoint).toEqual({
        id: expect.stringMatching(UUID),
        url,
        events: ['message.received', 'thread.created'],
        mode: 'verbose',
        messageHistoryCount: 5,
        status: 'active',
        channelScope: { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: email.id }] },
        signatureVersion: 'v1',
        legacySignature: true,
        publicKey: null,
        disabledReason: null,
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      });

      expect(await run('list_webhooks')).toEqual({ endpoints: [endpoint] });
      expect(await run('get_webhook', { endpointId: endpoint.id })).toEqual({ endpoint });

      const updated = await run('update_webhook', { endpointId: endpoint.id, mode: 'concise', status: 'disabled' });
      expect(updated.endpoint).toMatchObject({ id: endpoint.id, mode: 'concise', status: 'disabled', disabledReason: expect.any(String) });

      const rotated = await run('rotate_webhook_secret', { endpointId: endpoint.id });
      expect(rotated.secret).toMatch(/^[0-9a-f]{64}$/);
      expect(rotated.secret).not.toBe(registered.secret);
      expect(rotated.endpoint.id).toBe(endpoint.id);

      const [row] = await t.db.query(
        `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, payload_id, event_created_at, status,
           attempt_count, last_status_code, last_error, last_attempt_at)
         VALUES ($1, $2, $3, 'message.received', 'verbose', $4, now(), 'failed', 6, 500, 'HTTP 500', now())
         RETURNING id`,
        [`evt_${'0a'.repeat(16)}`, endpoint.id, s.userId, await storePayload(t.db, { thread: { id: 't1' } })],
      );
      const listed = await run('list_webhook_deliveries', { endpointId: endpoint.id });
      expect(listed).toEqual({
        deliveries: [
          {
            id: row.id,
            eventId: `evt_${row.id.replace(/-/g, '')}`, // the trigger's: the id's hex (docs/delivery-log.md)
            endpointId: endpoint.id,
            eventType: 'message.received',
            status: 'failed',
            attempts: 6,
            lastStatusCode: 500,
            lastError: 'HTTP 500',
            lastAttemptAt: expect.stringMatching(ISO_MS),
            lastDurationMs: null,
            nextAttemptAt: null,
            resentFromId: null,
            createdAt: expect.stringMatching(ISO_MS),
          },
        ],
        nextCursor: null,
      });

      const resent = await run('resend_webhook_delivery', { deliveryId: row.id });
      expect(resent.delivery).toMatchObject({ endpointId: endpoint.id, status: 'pending', resentFromId: row.id, attempts: 0 });
      expect(resent.delivery.eventId).toMatch(/^evt_[0-9a-f]{32}$/);
      expect(resent.delivery.eventId).not.toBe(`evt_${row.id.replace(/-/g, '')}`);

      expect(await run('delete_webhook', { endpointId: endpoint.id })).toEqual({ deleted: true, endpointId: endpoint.id });
      expect(await run('list_webhooks')).toEqual({ endpoints: [] });

      expect([...called].sort()).toEqual(ALL_TOOLS);
    } finally {
      await client.close();
    }
  });

  it('sees tool failures as isError results, and unknown tools as protocol errors', async () => {
    const client = await connect(s.apiKey);
    try {
      await client.listTools();
      const refused = (await client.callTool({
        name: 'register_webhook',
        arguments: { url: 'https://10.0.0.1/hook', events: ['message.received'] },
      })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(refused.content).toEqual([{ type: 'text', text: expect.stringContaining('10.0.0.1') }]);
      await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    } finally {
      await client.close();
    }
  });

  it('a key revoked mid-run fails the next call with 401', async () => {
    const other = await createSession(t.admin);
    const client = await connect(other.apiKey);
    try {
      expect(await call(client, 'list_webhooks')).toEqual({ endpoints: [] });
      expect((await t.admin.delete(`/admin/api-keys/${other.apiKeyId}`)).status).toBe(204);
      const failure = client.callTool({ name: 'list_webhooks', arguments: {} });
      await expect(failure).rejects.toBeInstanceOf(StreamableHTTPError);
      await expect(failure).rejects.toMatchObject({ code: 401 });
    } finally {
      await client.close();
    }
  });
});
