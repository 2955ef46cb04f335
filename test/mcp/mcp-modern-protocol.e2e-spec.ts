import request from 'supertest';
import { createMcpTestApp, MCP_URL, McpTestApp, mcpPost, rpc } from '../support/mcp';
import {
  base64Sentinel,
  CLIENT_CAPABILITIES,
  CLIENT_INFO,
  envelope,
  LOG_LEVEL,
  MODERN,
  modernMessage,
  modernPost,
  modernRpc,
  PROTOCOL_VERSION,
  SERVER_IDENTITY,
  SERVER_INFO,
  SUPPORTED_VERSIONS,
  withoutModernFields,
} from '../support/mcp-modern';
import { listen, RawConnection } from '../support/raw-http';
import { createSession, Session } from '../support/session';

/** A register_webhook call: what an attacker wants run, and what a refusal must leave undone. */
const REGISTER = { name: 'register_webhook', arguments: { url: 'https://hooks.example.com/modern', events: ['message.received'] } };

const HEADER = (text: string) => `Header mismatch: ${text}`;
const PARAMS = (text: string) => `Invalid params: ${text}`;

function expectError(res: request.Response, status: number, id: string | number | null | undefined, code: number, message: string | RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.headers['mcp-session-id']).toBeUndefined();
  const error = { code, message: typeof message === 'string' ? message : expect.stringMatching(message) };
  expect(res.body).toEqual(id === undefined ? { jsonrpc: '2.0', error } : { jsonrpc: '2.0', id, error });
}

/**
 * MCP revision 2026-07-28 on /api/mcp, probed over raw HTTP as a conforming client and as an
 * attacker would: every rule of the era (protocol-eras.ts; the revision's "Versioning",
 * "Streamable HTTP: Request Metadata / Server Validation", "Overview: _meta", "Discovery",
 * "Caching"), each with the HTTP status, the JSON-RPC code, the id and a message naming what is
 * wrong, and that what was refused ran nothing.
 */
