import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import request from 'supertest';
import { createSession, Session } from '../support/session';
import { createMcpTestApp, MCP_URL, mcpPost, McpTestApp, rpc, toolError, toolOk } from '../support/mcp';
import { nonPortableKeywords, undescribedProperties } from '../../src/mcp/portable-schema';
import { ToolRegistry } from '../../src/mcp/tool-registry';
import { cursorArgument } from '../../src/tools/tool-schemas';
import { MESSAGE_STATUSES } from '../../src/conversations/message.entity';
import { ListWebhooksTool } from '../../src/webhooks/webhook.tools';

const VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
const NEWEST = '2025-11-25';

/**
 * docs/mcp.md's table of every tool's annotations (Tool descriptions): what tools/list must
 * advertise, hint by hint ("—" is a hint left out).
 */
function documentedAnnotations(): Map<string, Record<string, boolean>> {
  const text = readFileSync(resolve(__dirname, '../../docs/mcp.md'), 'utf8');
  const header = '| Tool | Kind | `readOnlyHint` | `destructiveHint` | `idempotentHint` | `openWorldHint` |';
  const start = text.indexOf(header);
  expect(start).toBeGreaterThan(0);
  const rows = text.slice(start).split('\n').slice(2);
  const table = new Map<string, Record<string, boolean>>();
  for (const row of rows) {
    const match = /^\| `([a-z_]+)` \| (Read|Write|Destructive) \| (.+) \|$/.exec(row);
    if (!match) break;
    const hints = match[3].split(' | ');
    const annotations: Record<string, boolean> = {};
    ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'].forEach((hint, i) => {
      if (hints[i] !== '—') annotations[hint] = hints[i] === 'true';
    });
    table.set(match[1], annotations);
  }
  return table;
}

/** Every answer of the endpoint: JSON, and never a session id (the server is stateless). */
function expectJson(res: request.Response) {
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['mcp-session-id']).toBeUndefined();
}

function expectRpcError(res: request.Response, status: number, id: string | number | null, code: number) {
  expect(res.status).toBe(status);
  expectJson(res);
  expect(res.body).toEqual({ jsonrpc: '2.0', id, error: { code, message: expect.any(String) } });
  expect(res.body.error.message.length).toBeGreaterThan(0);
}

function expectEmpty202(res: request.Response) {
  expect(res.status).toBe(202);
  expect(res.text).toBe('');
  expect(res.headers['mcp-session-id']).toBeUndefined();
}

