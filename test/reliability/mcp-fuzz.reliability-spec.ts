import fc from 'fast-check';
import { request } from 'undici';
import { ADMIN_TOKEN, INGEST_TOKEN } from '../support/test-env';
import { agent, createTenant, ingestSms, json, rpc, send, Tenant, toolOk } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { deepNesting, deepNestingFigure, errorLinesOf, forgedCursors, holdsIllFormed, hostileString } from './support/hostile-input';
import { fmt, ResultBuilder, tally } from './support/results';
import { Hints, JsonSchema, objectFor } from './support/schema-arbitrary';

/**
 * Issue 6: "Property-based fuzzing (fast-check) of POST /api/mcp with 10,000 random bodies and
 * headers: no 5xx, no crash, every answer a valid JSON-RPC or HTTP error."
 *
 * Against a running `api` process: valid and invalid JSON, random JSON-RPC shapes and batches,
 * real and made-up methods and tools, arguments generated from each tool's own inputSchema (so
 * most calls reach the handlers) with wrong types and odd strings mixed in, and random
 * Content-Type, Content-Encoding, Accept, Origin, MCP-Protocol-Version and Authorization headers
 * (a valid key most of the time). A JSON-RPC -32603 "Internal error" counts as a failure too.
 *
 * Issue 10, §4 adds to the corpus: U+0000 and lone surrogates in argument values and property
 * names (each must be a tool error naming the argument), forged list cursors (impossible dates,
 * year 0000, unsigned, another tool's, a real one re-encoded with another id), and JSON nested
 * up to 400,000 deep (refused before parsing: HTTP 400, -32700).
 *
 * Issue 42 adds MCP 2026-07-28 requests: the `_meta` envelope with the headers that mirror the
 * body (MCP-Protocol-Version, Mcp-Method, Mcp-Name), as the v2 client sends them and broken one way
 * at a time, and `server/discover`. (subscriptions/listen answers a stream that stays open: it has
 * tests of its own.)
 *
 * Issue 43 adds the MCP Events methods (events/list, events/poll, events/subscribe,
 * events/unsubscribe) with hostile names, filters, cursors, secrets and ids: a review found
 * U+0000 in a filter answered -32603 and an unpadded whsec_ secret crashing subscribe; each must
 * be a -32602 naming the field. (events/stream answers a stream: it has tests of its own.)
 */
const RUNS = Number(process.env.RELIABILITY_FUZZ_RUNS ?? 10_000);
const SEED = Number(process.env.RELIABILITY_FUZZ_SEED ?? Date.now() % 2 ** 31);

interface Keys {
  owner: string;
  member: string;
  lines: string;
  revoked: string;
}

interface Case {
  headers: Record<string, string>;
  body: Buffer;
  /** The id of a single well-formed request, when the body is one. */
  expectId?: string | number;
  label: string;
  /** A tools/call whose arguments hold U+0000 or a lone surrogate (a value or a property name). */
  illFormedArgs: boolean;
}

function isRpcResponse(x: unknown): boolean {
  if (!x || typeof x !== 'object' || Array.isArray(x)) return false;
  const r = x as Record<string, unknown>;
  if (r.jsonrpc !== '2.0') return false;
  // A 2026-07-28 error whose id could not be read leaves the id out (its schema has no null id).
  if (!(r.id === null || r.id === undefined || typeof r.id === 'string' || (typeof r.id === 'number' && Number.isFinite(r.id)))) return false;
  if (r.id === undefined && !('error' in r)) return false;
  const hasResult = 'result' in r;
  const hasError = 'error' in r;
  if (hasResult === hasError) return false;
  if (hasError) {
    const e = r.error as Record<string, unknown>;
    return !!e && Number.isInteger(e.code) && typeof e.message === 'string';
  }
  return !!r.result && typeof r.result === 'object';
}

type ModernShape = 'none' | 'valid' | 'no headers' | 'wrong name' | 'wrong method' | 'envelope only' | 'bad envelope';
type Body = { raw: string | Buffer; m: Record<string, unknown> | undefined; label: string };

/**
 * A single request made a 2026-07-28 one (issue 42): the `_meta` envelope in its params and the
 * headers that mirror it, as the v2 client sends them, or broken in one way (headers left out, a
 * wrong Mcp-Name or Mcp-Method, an envelope without headers, an envelope without
 * clientCapabilities). Anything else is left as generated.
 */