describe('MCP 2026-07-28 over raw HTTP', () => {
  let t: McpTestApp;
  let s: Session;
  let port: number;

  beforeAll(async () => {
    t = await createMcpTestApp();
    s = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    port = await listen(t.app.getHttpServer());
  });
  afterAll(async () => {
    await t?.close();
  });

  const endpoints = async (userId = s.userId): Promise<number> =>
    (await t.db.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE user_id = $1', [userId]))[0].n;

  /** A POST written byte for byte (header lines repeated, or in any case, or with bytes beyond ASCII, as latin1): its status and JSON body. */
  async function rawPost(headerLines: string[], body: object): Promise<{ status: number; body: any }> {
    const conn = await RawConnection.open(port);
    try {
      const text = Buffer.from(JSON.stringify(body), 'utf8');
      const head = [
        `POST ${MCP_URL} HTTP/1.1`,
        'Host: 127.0.0.1',
        `Authorization: Bearer ${s.apiKey}`,
        'Content-Type: application/json',
        'Accept: application/json, text/event-stream',
        `Content-Length: ${text.length}`,
        'Connection: close',
        ...headerLines,
      ];
      conn.write(`${head.join('\r\n')}\r\n\r\n`);
      conn.write(text);
      const res = await conn.response(10_000);
      if (!res) throw new Error('no answer');
      return { status: res.status, body: JSON.parse(res.body) };
    } finally {
      conn.destroy();
    }
  }

  describe('the headers that mirror the body (Server Validation: HeaderMismatch -32020, 400)', () => {
    // Every case here sends register_webhook: refused, it must have registered nothing.
    afterEach(async () => {
      expect(await endpoints()).toBe(0);
    });

    it.each([
      ['MCP-Protocol-Version', 'the MCP-Protocol-Version header is required on every 2026-07-28 request'],
      ['Mcp-Method', 'the Mcp-Method header is required on every 2026-07-28 request'],
      ['Mcp-Name', 'the Mcp-Name header is required on every 2026-07-28 tools/call request'],
    ])('a tools/call without the %s header is refused, naming it', async (header, message) => {
      const res = await modernRpc(t, s.apiKey, 'tools/call', REGISTER, { id: `no-${header}`, headers: { [header]: undefined } });
      expectError(res, 400, `no-${header}`, -32020, HEADER(message));
    });

    it.each([
      [
        'an MCP-Protocol-Version of another revision',
        { 'MCP-Protocol-Version': '2025-11-25' },
        'the MCP-Protocol-Version header "2025-11-25" does not match _meta io.modelcontextprotocol/protocolVersion "2026-07-28"',
      ],
      ['an Mcp-Method of another method', { 'Mcp-Method': 'tools/list' }, `the Mcp-Method header "tools/list" does not match the body's method "tools/call"`],
      [
        'an Mcp-Method in another case (values are case-sensitive)',
        { 'Mcp-Method': 'Tools/Call' },
        `the Mcp-Method header "Tools/Call" does not match the body's method "tools/call"`,
      ],
      [
        'an Mcp-Name of a harmless tool',
        { 'Mcp-Name': 'list_webhooks' },
        `the Mcp-Name header "list_webhooks" does not match the body's params.name "register_webhook"`,
      ],
      [
        'an Mcp-Name in another case',
        { 'Mcp-Name': 'REGISTER_WEBHOOK' },
        `the Mcp-Name header "REGISTER_WEBHOOK" does not match the body's params.name "register_webhook"`,
      ],
    ])('%s than the body is refused before anything runs', async (_case, headers, message) => {
      const res = await modernRpc(t, s.apiKey, 'tools/call', REGISTER, { id: 41, headers });
      expectError(res, 400, 41, -32020, HEADER(message));
    });

    it('a 2026-07-28 header over a body whose _meta names a legacy revision is refused: an intermediary trusts that header as checked', async () => {
      const body = modernMessage('tools/call', REGISTER, { id: 'downgrade', meta: envelope({ [PROTOCOL_VERSION]: '2025-11-25' }) });
      const res = await modernPost(t, s.apiKey, body, { 'Mcp-Method': 'tools/list' });
      expectError(
        res,
        400,
        'downgrade',
        -32020,
        HEADER('the MCP-Protocol-Version header "2026-07-28" does not match _meta io.modelcontextprotocol/protocolVersion "2025-11-25"'),
      );
    });

    it('an Mcp-Name over a tools/call whose body names no tool is refused', async () => {
      const res = await modernRpc(t, s.apiKey, 'tools/call', { arguments: REGISTER.arguments }, { id: 43, headers: { 'Mcp-Name': 'register_webhook' } });
      expectError(res, 400, 43, -32020, HEADER(`the Mcp-Name header "register_webhook" does not match the body's params.name (absent)`));
    });

    describe('Mcp-Name in the Base64 sentinel form (Value Encoding)', () => {
      it('is decoded and compared: a match is served', async () => {
        const res = await modernRpc(
          t,
          s.apiKey,
          'tools/call',
          { name: 'list_webhooks', arguments: {} },
          { id: 44, headers: { 'Mcp-Name': base64Sentinel('list_webhooks') } },
        );
        expect(res.status).toBe(200);
        expect(res.body.id).toBe(44);
        expect(res.body.result.structuredContent).toEqual({ endpoints: [] });
      });

      it('carries a name that is not plain ASCII to the tool lookup', async () => {
        const res = await modernRpc(t, s.apiKey, 'tools/call', { name: 'liste_des_webhooks_é', arguments: {} }, { id: 45 });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ jsonrpc: '2.0', id: 45, error: { code: -32602, message: 'Unknown tool: liste_des_webhooks_é' } });
      });

      it('a valid sentinel of another name is refused, naming the decoded value', async () => {
        const res = await modernRpc(t, s.apiKey, 'tools/call', REGISTER, { id: 46, headers: { 'Mcp-Name': base64Sentinel('list_webhooks') } });
        expectError(res, 400, 46, -32020, HEADER(`the Mcp-Name header "list_webhooks" does not match the body's params.name "register_webhook"`));
      });

      it.each([
        ['not Base64', '=?base64?%%%?=', 'the Mcp-Name header is not valid: a =?base64?...?= value must hold Base64 of UTF-8 text'],
        [
          'Base64 of bytes that are not UTF-8',
          `=?base64?${Buffer.from([0xff, 0xfe, 0x72]).toString('base64')}?=`,
          'the Mcp-Name header is not valid: a =?base64?...?= value must hold Base64 of UTF-8 text',
        ],
        [
          'without its closing ?=',
          `=?base64?${Buffer.from('register_webhook').toString('base64')}`,
          'the Mcp-Name header is not valid: a =?base64?...?= value must hold Base64 of UTF-8 text',
        ],
      ])('a sentinel that is %s is refused', async (_case, value, message) => {
        const res = await modernRpc(t, s.apiKey, 'tools/call', REGISTER, { id: 47, headers: { 'Mcp-Name': value } });
        expectError(res, 400, 47, -32020, HEADER(message));
      });

      it('the markers are case-sensitive: =?BASE64?…?= is a plain value, compared as it is', async () => {
        const value = `=?BASE64?${Buffer.from('register_webhook').toString('base64')}?=`;
        const res = await modernRpc(t, s.apiKey, 'tools/call', REGISTER, { id: 48, headers: { 'Mcp-Name': value } });
        expectError(res, 400, 48, -32020, HEADER(`the Mcp-Name header ${JSON.stringify(value)} does not match the body's params.name "register_webhook"`));
      });
    });

    describe('on the wire', () => {
      it.each([
        ['MCP-Protocol-Version', 'MCP-Protocol-Version: 2026-07-28\u00e9'],
        ['Mcp-Method', 'Mcp-Method: tools/call\u00e9'],
        ['Mcp-Name', 'Mcp-Name: register_webhook\u00e9'],
      ])('a %s value with bytes beyond visible ASCII is refused', async (header, line) => {
        const lines = ['MCP-Protocol-Version: 2026-07-28', 'Mcp-Method: tools/call', 'Mcp-Name: register_webhook'].map((l) =>
          l.startsWith(`${header}:`) ? line : l,
        );
        const res = await rawPost(lines, modernMessage('tools/call', REGISTER, { id: 'bytes' }));
        expect(res).toEqual({
          status: 400,
          body: {
            jsonrpc: '2.0',
            id: 'bytes',
            error: { code: -32020, message: HEADER(`the ${header} header contains characters a header value may not hold`) },
          },
        });
      });

      it('a name beyond ASCII sent plain, even equal to the body once read as latin1, is refused: it must come Base64-encoded', async () => {
        const name = 'register_wébhook';
        const res = await rawPost(
          ['MCP-Protocol-Version: 2026-07-28', 'Mcp-Method: tools/call', `Mcp-Name: ${name}`],
          modernMessage('tools/call', { ...REGISTER, name }, { id: 49 }),
        );
        expect(res).toEqual({
          status: 400,
          body: { jsonrpc: '2.0', id: 49, error: { code: -32020, message: HEADER('the Mcp-Name header contains characters a header value may not hold') } },
        });
      });

      it('header names are matched in any case', async () => {
        const res = await rawPost(
          ['mcp-protocol-version: 2026-07-28', 'MCP-METHOD: tools/call', 'mCp-NaMe: list_webhooks'],
          modernMessage('tools/call', { name: 'list_webhooks' }, { id: 50 }),
        );
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 50, result: { structuredContent: { endpoints: [] }, resultType: 'complete' } });
      });

      it.each([
        [
          'MCP-Protocol-Version',
          ['MCP-Protocol-Version: 2026-07-28', 'MCP-Protocol-Version: 2026-07-28'],
          'the MCP-Protocol-Version header "2026-07-28, 2026-07-28" does not match _meta io.modelcontextprotocol/protocolVersion "2026-07-28"',
        ],
        [
          'Mcp-Method',
          ['Mcp-Method: tools/call', 'mcp-method: tools/call'],
          `the Mcp-Method header "tools/call, tools/call" does not match the body's method "tools/call"`,
        ],
        [
          'Mcp-Name',
          ['Mcp-Name: list_webhooks', 'Mcp-Name: register_webhook'],
          `the Mcp-Name header "list_webhooks, register_webhook" does not match the body's params.name "register_webhook"`,
        ],
      ])('a repeated %s header is refused, even when both lines agree with the body', async (header, repeated, message) => {
        const others = ['MCP-Protocol-Version: 2026-07-28', 'Mcp-Method: tools/call', 'Mcp-Name: register_webhook'].filter((l) => !l.startsWith(`${header}:`));
        const res = await rawPost([...others, ...repeated], modernMessage('tools/call', REGISTER, { id: 51 }));
        expect(res).toEqual({ status: 400, body: { jsonrpc: '2.0', id: 51, error: { code: -32020, message: HEADER(message) } } });
      });
    });

    it('the control: the same register_webhook with its headers mirrored does register (so the checks above could fail)', async () => {
      const other = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
      const res = await modernRpc(t, other.apiKey, 'tools/call', REGISTER, { id: 'control' });
      expect(res.status).toBe(200);
      expect(res.body.result.isError).toBeUndefined();
      expect(await endpoints(other.userId)).toBe(1);
    });
  });

  describe('the protocol version (UnsupportedProtocolVersion -32022, 400)', () => {
    const supported = { supported: SUPPORTED_VERSIONS, requested: expect.any(String) };
    const unsupported = (version: string) =>
      `Unsupported protocol version ${JSON.stringify(version)}: this server speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26 (2026-07-28 with per-request _meta; the others through initialize)`;

    it.each(['2099-01-01', '2024-11-05', '2026-07-28-draft'])(
      'an unknown version %s in _meta and its header is refused, listing every revision served',
      async (version) => {
        const res = await modernRpc(t, s.apiKey, 'tools/call', REGISTER, {
          id: 'v-1',
          meta: envelope({ [PROTOCOL_VERSION]: version }),
          headers: { 'MCP-Protocol-Version': version },
        });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({
          jsonrpc: '2.0',
          id: 'v-1',
          error: { code: -32022, message: unsupported(version), data: { ...supported, requested: version } },
        });
        expect(res.body.error.data.supported).toEqual(['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
        expect(await endpoints()).toBe(0);
      },
    );

    it('an unknown version in _meta under a 2026-07-28 header is HeaderMismatch: the request disagrees with itself (the conformance suite expects -32020)', async () => {
      const res = await modernRpc(t, s.apiKey, 'tools/list', {}, { id: 2, meta: envelope({ [PROTOCOL_VERSION]: '2099-01-01' }) });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: 2,
        error: {
          code: -32020,
          message: `Header mismatch: the MCP-Protocol-Version header "2026-07-28" does not match _meta ${PROTOCOL_VERSION} "2099-01-01"`,
        },
      });
    });

    it('an unknown version in the header of a request without _meta is refused', async () => {
      const res = await mcpPost(t, s.apiKey).set('MCP-Protocol-Version', '2099-01-01').send({ jsonrpc: '2.0', id: 3, method: 'tools/list' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: 3,
        error: { code: -32022, message: unsupported('2099-01-01'), data: { ...supported, requested: '2099-01-01' } },
      });
    });
  });

  describe('the _meta envelope (Overview, "Per-request protocol fields": -32602, 400)', () => {
    const capabilities = `params._meta["${CLIENT_CAPABILITIES}"] is required and must be an object ({} for a client that declares none)`;
    const clientInfo = `params._meta["${CLIENT_INFO}"] must be an object with a string name and a string version`;
    it.each([
      [
        'no _meta at all',
        null,
        'params._meta is required in 2026-07-28: it carries io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities on every request',
      ],
      [
        'a _meta that is not an object',
        'x',
        'params._meta is required in 2026-07-28: it carries io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities on every request',
      ],
      [
        'no protocolVersion (the header alone)',
        envelope({ [PROTOCOL_VERSION]: undefined }),
        `params._meta["${PROTOCOL_VERSION}"] is required and must be a string such as "2026-07-28"`,
      ],
      [
        'a protocolVersion that is a number',
        envelope({ [PROTOCOL_VERSION]: 20260728 }),
        `params._meta["${PROTOCOL_VERSION}"] is required and must be a string such as "2026-07-28"`,
      ],
      ['no clientCapabilities', envelope({ [CLIENT_CAPABILITIES]: undefined }), capabilities],
      ['clientCapabilities null', envelope({ [CLIENT_CAPABILITIES]: null }), capabilities],
      ['clientCapabilities an array', envelope({ [CLIENT_CAPABILITIES]: [] }), capabilities],
      ['a clientInfo without a version', envelope({ [CLIENT_INFO]: { name: 'c' } }), clientInfo],
      ['a clientInfo that is a string', envelope({ [CLIENT_INFO]: 'c/1.0' }), clientInfo],
      ['a clientInfo whose version is a number', envelope({ [CLIENT_INFO]: { name: 'c', version: 1 } }), clientInfo],
    ])('%s is refused, naming the field', async (_case, meta, message) => {
      const body = modernMessage('tools/call', REGISTER, { id: 'env', meta: null });
      if (meta !== null) (body.params as Record<string, unknown>)._meta = meta;
      const res = await modernPost(t, s.apiKey, body);
      expectError(res, 400, 'env', -32602, PARAMS(message));
      expect(await endpoints()).toBe(0);
    });

    it('a request without params at all (server/discover by the header alone) is refused the same way', async () => {
      const res = await mcpPost(t, s.apiKey)
        .set({ 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'server/discover' })
        .send({ jsonrpc: '2.0', id: 5, method: 'server/discover' });
      expectError(res, 400, 5, -32602, /^Invalid params: params\._meta is required in 2026-07-28/);
    });

    it('the envelope is judged before the headers', async () => {
      const res = await modernRpc(t, s.apiKey, 'tools/call', REGISTER, {
        id: 6,
        meta: envelope({ [CLIENT_CAPABILITIES]: undefined }),
        headers: { 'Mcp-Method': 'tools/list' },
      });
      expectError(res, 400, 6, -32602, PARAMS(capabilities));
    });

    it.each(['loud', 'WARNING', 'warn', 3, null])('an unknown logLevel %p is refused (Logging, "Error Handling")', async (level) => {
      const res = await modernRpc(t, s.apiKey, 'tools/list', {}, { id: 7, meta: envelope({ [LOG_LEVEL]: level }) });
      expectError(res, 400, 7, -32602, PARAMS(`params._meta["${LOG_LEVEL}"] must be one of debug, info, notice, warning, error, critical, alert, emergency`));
    });

    it.each(['debug', 'warning', 'emergency'])('a known logLevel %s is served as JSON, with no log notifications', async (level) => {
      const res = await modernRpc(t, s.apiKey, 'tools/call', { name: 'list_webhooks' }, { id: 8, meta: envelope({ [LOG_LEVEL]: level }) });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 8, result: { structuredContent: { endpoints: [] }, resultType: 'complete' } });
    });

    it('a clientInfo is optional, and extra fields of an Implementation are accepted', async () => {
      for (const info of [undefined, { name: 'c', version: '1', title: 'C', websiteUrl: 'https://c.example' }]) {
        const res = await modernRpc(t, s.apiKey, 'tools/list', {}, { id: 9, meta: envelope({ [CLIENT_INFO]: info }) });
        expect(res.status).toBe(200);
        expect(res.body.result.resultType).toBe('complete');
      }
    });
  });

  describe('methods', () => {
    it.each(['tools/run', 'resources/list', 'prompts/list', 'completion/complete', 'Tools/List', 'notifications/initialized'])(
      'an unknown method %s is 404 with -32601',
      async (method) => {
        const res = await modernRpc(t, s.apiKey, method, {}, { id: 'm-1' });
        expectError(res, 404, 'm-1', -32601, `Method not found: ${method}`);
      },
    );

    it.each([
      [
        'initialize',
        'initialize is not part of 2026-07-28; there is no handshake: every request carries its version and capabilities in params._meta; server/discover tells what this server speaks',
      ],
      ['ping', 'ping is not part of 2026-07-28; ping was removed; any request (server/discover, say) shows the server answers'],
      ['logging/setLevel', 'logging/setLevel is not part of 2026-07-28; the log level is per request: params._meta["io.modelcontextprotocol/logLevel"]'],
    ])('the legacy method %s with a modern envelope is 404 with -32601, saying what to do instead', async (method, why) => {
      const res = await modernRpc(t, s.apiKey, method, method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: {} } : {}, { id: 12 });
      expectError(res, 404, 12, -32601, `Method not found: ${method}: ${why}`);
    });

    it('an unknown method is still judged by the headers first', async () => {
      const res = await modernRpc(t, s.apiKey, 'tools/run', {}, { id: 13, headers: { 'Mcp-Method': 'tools/list' } });
      expectError(res, 400, 13, -32020, HEADER(`the Mcp-Method header "tools/list" does not match the body's method "tools/run"`));
    });

    it('a batch claiming the modern era is refused whole (400, -32600), and none of it runs', async () => {
      const batch = [modernMessage('tools/call', REGISTER, { id: 1 }), modernMessage('tools/list', {}, { id: 2 })];
      const message = 'a 2026-07-28 POST carries one JSON-RPC message; batches belong to 2025-03-26 and are served only without a modern version';
      // Claimed by the bodies' _meta, with the headers a client would send for the first...
      expectError(
        await mcpPost(t, s.apiKey).set({ 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'register_webhook' }).send(batch),
        400,
        undefined,
        -32600,
        message,
      );
      // ...by one message's _meta alone, among legacy ones...
      const mixed = [{ jsonrpc: '2.0', id: 3, method: 'tools/call', params: REGISTER }, modernMessage('tools/list', {}, { id: 4 })];
      expectError(await mcpPost(t, s.apiKey).send(mixed), 400, undefined, -32600, message);
      // ...or by the header alone over legacy messages.
      const legacy = [{ jsonrpc: '2.0', id: 5, method: 'tools/call', params: REGISTER }];
      expectError(await mcpPost(t, s.apiKey).set('MCP-Protocol-Version', MODERN).send(legacy), 400, undefined, -32600, message);
      expect(await endpoints()).toBe(0);
    });

    it('a notification is accepted: 202 with an empty body', async () => {
      for (const [method, params] of [
        ['notifications/cancelled', { requestId: 1, reason: 'gone' }],
        ['notifications/no_such_thing', {}],
      ] as const) {
        const res = await modernRpc(t, s.apiKey, method, params, { id: null });
        expect(res.status).toBe(202);
        expect(res.text).toBe('');
        expect(res.headers['content-type']).toBeUndefined();
        expect(res.headers['mcp-session-id']).toBeUndefined();
      }
    });

    it('a notification whose headers do not mirror it is refused (400, -32020, no id)', async () => {
      const version = await modernRpc(
        t,
        s.apiKey,
        'notifications/cancelled',
        { requestId: 1 },
        { id: null, headers: { 'MCP-Protocol-Version': '2025-11-25' } },
      );
      expectError(
        version,
        400,
        undefined,
        -32020,
        HEADER('the MCP-Protocol-Version header "2025-11-25" does not match _meta io.modelcontextprotocol/protocolVersion "2026-07-28"'),
      );
      const method = await modernRpc(t, s.apiKey, 'notifications/cancelled', { requestId: 1 }, { id: null, headers: { 'Mcp-Method': 'tools/call' } });
      expectError(method, 400, undefined, -32020, HEADER(`the Mcp-Method header "tools/call" does not match the body's method "notifications/cancelled"`));
    });
  });

  describe('results', () => {
    it('server/discover: every revision served, the tools capability with listChanged, the instructions, cacheable by anyone for an hour', async () => {
      const res = await modernRpc(t, s.apiKey, 'server/discover', {}, { id: 'discover-1' });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      const legacy = await rpc(t, s.apiKey, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } });
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: 'discover-1',
        result: {
          supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'],
          capabilities: {
            tools: { listChanged: true },
            events: { listChanged: false },
            extensions: { 'io.modelcontextprotocol/events': { listChanged: false } },
          },
          instructions: legacy.body.result.instructions,
          ttlMs: 3_600_000,
          cacheScope: 'public',
          resultType: 'complete',
          _meta: { [SERVER_INFO]: SERVER_IDENTITY },
        },
      });
      expect(res.body.result.instructions).toContain('register_webhook');
    });

    it('server/discover is the same for every caller (it is public), a read-only key included', async () => {
      const reader = (await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'reader', permissions: ['read'] }).expect(201)).body.key;
      const [mine, theirs] = await Promise.all([
        modernRpc(t, s.apiKey, 'server/discover', {}, { id: 1 }),
        modernRpc(t, reader, 'server/discover', {}, { id: 1 }),
      ]);
      expect(theirs.body).toEqual(mine.body);
    });

    it('tools/list: the caller’s tools in one order every time, cacheable for five minutes by this caller only', async () => {
      const first = await modernRpc(t, s.apiKey, 'tools/list', {}, { id: 'l-1' });
      const second = await modernRpc(t, s.apiKey, 'tools/list', {}, { id: 'l-1' });
      expect(first.status).toBe(200);
      expect(second.text).toBe(first.text);
      const result = first.body.result;
      expect(Object.keys(result).sort()).toEqual(['_meta', 'cacheScope', 'resultType', 'tools', 'ttlMs']);
      expect(result).toMatchObject({ ttlMs: 300_000, cacheScope: 'private', resultType: 'complete', _meta: { [SERVER_INFO]: SERVER_IDENTITY } });
      const names = result.tools.map((tool: { name: string }) => tool.name);
      expect(names).toEqual([...names].sort((a: string, b: string) => a.localeCompare(b)));
      expect(names).toContain('register_webhook');
      // The same tools, described alike, as the legacy era lists them.
      expect(result.tools).toEqual((await rpc(t, s.apiKey, 'tools/list')).body.result.tools);
    });

    it('tools/list depends on the caller: a read-only key sees fewer tools', async () => {
      const reader = (await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'reader', permissions: ['read'] }).expect(201)).body.key;
      const names = (await modernRpc(t, reader, 'tools/list')).body.result.tools.map((tool: { name: string }) => tool.name);
      expect(names).not.toContain('register_webhook');
      expect(names).toContain('list_phone_numbers');
    });

    it('tools/call: a successful tool with resultType and the server’s identity', async () => {
      const res = await modernRpc(t, s.apiKey, 'tools/call', { name: 'list_phone_numbers', arguments: {} }, { id: 'c-1' });
      expect(res.status).toBe(200);
      const structuredContent = { phoneNumbers: [{ id: s.lines[0].id, channelType: 'PHONE_NUMBER', phoneNumber: s.lines[0].address }] };
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: 'c-1',
        result: {
          content: [{ type: 'text', text: JSON.stringify(structuredContent) }],
          structuredContent,
          resultType: 'complete',
          _meta: { [SERVER_INFO]: SERVER_IDENTITY },
        },
      });
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text, 'utf8'));
    });

    it('tools/call: a tool error (isError) with resultType and the server’s identity', async () => {
      const res = await modernRpc(t, s.apiKey, 'tools/call', { name: 'get_webhook', arguments: {} }, { id: 7 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: 7,
        result: {
          content: [{ type: 'text', text: 'invalid arguments: endpointId is required' }],
          isError: true,
          resultType: 'complete',
          _meta: { [SERVER_INFO]: SERVER_IDENTITY },
        },
      });
    });

    it('tools/call: the same tool answers alike in both eras, but for what the modern era adds', async () => {
      const modern = await modernRpc(t, s.apiKey, 'tools/call', { name: 'list_phone_numbers', arguments: {} });
      const legacy = await rpc(t, s.apiKey, 'tools/call', { name: 'list_phone_numbers', arguments: {} });
      expect(withoutModernFields(modern.body.result)).toEqual(legacy.body.result);
    });

    it.each([
      ['no params.name', { arguments: {} }, 'params.name must be a string'],
      ['a params.name that is not a string', { name: 7 }, 'params.name must be a string'],
      ['an unknown tool', { name: 'drop_database' }, 'Unknown tool: drop_database'],
      ['arguments that are not an object', { name: 'list_webhooks', arguments: [] }, 'params.arguments must be an object'],
    ])('tools/call with %s is -32602 in the answer (HTTP 200)', async (_case, params, message) => {
      const res = await modernRpc(t, s.apiKey, 'tools/call', params, { id: 'p-1' }); // Mcp-Name mirrors a string params.name only
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ jsonrpc: '2.0', id: 'p-1', error: { code: -32602, message } });
    });
  });

  describe('what comes before the era’s rules', () => {
    it('an unauthenticated modern request is 401 whatever its headers say, and nothing runs', async () => {
      for (const headers of [{}, { 'Mcp-Method': 'tools/list' }, { 'MCP-Protocol-Version': '2099-01-01' }]) {
        const res = await modernPost(t, `csk_${'ab'.repeat(24)}`, modernMessage('tools/call', REGISTER), headers);
        expect(res.status).toBe(401);
        expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
        expect(res.body).toEqual({ statusCode: 401, error: 'Unauthorized', message: expect.any(String) });
        const bare = await mcpPost(t).set({ 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call' }).send(modernMessage('tools/call', REGISTER));
        expect(bare.status).toBe(401);
      }
      expect(await endpoints()).toBe(0);
    });

    it('a body over the limit is 413 in both eras, before it is parsed', async () => {
      const pad = 'x'.repeat(1024 * 1024);
      const modern = await modernRpc(t, s.apiKey, 'tools/call', { name: 'list_webhooks', arguments: {}, pad });
      const legacy = await mcpPost(t, s.apiKey).send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_webhooks', pad } });
      for (const res of [modern, legacy]) {
        expect(res.status).toBe(413);
        expect(res.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringContaining(String(1024 * 1024)) } });
      }
    });

    it('an Origin that is not allowed is 403 in the modern era too', async () => {
      const res = await modernRpc(t, s.apiKey, 'tools/call', REGISTER, { headers: { Origin: 'https://evil.example' } });
      expectError(res, 403, null, -32600, 'Origin https://evil.example is not allowed');
      expect(await endpoints()).toBe(0);
    });
  });

  describe('the legacy era beside it', () => {
    it('a request without any version is served as before: no resultType, no _meta', async () => {
      const list = await mcpPost(t, s.apiKey).send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      expect(Object.keys(list.body.result)).toEqual(['tools']);
      const call = await mcpPost(t, s.apiKey).send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_webhooks' } });
      expect(call.body).toEqual({
        jsonrpc: '2.0',
        id: 2,
        result: { content: [{ type: 'text', text: '{"endpoints":[]}' }], structuredContent: { endpoints: [] } },
      });
      expect((await mcpPost(t, s.apiKey).send({ jsonrpc: '2.0', id: 3, method: 'ping' })).body).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
      const discover = await mcpPost(t, s.apiKey).send({ jsonrpc: '2.0', id: 4, method: 'server/discover' });
      expect(discover.status).toBe(200);
      expect(discover.body).toEqual({ jsonrpc: '2.0', id: 4, error: { code: -32601, message: 'Method not found: server/discover' } });
    });

    it('a legacy request with _meta of its own (a progress token, a trace) stays legacy', async () => {
      const res = await mcpPost(t, s.apiKey)
        .set('MCP-Protocol-Version', '2025-11-25')
        .send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'list_webhooks', _meta: { progressToken: 'p' } } });
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: 5,
        result: { content: [{ type: 'text', text: '{"endpoints":[]}' }], structuredContent: { endpoints: [] } },
      });
    });

    it('a legacy version in _meta with the same header is served as the legacy era, without the headers’ rules', async () => {
      const body = modernMessage('tools/call', { name: 'list_webhooks' }, { id: 6, meta: envelope({ [PROTOCOL_VERSION]: '2025-11-25' }) });
      const res = await mcpPost(t, s.apiKey).set('MCP-Protocol-Version', '2025-11-25').send(body);
      expect(res.status).toBe(200);
      expect(res.body.result).toEqual({ content: [{ type: 'text', text: '{"endpoints":[]}' }], structuredContent: { endpoints: [] } });
    });
  });

  describe('no sessions (Streamable HTTP, "Earlier Streamable HTTP Revisions")', () => {
    it('an Mcp-Session-Id header is ignored and none is minted, in either era', async () => {
      const modern = await modernRpc(t, s.apiKey, 'tools/list', {}, { headers: { 'Mcp-Session-Id': 'f81d4fae-7dec-11d0-a765-00a0c91e6bf6' } });
      expect(modern.status).toBe(200);
      expect(modern.headers['mcp-session-id']).toBeUndefined();
      const init = await rpc(t, s.apiKey, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } });
      expect(init.status).toBe(200);
      expect(init.headers['mcp-session-id']).toBeUndefined();
      const withOld = await modernRpc(t, s.apiKey, 'server/discover', {}, { headers: { 'Mcp-Session-Id': 'unknown', 'Last-Event-ID': '42' } });
      expect(withOld.status).toBe(200);
      expect(withOld.headers['mcp-session-id']).toBeUndefined();
    });

    it.each(['get', 'delete'] as const)('%s /api/mcp with the modern headers is 405 with Allow: POST', async (method) => {
      const res = await t
        .http()
        [method](MCP_URL)
        .set('Authorization', `Bearer ${s.apiKey}`)
        .set({ 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'subscriptions/listen', Accept: 'text/event-stream' });
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('POST');
      expect(res.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Method not allowed: use POST' } });
    });
  });
});