describe('MCP protocol over raw HTTP', () => {
  let t: McpTestApp;
  let s: Session;
  beforeAll(async () => {
    t = await createMcpTestApp();
    s = await createSession(t.admin);
  });
  afterAll(async () => {
    await t.close();
  });

  describe('initialize', () => {
    it.each(VERSIONS)('echoes the supported version %s with the server description', async (version) => {
      const res = await rpc(
        t,
        s.apiKey,
        'initialize',
        {
          protocolVersion: version,
          capabilities: {},
          clientInfo: { name: 'raw-test', version: '1.0.0' },
        },
        'init-1',
      );
      expect(res.status).toBe(200);
      expectJson(res);
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: 'init-1',
        result: {
          protocolVersion: version,
          capabilities: {
            tools: { listChanged: false },
            events: { listChanged: false },
            extensions: { 'io.modelcontextprotocol/events': { listChanged: false } },
          },
          serverInfo: { name: 'messaging-sync', title: 'Messaging Sync', version: '0.1.0' },
          instructions: expect.stringContaining('register_webhook'),
        },
      });
    });

    it.each(['1999-01-01', '2024-11-05', '2026-01-01', 'latest'])('answers an unsupported requested version %s with the newest one', async (version) => {
      const res = await rpc(t, s.apiKey, 'initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 'x', version: '1' } }, 3);
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(3);
      expect(res.body.result.protocolVersion).toBe(NEWEST);
    });

    it('refuses initialize without a protocolVersion with -32602', async () => {
      expectRpcError(await rpc(t, s.apiKey, 'initialize', { capabilities: {} }, 4), 200, 4, -32602);
      expectRpcError(await rpc(t, s.apiKey, 'initialize', { protocolVersion: 20251125 }, 5), 200, 5, -32602);
    });
  });

  describe('notifications and ping', () => {
    it.each([
      ['notifications/initialized', undefined],
      ['notifications/cancelled', { requestId: 1, reason: 'user' }],
      ['notifications/progress', { progressToken: 'p', progress: 1 }],
      ['notifications/no_such_thing', { a: 1 }],
      ['tools/list', undefined],
    ])('%s sent as a notification is answered 202 with an empty body', async (method, params) => {
      const body: Record<string, unknown> = { jsonrpc: '2.0', method };
      if (params !== undefined) body.params = params;
      expectEmpty202(await mcpPost(t, s.apiKey).send(body));
    });

    it('a JSON-RPC response sent by the client is acknowledged with 202', async () => {
      expectEmpty202(await mcpPost(t, s.apiKey).send({ jsonrpc: '2.0', id: 9, result: {} }));
    });

    it('ping answers an empty result', async () => {
      const res = await rpc(t, s.apiKey, 'ping', undefined, 'p-1');
      expect(res.status).toBe(200);
      expectJson(res);
      expect(res.body).toEqual({ jsonrpc: '2.0', id: 'p-1', result: {} });
    });
  });

  describe('tools/list', () => {
    it('lists every tool fully described, with the annotations docs/mcp.md gives it', async () => {
      const res = await rpc(t, s.apiKey, 'tools/list', {}, 10);
      expect(res.status).toBe(200);
      expectJson(res);
      expect(res.body.id).toBe(10);
      expect(Object.keys(res.body.result)).toEqual(['tools']);
      const tools = res.body.result.tools as Array<Record<string, any>>;
      const names = tools.map((tool) => tool.name);
      expect(new Set(names).size).toBe(names.length);
      expect(names).toEqual([...names].sort());
      const documented = documentedAnnotations();
      expect(names).toEqual([...documented.keys()]);
      for (const tool of tools) {
        expect(tool.name).toMatch(/^[a-z][a-z0-9_]*$/);
        expect(Object.keys(tool).sort()).toEqual(['annotations', 'description', 'inputSchema', 'name', 'outputSchema', 'title']);
        expect(tool.title).toEqual(expect.any(String));
        expect(tool.title.length).toBeGreaterThan(0);
        expect(tool.description.length).toBeGreaterThan(10);
        expect(tool.inputSchema).toMatchObject({ type: 'object' });
        expect(tool.outputSchema).toMatchObject({ type: 'object', properties: expect.any(Object), required: expect.any(Array) });
        // Whatever the kind: a read tool is only readOnly; any other says whether it destroys.
        const { annotations } = tool;
        expect(annotations.title).toBe(tool.title);
        expect(typeof annotations.readOnlyHint).toBe('boolean');
        if (annotations.readOnlyHint) expect(annotations.destructiveHint).toBeUndefined();
        else expect(typeof annotations.destructiveHint).toBe('boolean');
        expect([undefined, true]).toContain(annotations.idempotentHint);
      }
      for (const tool of tools) {
        expect(tool.inputSchema.additionalProperties).toBe(false);
        expect({ name: tool.name, annotations: tool.annotations }).toEqual({
          name: tool.name,
          annotations: { title: tool.title, ...documented.get(tool.name) },
        });
      }
    });

    it('advertises the arguments of each tool as the spec names them', async () => {
      const res = await rpc(t, s.apiKey, 'tools/list');
      const byName = Object.fromEntries((res.body.result.tools as Array<Record<string, any>>).map((tool) => [tool.name, tool.inputSchema]));
      const args = (name: string) => [Object.keys(byName[name].properties ?? {}).sort(), [...(byName[name].required ?? [])].sort()];
      expect(args('list_webhooks')).toEqual([[], []]);
      expect(args('list_email_accounts')).toEqual([[], []]);
      expect(args('list_phone_numbers')).toEqual([[], []]);
      expect(args('get_webhook')).toEqual([['endpointId'], ['endpointId']]);
      expect(args('delete_webhook')).toEqual([['endpointId'], ['endpointId']]);
      expect(args('rotate_webhook_secret')).toEqual([['endpointId'], ['endpointId']]);
      expect(args('register_webhook')).toEqual([
        ['channelScope', 'events', 'legacySignature', 'messageHistoryCount', 'mode', 'signatureVersion', 'url'],
        ['events', 'url'],
      ]);
      expect(args('update_webhook')).toEqual([
        ['channelScope', 'endpointId', 'events', 'legacySignature', 'messageHistoryCount', 'mode', 'signatureVersion', 'status', 'url'],
        ['endpointId'],
      ]);
      expect(args('list_webhook_deliveries')).toEqual([['cursor', 'endpointId', 'status'], ['endpointId']]);
      expect(args('resend_webhook_delivery')).toEqual([['deliveryId'], ['deliveryId']]);
      expect(args('get_webhook_delivery')).toEqual([['deliveryId', 'maxChars', 'offset'], ['deliveryId']]);
      expect(args('recover_webhook_deliveries')).toEqual([
        ['endpointId', 'since', 'until'],
        ['endpointId', 'since'],
      ]);
      const register = byName.register_webhook.properties;
      expect(register.messageHistoryCount).toMatchObject({ type: 'integer', minimum: 0, maximum: 50 });
      expect(register.mode).toMatchObject({ type: 'string', enum: ['concise', 'verbose'] });
      expect(register.events).toMatchObject({ type: 'array', minItems: 1, description: expect.stringContaining('No item may appear twice.') });
      expect(register.events.items.enum).toHaveLength(13);
      expect(register.signatureVersion).toMatchObject({ type: 'string', enum: ['v1', 'v1a'] });
      expect(register.legacySignature).toMatchObject({ type: 'boolean' });
    });

    it('gives message.status as an enum of the statuses a message can have', async () => {
      const res = await rpc(t, s.apiKey, 'tools/list');
      const tools = res.body.result.tools as Array<Record<string, any>>;
      const outputs = Object.fromEntries(tools.map((tool) => [tool.name, tool.outputSchema]));
      expect(outputs.get_thread.properties.messages.items.properties.status.enum).toEqual([...MESSAGE_STATUSES]);
      expect(outputs.send_sms.properties.message.properties.status.enum).toEqual([
        'RECEIVED',
        'QUEUED',
        'SENT',
        'DELIVERED',
        'FAILED',
        'SCHEDULED',
        'CANCELED',
      ]);
    });

    it('advertises input schemas every major LLM client accepts, and still validates with the full schema', async () => {
      const res = await rpc(t, s.apiKey, 'tools/list');
      const tools = res.body.result.tools as Array<Record<string, any>>;
      const refused = tools.flatMap((tool) => nonPortableKeywords(tool.inputSchema).map((where) => `${tool.name} ${where}`));
      expect(refused).toEqual([]);
      // What left the schema is in the descriptions...
      const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool.inputSchema]));
      expect(byName.get_thread.properties.threadId.description).toMatch(/Format: a UUID\.$/);
      expect(byName.list_email_accounts).toEqual({ type: 'object', additionalProperties: false });
      expect(byName.send_email.properties.readReceipt.description).toMatch(/Default: false\.$/);
      expect(byName.recover_webhook_deliveries.properties.since.format).toBe('date-time');
      // ...and the server enforces it all the same.
      expect(await toolError(t, s.apiKey, 'get_thread', { threadId: 'not-a-uuid' })).toBe('invalid arguments: threadId must match format "uuid"');
      const events = ['message.received', 'message.received'];
      expect(await toolError(t, s.apiKey, 'register_webhook', { url: 'https://example.com/h', events })).toBe(
        'invalid arguments: events must not contain duplicates',
      );
    });
    it('describes every input property, and says conditional rules on the fields', async () => {
      const res = await rpc(t, s.apiKey, 'tools/list');
      const tools = res.body.result.tools as Array<Record<string, any>>;
      const registry = t.app.get(ToolRegistry);
      // The declared schemas: portableSchema's "Format: a UUID." would otherwise count as a description.
      const undescribed = tools.flatMap((tool) => undescribedProperties(registry.get(tool.name)!.spec.inputSchema).map((where) => `${tool.name} ${where}`));
      expect(undescribed).toEqual([]);

      const sendEmail = Object.fromEntries(tools.map((tool) => [tool.name, tool.inputSchema])).send_email.properties;
      expect(sendEmail.threadId.description).toContain('exactly one of threadId and to');
      expect(sendEmail.to.description).toContain('exactly one of threadId and to');
      expect(sendEmail.to.description).toContain('subject is required');
      expect(sendEmail.subject.description).toMatch(/^Required with to\./);
      expect(sendEmail.fromAccountId.description).toContain('more than one email account');
    });

    it('states the cursor length the schema enforces, in docs/mcp.md too', async () => {
      const res = await rpc(t, s.apiKey, 'tools/list');
      const cursors = (res.body.result.tools as Array<Record<string, any>>).flatMap((tool) => tool.inputSchema.properties?.cursor ?? []);
      expect(cursors.length).toBeGreaterThanOrEqual(5);
      for (const cursor of cursors) expect(cursor).toMatchObject({ type: 'string', minLength: 1, maxLength: 2048 });
      const docs = readFileSync(resolve(__dirname, '../../docs/mcp.md'), 'utf8');
      const stated = [...docs.matchAll(/`cursor`[^\n]*?1\.\.(\d+)|a string of 1\.\.(\d+) characters/g)].map((m) => Number(m[1] ?? m[2]));
      expect(stated.length).toBeGreaterThanOrEqual(2);
      expect(new Set(stated)).toEqual(new Set([cursorArgument.maxLength]));
    });
  });

  describe('tools/call', () => {
    it('answers {content: [text of the JSON], structuredContent} for a successful tool', async () => {
      const res = await rpc(t, s.apiKey, 'tools/call', { name: 'list_phone_numbers', arguments: {} }, 'c-1');
      expect(res.status).toBe(200);
      expectJson(res);
      const phone = s.lines.find((line) => line.type === 'PHONE_NUMBER')!;
      const structuredContent = { phoneNumbers: [{ id: phone.id, channelType: 'PHONE_NUMBER', phoneNumber: phone.address }] };
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: 'c-1',
        result: { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent },
      });
      // Written as UTF-8 JSON with its exact length, and no ETag: an answer to a POST is never revalidated.
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text, 'utf8'));
      expect(res.headers.etag).toBeUndefined();
    });

    it('treats a missing arguments member as no arguments', async () => {
      const res = await rpc(t, s.apiKey, 'tools/call', { name: 'list_webhooks' }, 'c-2');
      expect(res.body.result.structuredContent).toEqual({ endpoints: [] });
    });

    it('answers a failed tool with isError and a message, as a JSON-RPC success', async () => {
      const res = await rpc(t, s.apiKey, 'tools/call', { name: 'get_webhook', arguments: {} }, 'c-3');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: 'c-3',
        result: { content: [{ type: 'text', text: 'invalid arguments: endpointId is required' }], isError: true },
      });
    });
  });

  describe('protocol faults', () => {
    it.each([
      ['truncated JSON', '{"jsonrpc":"2.0","id":1,"method":"ping"'],
      ['not JSON at all', 'hello'],
      ['an empty body', ''],
      ['a trailing comma', '{"jsonrpc":"2.0","id":1,"method":"ping",}'],
      ['single quotes', "{'jsonrpc':'2.0','id':1,'method':'ping'}"],
    ])('%s is HTTP 400 with -32700 and id null, as JSON', async (_, body) => {
      const res = await mcpPost(t, s.apiKey).send(body);
      expectRpcError(res, 400, null, -32700);
    });

    it.each([
      ['jsonrpc missing', { id: 7, method: 'ping' }, 7],
      ['jsonrpc 1.0', { jsonrpc: '1.0', id: 'x', method: 'ping' }, 'x'],
      ['jsonrpc a number', { jsonrpc: 2.0, id: 8, method: 'ping' }, 8],
      ['method missing', { jsonrpc: '2.0', id: 9 }, 9],
      ['method a number', { jsonrpc: '2.0', id: 'abc', method: 42 }, 'abc'],
      ['method empty', { jsonrpc: '2.0', id: 10, method: '' }, 10],
      ['params a string', { jsonrpc: '2.0', id: 11, method: 'tools/list', params: 'all' }, 11],
      ['params null', { jsonrpc: '2.0', id: 12, method: 'tools/list', params: null }, 12],
      ['id an object', { jsonrpc: '2.0', id: { n: 1 }, method: 'ping' }, null],
      ['id an array', { jsonrpc: '2.0', id: [1], method: 'ping' }, null],
      ['id a boolean', { jsonrpc: '2.0', id: true, method: 'ping' }, null],
      ['id null', { jsonrpc: '2.0', id: null, method: 'ping' }, null],
      ['a JSON string', 'ping', null],
      ['a JSON number', 42, null],
      ['JSON null', null, null],
    ])('%s is -32600 (HTTP 400) with the id echoed when usable', async (_, body, id) => {
      const res = await mcpPost(t, s.apiKey).send(JSON.stringify(body));
      expectRpcError(res, 400, id as string | number | null, -32600);
    });

    it.each(['resources/list', 'prompts/list', 'tools/run', 'completion/complete', 'Tools/List'])(
      'unknown method %s is -32601 with the id echoed',
      async (method) => {
        expectRpcError(await rpc(t, s.apiKey, method, {}, 'm-1'), 200, 'm-1', -32601);
      },
    );

    it.each([
      ['unknown tool name', { name: 'drop_database', arguments: {} }],
      ['tool name of another case', { name: 'LIST_WEBHOOKS', arguments: {} }],
      ['no params', undefined],
      ['params an array', ['list_webhooks']],
      ['name missing', { arguments: {} }],
      ['name not a string', { name: 7, arguments: {} }],
      ['arguments an array', { name: 'list_webhooks', arguments: [] }],
      ['arguments a string', { name: 'list_webhooks', arguments: 'x' }],
      ['arguments a number', { name: 'list_webhooks', arguments: 1 }],
      ['arguments null', { name: 'list_webhooks', arguments: null }],
    ])('tools/call with %s is -32602', async (_, params) => {
      const res = await mcpPost(t, s.apiKey).send(
        params === undefined ? { jsonrpc: '2.0', id: 21, method: 'tools/call' } : { jsonrpc: '2.0', id: 21, method: 'tools/call', params },
      );
      expectRpcError(res, 200, 21, -32602);
    });

    it('the unknown tool is named in the message', async () => {
      const res = await rpc(t, s.apiKey, 'tools/call', { name: 'drop_database', arguments: {} });
      expect(res.body.error.message).toContain('drop_database');
    });
  });

  describe('batches (JSON-RPC 2.0)', () => {
    it('answers only the requests of a mixed batch, each with its own id', async () => {
      const res = await mcpPost(t, s.apiKey).send([
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 'two', method: 'tools/call', params: { name: 'list_webhooks', arguments: {} } },
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
        { jsonrpc: '2.0', id: 3, method: 'no/such/method' },
        { id: 4, method: 'ping' },
        { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'nope' } },
      ]);
      expect(res.status).toBe(200);
      expectJson(res);
      expect(Array.isArray(res.body)).toBe(true);
      const byId = new Map((res.body as Array<{ id: unknown }>).map((answer) => [answer.id, answer]));
      expect(res.body).toHaveLength(5);
      expect(byId.get(1)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
      expect(byId.get('two')).toEqual({
        jsonrpc: '2.0',
        id: 'two',
        result: { content: [{ type: 'text', text: '{"endpoints":[]}' }], structuredContent: { endpoints: [] } },
      });
      expect(byId.get(3)).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32601, message: expect.any(String) } });
      expect(byId.get(4)).toEqual({ jsonrpc: '2.0', id: 4, error: { code: -32600, message: expect.any(String) } });
      expect(byId.get(5)).toEqual({ jsonrpc: '2.0', id: 5, error: { code: -32602, message: expect.any(String) } });
    });

    it('answers invalid members of a batch with -32600 and id null', async () => {
      const res = await mcpPost(t, s.apiKey).send(JSON.stringify([1, 'x', { jsonrpc: '2.0', id: 6, method: 'ping' }]));
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        { jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.any(String) } },
        { jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.any(String) } },
        { jsonrpc: '2.0', id: 6, result: {} },
      ]);
    });

    it('a batch of notifications only is answered 202 with an empty body', async () => {
      expectEmpty202(
        await mcpPost(t, s.apiKey).send([
          { jsonrpc: '2.0', method: 'notifications/initialized' },
          { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
        ]),
      );
    });

    it('an empty batch is a single -32600 with id null', async () => {
      const res = await mcpPost(t, s.apiKey).send('[]');
      expectRpcError(res, 400, null, -32600);
      expect(Array.isArray(res.body)).toBe(false);
    });
  });

  describe('headers', () => {
    it.each(VERSIONS)('accepts MCP-Protocol-Version %s', async (version) => {
      const res = await rpc(t, s.apiKey, 'ping', undefined, 1).set('MCP-Protocol-Version', version);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    });

    it.each(['2024-11-05', '2099-01-01', 'garbage', ''])(
      'refuses MCP-Protocol-Version "%s" with 400 UnsupportedProtocolVersion, listing what it speaks, before running anything',
      async (version) => {
        const res = await rpc(
          t,
          s.apiKey,
          'tools/call',
          { name: 'register_webhook', arguments: { url: 'https://hooks.example.com/v', events: ['message.received'] } },
          1,
        ).set('MCP-Protocol-Version', version);
        expect(res.status).toBe(400);
        expectJson(res);
        expect(res.body).toEqual({
          jsonrpc: '2.0',
          id: 1,
          error: {
            code: -32022,
            message: expect.stringContaining('Unsupported protocol version'),
            data: { supported: ['2026-07-28', ...VERSIONS], requested: version },
          },
        });
        expect((await toolOk(t, s.apiKey, 'list_webhooks', {})).endpoints).toEqual([]);
      },
    );

    it('refuses a request whose Origin is not allowed (none are, by default) with 403', async () => {
      const res = await rpc(t, s.apiKey, 'ping', undefined, 1).set('Origin', 'https://evil.example');
      expectRpcError(res, 403, null, -32600);
      expect(res.body.error.message).toContain('https://evil.example');
    });
  });

  describe('answers of revision 2026-07-28', () => {
    const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const serverMeta = { 'io.modelcontextprotocol/serverInfo': { name: 'messaging-sync', title: 'Messaging Sync', version: '0.1.0' } };
    const modern = (method: string, params: Record<string, unknown>, name?: string) => {
      const req = rpc(t, s.apiKey, method, { ...params, _meta: envelope }, 7)
        .set('MCP-Protocol-Version', '2026-07-28')
        .set('Mcp-Method', method);
      return name === undefined ? req : req.set('Mcp-Name', name);
    };

    it("carry the 2025-11-25 result's members, then resultType and the server's identity in _meta", async () => {
      const legacy = await rpc(t, s.apiKey, 'tools/call', { name: 'list_webhooks', arguments: {} }, 7).set('MCP-Protocol-Version', NEWEST);
      const res = await modern('tools/call', { name: 'list_webhooks', arguments: {} }, 'list_webhooks');
      expect([legacy.status, res.status]).toEqual([200, 200]);
      expectJson(res);
      expect(res.body).toEqual({ ...legacy.body, result: { ...legacy.body.result, resultType: 'complete', _meta: serverMeta } });
      // structuredContent is written last, from the text the tool's result was checked as (mcp-answer.ts).
      expect(Object.keys(res.body.result)).toEqual(['content', 'resultType', '_meta', 'structuredContent']);
    });

    it('give server/discover the same two members after its own', async () => {
      const res = await modern('server/discover', {});
      expect(res.status).toBe(200);
      expect(Object.keys(res.body.result)).toEqual(['supportedVersions', 'capabilities', 'instructions', 'ttlMs', 'cacheScope', 'resultType', '_meta']);
      expect(res.body.result._meta).toEqual(serverMeta);
      expect(res.body.result.resultType).toBe('complete');
    });
  });

  describe('authentication', () => {
    function expect401(res: request.Response) {
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer( |$)/);
      expectJson(res);
      expect(res.body).toEqual({ statusCode: 401, error: 'Unauthorized', message: expect.any(String) });
    }
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };

    it('refuses a missing key', async () => {
      expect401(await mcpPost(t).send(ping));
    });

    it.each([
      ['an unknown well-formed key', `Bearer csk_${'ab'.repeat(24)}`],
      ['a malformed key', 'Bearer not-a-key'],
      ['a key with a wrong prefix', `Bearer sk_${'ab'.repeat(24)}`],
      ['another scheme', `Basic ${Buffer.from('user:pass').toString('base64')}`],
      ['a bare scheme', 'Bearer'],
    ])('refuses %s', async (_, authorization) => {
      expect401(await mcpPost(t).set('Authorization', authorization).send(ping));
    });

    it('refuses the admin token', async () => {
      expect401(await mcpPost(t).set('Authorization', `Bearer ${process.env.ADMIN_TOKEN}`).send(ping));
    });

    it('refuses a revoked key at once, and nothing it asks for happens', async () => {
      const other = await createSession(t.admin);
      expect((await rpc(t, other.apiKey, 'ping')).status).toBe(200);
      expect((await t.admin.delete(`/admin/api-keys/${other.apiKeyId}`)).status).toBe(204);
      expect401(await rpc(t, other.apiKey, 'ping'));
      expect401(
        await rpc(t, other.apiKey, 'tools/call', { name: 'register_webhook', arguments: { url: 'https://hooks.example.com/r', events: ['message.sent'] } }),
      );
      const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM webhook_endpoints WHERE user_id = $1', [other.userId]);
      expect(count).toBe(0);
    });

    it('checks the key before parsing the body', async () => {
      expect401(await mcpPost(t).send('{not json'));
    });
  });

  describe('HTTP methods', () => {
    it.each(['get', 'delete', 'put', 'patch'] as const)('%s /api/mcp is 405 with Allow: POST (with or without a key)', async (method) => {
      for (const authorization of [undefined, `Bearer ${s.apiKey}`]) {
        const req = t.http()[method](MCP_URL);
        if (authorization) req.set('Authorization', authorization);
        const res = await req.set('Accept', 'text/event-stream');
        expect(res.status).toBe(405);
        expect(res.headers.allow).toBe('POST');
        expectJson(res);
        expect(res.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.any(String) } });
      }
    });
  });

  describe('body size (default limit, 1 MB)', () => {
    it('a body over 1 MB is 413 as JSON', async () => {
      const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(1024 * 1024) } });
      const res = await mcpPost(t, s.apiKey).send(big);
      expectRpcError(res, 413, null, -32600);
    });

    it('a body just under 1 MB is served', async () => {
      const envelope = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: '' } });
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(1024 * 1024 - envelope.length) } });
      expect(Buffer.byteLength(body)).toBe(1024 * 1024);
      const res = await mcpPost(t, s.apiKey).send(body);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    });
  });
});