function modernized(b: Body, shape: ModernShape): Body & { headers: Record<string, string> } {
  const m = b.m;
  if (shape === 'none' || !m || typeof m.params !== 'object' || m.params === null || Array.isArray(m.params)) return { ...b, headers: {} };
  const envelope: Record<string, unknown> = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  if (shape === 'bad envelope') delete envelope['io.modelcontextprotocol/clientCapabilities'];
  const params: Record<string, unknown> = { ...(m.params as Record<string, unknown>), _meta: envelope };
  const message = { ...m, params };
  const headers: Record<string, string> = {};
  if (shape !== 'no headers' && shape !== 'envelope only') {
    headers['mcp-protocol-version'] = '2026-07-28';
    headers['mcp-method'] = shape === 'wrong method' ? 'tools/list' : String(m.method).replace(/[^\x20-\x7e]/g, '');
    const name = typeof params.name === 'string' ? params.name : '';
    headers['mcp-name'] =
      shape === 'wrong name' ? 'not_this_tool' : /^[\x21-\x7e]*$/.test(name) ? name : `=?base64?${Buffer.from(name, 'utf8').toString('base64')}?=`;
  }
  return { raw: JSON.stringify(message), m: message, label: `2026-07-28 ${shape}`, headers };
}

describe('reliability: fuzzing POST /api/mcp', () => {
  let stack: Stack;
  let base: string;
  let keys: Keys;
  let tools: Array<{ name: string; inputSchema: JsonSchema }>;
  let hints: Hints;
  const result = new ResultBuilder('mcp-fuzz', `Fuzzing POST /api/mcp (${fmt(RUNS)} requests)`);

  beforeAll(async () => {
    stack = await startStack({ tag: 'fuzz', workers: 0 });
    base = stack.apis[0].baseUrl;
    const owner: Tenant = await createTenant(base, { lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    const member = await createTenant(base, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const linesOnly = await createTenant(base, { orgId: owner.orgId, lines: ['PHONE_NUMBER', 'PHONE_NUMBER'], keyOnFirstLine: true });
    const other = await createTenant(base, { lines: ['PHONE_NUMBER'] });
    const revoked = await createTenant(base, { orgId: owner.orgId, lines: ['EMAIL_ACCOUNT'] });
    await send('DELETE', `${base}/admin/api-keys/${revoked.apiKeyId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    keys = { owner: owner.apiKey, member: member.apiKey, lines: linesOnly.apiKey, revoked: revoked.apiKey };

    // Some real objects, so generated ids hit rows: a webhook, a thread with messages, a contact.
    const phone = owner.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const { endpoint } = await toolOk(base, owner.apiKey, 'register_webhook', { url: `${stack.receiverUrl}/fuzz`, events: ['message.received'] });
    const inbound = await ingestSms(base, { to: phone.address, from: '+16665550100', body: 'fuzz seed', providerMessageId: 'fuzz-seed' });
    await ingestSms(base, { to: phone.address, from: '+16665550102', body: 'second thread', providerMessageId: 'fuzz-seed-2' });
    const message = json(
      await send('POST', `${base}/ingest/sms/inbound`, {
        headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: other.lines[0].address, from: '+16665550101', body: 'other org', providerMessageId: 'fuzz-other' }),
      }),
    );
    const { contact } = await toolOk(base, owner.apiKey, 'create_contact', {
      displayName: 'Fuzz Contact',
      identities: [{ kind: 'PHONE', value: '+16665550100' }],
    });
    await toolOk(base, owner.apiKey, 'create_contact', { displayName: 'Second Contact', identities: [{ kind: 'PHONE', value: '+16665550102' }] });
    // Real cursors, and forgeries of them (issue 10, §4).
    const threadsCursor: string = (await toolOk(base, owner.apiKey, 'list_threads', { limit: 1 })).nextCursor;
    const contactsCursor: string = (await toolOk(base, owner.apiKey, 'list_contacts', { limit: 1 })).nextCursor;
    const listed = json(await rpc(base, owner.apiKey, 'tools/list'));
    tools = listed.result.tools;
    hints = {
      ids: [
        endpoint.id,
        inbound.messageId!,
        message.threadId,
        message.messageId,
        contact.id,
        ...owner.lines.map((l) => l.id),
        ...other.lines.map((l) => l.id),
        owner.userId,
        owner.orgId,
      ],
      byName: {
        url: [`${stack.receiverUrl}/fuzz2`, 'https://hooks.example.com/in', 'http://127.0.0.1:1/x', 'https://10.0.0.1/', 'ftp://x', 'not a url'],
        to: ['+16665550100', 'someone@example.com', phone.address],
        value: ['+16665550199', 'a@example.com', 'not-a-phone'],
        cursor: [
          'eyJ4IjoxfQ',
          'garbage',
          '',
          threadsCursor,
          contactsCursor,
          ...forgedCursors('list_threads', threadsCursor),
          ...forgedCursors('list_contacts', contactsCursor),
          ...['get_thread', 'list_agent_turns', 'list_webhook_deliveries'].flatMap((tool) => forgedCursors(tool)),
        ],
        body: ['hello', ''],
        name: ['vip', 'x'.repeat(101)],
      },
    };
  });
  afterAll(async () => {
    result.record();
    await stack?.stop();
  });

  it(`answers ${fmt(RUNS)} random requests with valid JSON-RPC or HTTP errors, never 5xx`, async () => {
    const toolNames = tools.map((t) => t.name);
    const argsFor = new Map(tools.map((t) => [t.name, objectFor(t.inputSchema, hints)]));
    const anyArgs = fc.jsonValue({ maxDepth: 3 });
    const rpcId = fc.oneof(
      { arbitrary: fc.integer(), weight: 12 },
      { arbitrary: fc.string({ maxLength: 20 }), weight: 6 },
      { arbitrary: fc.constantFrom(null, 1.5, true, [], {}, Number.MAX_SAFE_INTEGER, -0), weight: 1 },
    );
    const toolCall = fc.oneof(
      { arbitrary: fc.constantFrom(...toolNames).chain((name) => argsFor.get(name)!.map((args) => ({ name, arguments: args }))), weight: 8 },
      {
        arbitrary: fc.record({ name: fc.oneof(fc.constantFrom(...toolNames), fc.string({ maxLength: 30 })), arguments: anyArgs }, { requiredKeys: [] }),
        weight: 2,
      },
      { arbitrary: anyArgs, weight: 1 },
    );
    // The MCP Events methods' params: names, filters, cursors, secrets and ids, often hostile; never
    // a callback URL the service would verify (each is refused by the URL rules) and never a cursor
    // of ours (no poll waits).
    const hostileOr = <T>(ok: fc.Arbitrary<T>) => fc.oneof({ arbitrary: ok, weight: 2 }, { arbitrary: hostileString, weight: 1 });
    const eventsParams = fc.record(
      {
        name: hostileOr(fc.constantFrom('message.received', 'message.sent', 'contact.merged', 'message.deleted', '__proto__')),
        arguments: fc.oneof(
          fc.record(
            {
              line: hostileOr(fc.uuid()),
              thread: hostileOr(fc.uuid()),
              label: hostileOr(fc.string({ maxLength: 120 })),
              direction: hostileOr(fc.constantFrom('INBOUND', 'OUTBOUND', 'UP')),
              mode: fc.constantFrom('concise', 'verbose', 'loud'),
            },
            { requiredKeys: [] },
          ),
          anyArgs,
        ),
        cursor: fc.oneof(fc.constant(null), hostileOr(fc.constantFrom('ecur2_AAAA', 'ecur1_', 'garbage', ''))),
        timeoutMs: fc.constantFrom(0, -1, 1.5, '10', 1e20),
        maxEvents: fc.constantFrom(1, 0, 101, 'x'),
        maxAgeMs: fc.constantFrom(0, -5, 'a week', 1e300),
        delivery: fc.record(
          {
            mode: fc.constantFrom('webhook', 'push', 7),
            url: hostileOr(fc.constantFrom('ftp://example.com/h', 'http://10.0.0.1/h', 'https://169.254.169.254/h', 'not a url')),
            secret: hostileOr(fc.constantFrom('whsec_abc', `whsec_${'A'.repeat(43)}`, `whsec_${'A'.repeat(44)}`, 'plain')),
          },
          { requiredKeys: [] },
        ),
        ttlMs: fc.constantFrom(1, 0, 'long', 86_400_000),
        id: hostileOr(fc.string({ maxLength: 40 })),
      },
      { requiredKeys: [] },
    );
    const method = fc.oneof(
      { arbitrary: fc.constant('tools/call'), weight: 10 },
      { arbitrary: fc.constantFrom('events/list', 'events/poll', 'events/subscribe', 'events/unsubscribe'), weight: 3 },
      {
        arbitrary: fc.constantFrom(
          'initialize',
          'ping',
          'tools/list',
          'server/discover',
          'notifications/initialized',
          'resources/list',
          'prompts/list',
          'logging/setLevel',
          'completion/complete',
        ),
        weight: 4,
      },
      { arbitrary: fc.string({ maxLength: 30 }), weight: 1 },
    );
    // Mostly well-formed requests; now and then one without jsonrpc, id (a notification) or params.
    const message = fc
      .tuple(
        fc.record({
          jsonrpc: fc.oneof({ arbitrary: fc.constant('2.0'), weight: 19 }, { arbitrary: fc.constantFrom('1.0', 2, null, ''), weight: 1 }),
          id: rpcId,
          method,
          params: fc.oneof(
            { arbitrary: toolCall, weight: 6 },
            { arbitrary: eventsParams, weight: 3 },
            { arbitrary: fc.record({ protocolVersion: fc.constantFrom('2025-11-25', '2025-06-18', '1999-01-01', 7) }), weight: 1 },
            { arbitrary: anyArgs, weight: 1 },
          ),
        }),
        fc.integer({ min: 0, max: 19 }),
      )
      .map(([m, drop]) => {
        const out: Record<string, unknown> = { ...m };
        if (drop === 0) delete out.jsonrpc;
        if (drop === 1) delete out.id;
        if (drop === 2) delete out.params;
        return out;
      });
    const body = fc.oneof(
      { arbitrary: message.map((m) => ({ raw: JSON.stringify(m), m, label: 'request' })), weight: 55 },
      { arbitrary: fc.array(message, { minLength: 1, maxLength: 5 }).map((ms) => ({ raw: JSON.stringify(ms), m: undefined, label: 'batch' })), weight: 10 },
      { arbitrary: anyArgs.map((v) => ({ raw: JSON.stringify(v), m: undefined, label: 'any JSON' })), weight: 10 },
      { arbitrary: message.map((m) => ({ raw: JSON.stringify(m).slice(0, -3), m: undefined, label: 'truncated JSON' })), weight: 5 },
      { arbitrary: fc.string({ maxLength: 200 }).map((s) => ({ raw: s, m: undefined, label: 'random text' })), weight: 5 },
      { arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => ({ raw: Buffer.from(b), m: undefined, label: 'random bytes' })), weight: 4 },
      { arbitrary: rpcId.map((id) => ({ raw: JSON.stringify({ jsonrpc: '2.0', id, result: {} }), m: undefined, label: 'a response' })), weight: 3 },
      {
        arbitrary: fc
          .constantFrom('', '[]', 'null', '{}', '[[]]', '"x"', '1e999', '{"jsonrpc":"2.0","method":"ping","id":1,"id":2}')
          .map((s) => ({ raw: s, m: undefined, label: 'edge' })),
        weight: 4,
      },
      {
        arbitrary: fc.constant({
          raw: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(1_100_000)}"}}`,
          m: undefined,
          label: 'over 1 MB',
        }),
        weight: 1,
      },
      // JSON nested up to 400,000 deep, in a tool's arguments or in params (issue 10, §4).
      {
        arbitrary: fc.tuple(deepNesting, fc.constantFrom(...toolNames), fc.boolean()).map(([deep, name, inArgs]) => ({
          raw: inArgs
            ? `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":{"x":${deep.text}}}}`
            : `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":${deep.text}}`,
          m: undefined,
          label: 'deep nesting',
        })),
        weight: 1,
      },
    );
    const authorization = fc.oneof(
      { arbitrary: fc.constant(`Bearer ${keys.owner}`), weight: 70 },
      { arbitrary: fc.constantFrom(`Bearer ${keys.member}`, `Bearer ${keys.lines}`), weight: 10 },
      {
        arbitrary: fc.constantFrom(
          `Bearer ${keys.revoked}`,
          'Bearer csk_0000',
          `Basic ${keys.owner}`,
          `Bearer ${ADMIN_TOKEN}`,
          `Bearer ${INGEST_TOKEN}`,
          'Bearer',
          '',
          `bearer   ${keys.owner}  `,
        ),
        weight: 10,
      },
      { arbitrary: fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')), weight: 5 },
      { arbitrary: fc.constant(undefined), weight: 5 },
    );
    const header = (values: string[], absent: number, present: number) =>
      fc.oneof(
        { arbitrary: fc.constant(undefined), weight: absent },
        { arbitrary: fc.constantFrom(...values), weight: present },
        { arbitrary: fc.string({ maxLength: 30 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')), weight: 1 },
      );
    const cases: fc.Arbitrary<Case> = fc
      .record({
        body,
        authorization,
        contentType: fc.oneof(
          { arbitrary: fc.constant('application/json'), weight: 12 },
          {
            arbitrary: header(
              [
                'text/plain',
                'application/json; charset=utf-8',
                'application/x-www-form-urlencoded',
                'multipart/form-data; boundary=x',
                'application/json; charset=utf-16',
                '',
              ],
              1,
              3,
            ),
            weight: 3,
          },
        ),
        contentEncoding: header(['gzip', 'deflate', 'br', 'identity', 'compress'], 30, 1),
        accept: header(['application/json, text/event-stream', 'application/json', 'text/event-stream', '*/*', 'text/html'], 2, 3),
        origin: header(['https://evil.example', 'null', 'http://localhost:3000', 'https://app.example.com'], 24, 1),
        version: fc.oneof(
          { arbitrary: header(['2025-11-25', '2025-06-18', '2025-03-26', '2026-07-28'], 6, 4), weight: 9 },
          { arbitrary: fc.constantFrom('2024-11-05', '2099-01-01', '2025-11-25, 2025-06-18'), weight: 1 },
        ),
        // A 2026-07-28 request (issue 42): envelope and mirrored headers as a client sends them, or broken one way.
        modern: fc.oneof(
          { arbitrary: fc.constant('none' as const), weight: 6 },
          { arbitrary: fc.constant('valid' as const), weight: 3 },
          {
            arbitrary: fc.constantFrom(
              'no headers' as const,
              'wrong name' as const,
              'wrong method' as const,
              'envelope only' as const,
              'bad envelope' as const,
            ),
            weight: 2,
          },
        ),
      })
      .map(({ body: original, authorization: auth, contentType, contentEncoding, accept, origin, version, modern }) => {
        const b = modernized(original, modern);
        const headers: Record<string, string> = { ...b.headers };
        if (auth !== undefined) headers.authorization = auth;
        if (contentType !== undefined) headers['content-type'] = contentType;
        if (contentEncoding !== undefined) headers['content-encoding'] = contentEncoding;
        if (accept !== undefined) headers.accept = accept;
        if (origin !== undefined) headers.origin = origin;
        if (version !== undefined && headers['mcp-protocol-version'] === undefined) headers['mcp-protocol-version'] = version;
        const m = b.m as Record<string, unknown> | undefined;
        const id = m?.id;
        const wellFormedId =
          m &&
          m.jsonrpc === '2.0' &&
          typeof m.method === 'string' &&
          m.method !== '' &&
          (typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)));
        const params = m?.params as { arguments?: unknown } | undefined;
        const illFormedArgs = m?.method === 'tools/call' && params !== null && typeof params === 'object' && holdsIllFormed(params.arguments);
        return {
          headers,
          body: Buffer.isBuffer(b.raw) ? b.raw : Buffer.from(b.raw),
          expectId: wellFormedId ? (id as string | number) : undefined,
          label: b.label,
          illFormedArgs,
        };
      });

    const statuses = new Map<number, number>();
    const rpcCodes = new Map<number, number>();
    const labels = new Map<string, number>();
    let toolResults = 0;
    let toolErrors = 0;
    let internalErrors = 0;
    /** Deep-nesting requests, and those of them refused with a 4xx. */
    let deepRequests = 0;
    let deepRefused = 0;
    /** Calls whose arguments held U+0000 or a lone surrogate, and those answered with the tool error naming it. */
    let illFormedCalls = 0;
    let illFormedRefused = 0;
    const started = Date.now();

    result.load = `${fmt(RUNS)} random requests to one api process, one at a time`;
    result.faults = '—';
    result.badInputs = `${fmt(RUNS)} random bodies and headers (seed ${SEED})`;
    result.figure('seed (RELIABILITY_FUZZ_SEED to replay)', SEED);

    try {
      await fc.assert(
        fc.asyncProperty(cases, async (c) => {
          labels.set(c.label, (labels.get(c.label) ?? 0) + 1);
          let status = 0;
          let text = '';
          let contentType = '';
          try {
            const res = await request(`${base}/api/mcp`, {
              method: 'POST',
              headers: c.headers,
              body: c.body,
              dispatcher: agent,
              headersTimeout: 30_000,
              bodyTimeout: 30_000,
            });
            status = res.statusCode;
            contentType = String(res.headers['content-type'] ?? '');
            text = await res.body.text();
          } catch (error) {
            throw new Error(`no HTTP answer (${(error as Error).message}): the process is ${stack.apis[0].alive ? 'alive' : 'DEAD'}`);
          }
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          const deep = c.label === 'deep nesting';
          if (deep) deepRequests += 1;
          if (deep && status >= 400 && status < 500) deepRefused += 1;
          if (status >= 500) throw new Error(`${status} ${text.slice(0, 300)}`);
          if (status === 202) {
            if (text !== '') throw new Error(`202 with a body: ${text.slice(0, 200)}`);
            return;
          }
          if (!/^application\/json/.test(contentType)) throw new Error(`${status} with Content-Type ${contentType}: ${text.slice(0, 200)}`);
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            throw new Error(`${status} with a body that is not JSON: ${text.slice(0, 200)}`);
          }
          if (status === 200) {
            const list = Array.isArray(parsed) ? parsed : [parsed];
            if (list.length === 0 || !list.every(isRpcResponse)) throw new Error(`200 that is not a JSON-RPC response (or batch): ${text.slice(0, 300)}`);
            if (!Array.isArray(parsed) && c.expectId !== undefined && (parsed as { id: unknown }).id !== c.expectId) {
              throw new Error(`answer id ${JSON.stringify((parsed as { id: unknown }).id)} for request id ${JSON.stringify(c.expectId)}`);
            }
            for (const r of list as Array<{ error?: { code: number }; result?: { content?: unknown; isError?: boolean } }>) {
              if (r.error) {
                rpcCodes.set(r.error.code, (rpcCodes.get(r.error.code) ?? 0) + 1);
                if (r.error.code === -32603) internalErrors += 1;
              } else if (r.result && 'content' in r.result) {
                if (r.result.isError) toolErrors += 1;
                else toolResults += 1;
              }
            }
            if (internalErrors) throw new Error(`-32603 Internal error: ${text.slice(0, 300)}`);
            const r = parsed as { result?: { isError?: boolean; content?: Array<{ text: string }> } };
            const text0 = r.result?.content?.[0]?.text ?? '';
            // Unless refused before the arguments are read (auth, unknown tool, the caller's role), the answer is the tool error naming the argument.
            if (c.illFormedArgs && !Array.isArray(parsed) && r.result && !/^\S+ needs the \w+ role/.test(text0)) {
              illFormedCalls += 1;
              if (r.result.isError && /^invalid arguments: .*contains (U\+0000 \(NUL\)|a lone UTF-16 surrogate)/.test(text0)) illFormedRefused += 1;
            }
            return;
          }
          // Any other status: an HTTP error with a JSON body (a JSON-RPC error or {statusCode, error, message}).
          const p = parsed as Record<string, unknown>;
          if (!(isRpcResponse(p) || (typeof p?.statusCode === 'number' && typeof p.message === 'string'))) {
            throw new Error(`${status} with an unexpected JSON body: ${text.slice(0, 300)}`);
          }
          if (isRpcResponse(p)) {
            const code = (p.error as { code: number } | undefined)?.code;
            if (code !== undefined) rpcCodes.set(code, (rpcCodes.get(code) ?? 0) + 1);
          }
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: false, interruptAfterTimeLimit: 600_000 },
      );
    } finally {
      const seconds = (Date.now() - started) / 1000;
      result.figure('requests (incl. shrinking) / time', `${fmt([...statuses.values()].reduce((a, b) => a + b, 0))} in ${seconds.toFixed(1)} s`);
      result.figure('body kinds', tally(labels));
      result.figure('HTTP statuses', tally(statuses));
      result.figure('JSON-RPC error codes', tally(rpcCodes));
      result.figure('tool results / tool errors (isError)', `${fmt(toolResults)} / ${fmt(toolErrors)}`);
      result.figure(
        '5xx answers, -32603 Internal errors',
        `${fmt([...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0))}, ${fmt(internalErrors)}`,
      );
      result.figure(
        'tools/call with U+0000 or a lone surrogate in the arguments / refused naming the argument',
        `${fmt(illFormedCalls)} / ${fmt(illFormedRefused)}`,
      );
      deepNestingFigure(result, deepRequests, deepRefused);
      errorLinesOf(result, stack.apis[0]);
    }
    const health = await send('GET', `${base}/health`);
    expect(health.status).toBe(200);
    expect(errorLinesOf(result, stack.apis[0])).toEqual([]);
    expect(illFormedRefused).toBe(illFormedCalls);
    result.passed = true;
  });
});