describe('MCP protocol: configured Origin allowlist and body limit', () => {
  let t: McpTestApp;
  let s: Session;
  const LIMIT = 4096;
  beforeAll(async () => {
    t = await createMcpTestApp({
      MCP_ALLOWED_ORIGINS: 'https://app.example.com, http://localhost:5173',
      PUBLIC_BASE_URL: 'https://messages.example.com',
      MCP_MAX_BODY_BYTES: String(LIMIT),
    });
    s = await createSession(t.admin);
  });
  afterAll(async () => {
    await t.close();
  });

  it.each(['https://app.example.com', 'http://localhost:5173', 'https://messages.example.com'])('serves the allowed Origin %s', async (origin) => {
    const res = await rpc(t, s.apiKey, 'ping', undefined, 1).set('Origin', origin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });

  it('serves a request without an Origin header', async () => {
    expect((await rpc(t, s.apiKey, 'ping')).status).toBe(200);
  });

  it.each([
    'https://evil.example',
    'https://app.example.com.evil.example',
    'http://app.example.com',
    'https://app.example.com:8443',
    'null',
    'http://localhost:5174',
    'http://127.0.0.1:3000',
  ])('refuses the Origin %s with 403', async (origin) => {
    const res = await rpc(
      t,
      s.apiKey,
      'tools/call',
      { name: 'register_webhook', arguments: { url: 'https://hooks.example.com/o', events: ['message.received'] } },
      1,
    ).set('Origin', origin);
    expectRpcError(res, 403, null, -32600);
    const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM webhook_endpoints WHERE user_id = $1', [s.userId]);
    expect(count).toBe(0);
  });

  it(`a body of ${LIMIT + 1} bytes is 413 as JSON; ${LIMIT} bytes is served`, async () => {
    const envelope = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: '' } });
    const sized = (n: number) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(n - envelope.length) } });
    const over = await mcpPost(t, s.apiKey).send(sized(LIMIT + 1));
    expectRpcError(over, 413, null, -32600);
    expect(over.body.error.message).toContain(String(LIMIT));
    const at = await mcpPost(t, s.apiKey).send(sized(LIMIT));
    expect(at.status).toBe(200);
    expect(at.body).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });

  it('an oversize body without a key is 401: the body is never read before the key is checked (issue 10)', async () => {
    const res = await mcpPost(t).send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(LIMIT) } }));
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
    expectJson(res);
  });
});

describe('MCP protocol: Origin in development (DNS rebinding protection)', () => {
  let t: McpTestApp;
  let s: Session;
  beforeAll(async () => {
    t = await createMcpTestApp({ APP_ENV: 'development', PUBLIC_BASE_URL: 'https://messages.example.com' });
    s = await createSession(t.admin);
  });
  afterAll(async () => {
    await t.close();
  });

  it.each(['http://localhost:5173', 'http://127.0.0.1:49152', 'http://[::1]:3000', 'https://messages.example.com'])('serves the Origin %s', async (origin) => {
    const res = await rpc(t, s.apiKey, 'ping', undefined, 1).set('Origin', origin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });

  it.each(['http://evil.example.com', 'https://localhost:5173', 'http://localhost.evil.example.com:3000', 'null'])(
    'refuses the Origin %s with 403 and changes nothing',
    async (origin) => {
      const res = await rpc(
        t,
        s.apiKey,
        'tools/call',
        { name: 'register_webhook', arguments: { url: 'https://hooks.example.com/d', events: ['message.received'] } },
        1,
      ).set('Origin', origin);
      expectRpcError(res, 403, null, -32600);
      expect(res.body.error.message).toBe(`Origin ${origin} is not allowed`);
      const [{ count }] = await t.db.query('SELECT count(*)::int AS count FROM webhook_endpoints WHERE user_id = $1', [s.userId]);
      expect(count).toBe(0);
    },
  );
});

describe('MCP protocol: results are checked against their outputSchema (MCP_CHECK_RESULTS)', () => {
  let t: McpTestApp;
  let s: Session;
  beforeAll(async () => {
    t = await createMcpTestApp({ MCP_CHECK_RESULTS: 'true' });
    s = await createSession(t.admin);
  });
  afterAll(async () => {
    await t.close();
  });
  afterEach(() => jest.restoreAllMocks());

  it('a result that drifts from what tools/list promises is an internal error naming the tool and the path', async () => {
    // A defect simulated in one tool: its result no longer matches its declared outputSchema.
    jest.spyOn(t.app.get(ListWebhooksTool), 'execute').mockResolvedValue({ endpoints: 'none' } as never);
    const res = await rpc(t, s.apiKey, 'tools/call', { name: 'list_webhooks', arguments: {} }, 7);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32603, message: 'list_webhooks returned a result that does not match its outputSchema: /endpoints must be array' },
    });
  });

  it('a result that keeps its promise is served as usual', async () => {
    expect(await toolOk(t, s.apiKey, 'list_webhooks')).toEqual({ endpoints: [] });
  });
});
