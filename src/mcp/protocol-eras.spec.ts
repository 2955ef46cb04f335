import { checkModern, checkModernNotification, decodeHeaderValue, eraOf, META, ProtocolRefusal } from './protocol-eras';
import { JsonRpcRequest } from './json-rpc';

const ENVELOPE = { [META.protocolVersion]: '2026-07-28', [META.clientCapabilities]: {} };
const HEADERS = { protocolVersion: '2026-07-28', method: 'tools/call', name: 'list_webhooks' };

function call(params: Record<string, unknown> = {}, method = 'tools/call'): JsonRpcRequest {
  return { jsonrpc: '2.0', id: 1, method, params: { name: 'list_webhooks', arguments: {}, _meta: ENVELOPE, ...params } };
}

function refusalOf(fn: () => unknown): { status: number; code: number; message: string; data?: unknown } {
  try {
    fn();
  } catch (error) {
    if (error instanceof ProtocolRefusal) return { status: error.status, code: error.code, message: error.message, data: error.data };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('eraOf', () => {
  it('is legacy without any version, and for a legacy version in the header or in _meta', () => {
    expect(eraOf({ jsonrpc: '2.0', id: 1, method: 'initialize' }, {})).toEqual({ era: 'legacy' });
    expect(eraOf({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { protocolVersion: '2025-06-18' })).toEqual({ era: 'legacy' });
    expect(eraOf(call({ _meta: { [META.protocolVersion]: '2025-11-25' } }), {})).toEqual({ era: 'legacy' });
  });

  it('is modern for 2026-07-28 claimed by _meta or by the header alone', () => {
    expect(eraOf(call(), {})).toEqual({ era: 'modern', version: '2026-07-28' });
    expect(eraOf({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { protocolVersion: '2026-07-28' })).toEqual({ era: 'modern', version: '2026-07-28' });
  });

  it('refuses a header that names another version than _meta, above all a 2026-07-28 header over a legacy claim (-32020)', () => {
    const legacyClaim = call({ _meta: { ...ENVELOPE, [META.protocolVersion]: '2025-11-25' } });
    for (const header of ['2026-07-28', '2025-06-18', '2099-01-01']) {
      expect(refusalOf(() => eraOf(legacyClaim, { ...HEADERS, protocolVersion: header }))).toEqual({
        status: 400,
        code: -32020,
        message: `Header mismatch: the MCP-Protocol-Version header "${header}" does not match _meta io.modelcontextprotocol/protocolVersion "2025-11-25"`,
        data: undefined,
      });
    }
    expect(eraOf(legacyClaim, { protocolVersion: '2025-11-25' })).toEqual({ era: 'legacy' });
  });

  it('refuses an unknown version with -32022, listing every revision served', () => {
    const unknown = call({ _meta: { ...ENVELOPE, [META.protocolVersion]: '2099-01-01' } });
    expect(refusalOf(() => eraOf(unknown, { ...HEADERS, protocolVersion: '2099-01-01' }))).toEqual({
      status: 400,
      code: -32022,
      message: expect.stringContaining('2099-01-01'),
      data: { supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'], requested: '2099-01-01' },
    });
    expect(refusalOf(() => eraOf({ jsonrpc: '2.0', id: 1, method: 'ping' }, { protocolVersion: '2024-11-05' })).code).toBe(-32022);
    expect(refusalOf(() => eraOf(unknown, { ...HEADERS, protocolVersion: undefined })).code).toBe(-32022);
  });

  it('refuses a body whose _meta version differs from a 2026-07-28 header with HeaderMismatch -32020, even a version it does not speak', () => {
    for (const version of ['2099-01-01', '2025-11-25']) {
      const refused = refusalOf(() => eraOf(call({ _meta: { ...ENVELOPE, [META.protocolVersion]: version } }), HEADERS));
      expect(refused).toMatchObject({ status: 400, code: -32020 });
      expect(refused.message).toContain(`MCP-Protocol-Version header "2026-07-28" does not match _meta ${META.protocolVersion} "${version}"`);
    }
  });
});

describe('checkModern', () => {
  it('accepts a request whose headers mirror its body, and reads the envelope', () => {
    const meta = { ...ENVELOPE, [META.clientInfo]: { name: 'c', version: '1' }, [META.logLevel]: 'warning' };
    expect(checkModern(call({ _meta: meta }), '2026-07-28', HEADERS)).toEqual({
      version: '2026-07-28',
      clientInfo: { name: 'c', version: '1' },
      logLevel: 'warning',
    });
  });

  it.each([
    ['no _meta', { _meta: undefined }, /params\._meta is required/],
    ['no clientCapabilities', { _meta: { [META.protocolVersion]: '2026-07-28' } }, /clientCapabilities"\] is required/],
    ['a clientInfo without a version', { _meta: { ...ENVELOPE, [META.clientInfo]: { name: 'c' } } }, /clientInfo"\] must be an object/],
    ['an unknown log level', { _meta: { ...ENVELOPE, [META.logLevel]: 'loud' } }, /logLevel"\] must be one of debug, info/],
  ])('refuses %s with -32602 and 400', (_case, params, message) => {
    const refused = refusalOf(() => checkModern(call(params), '2026-07-28', HEADERS));
    expect(refused).toMatchObject({ status: 400, code: -32602 });
    expect(refused.message).toMatch(message);
  });

  it.each([
    ['MCP-Protocol-Version missing', { ...HEADERS, protocolVersion: undefined }, /MCP-Protocol-Version header is required/],
    ['MCP-Protocol-Version differing', { ...HEADERS, protocolVersion: '2025-11-25' }, /"2025-11-25" does not match/],
    ['Mcp-Method missing', { ...HEADERS, method: undefined }, /Mcp-Method header is required/],
    ['Mcp-Method differing', { ...HEADERS, method: 'tools/list' }, /"tools\/list" does not match the body's method "tools\/call"/],
    ['Mcp-Name missing', { ...HEADERS, name: undefined }, /Mcp-Name header is required on every 2026-07-28 tools\/call request/],
    ['Mcp-Name differing', { ...HEADERS, name: 'get_webhook' }, /"get_webhook" does not match the body's params\.name "list_webhooks"/],
    ['Mcp-Name not valid Base64', { ...HEADERS, name: '=?base64?%%%?=' }, /Mcp-Name header is not valid/],
    ['a header with characters a header may not hold', { ...HEADERS, method: 'tools/call\u00e9' }, /contains characters/],
  ])('refuses %s with HeaderMismatch -32020 and 400', (_case, headers, message) => {
    const refused = refusalOf(() => checkModern(call(), '2026-07-28', headers));
    expect(refused).toMatchObject({ status: 400, code: -32020 });
    expect(refused.message).toMatch(message);
  });

  it('compares a Base64-sentinel Mcp-Name after decoding it', () => {
    const name = 'dé_tool';
    const encoded = `=?base64?${Buffer.from(name, 'utf8').toString('base64')}?=`;
    expect(() => checkModern(call({ name }), '2026-07-28', { ...HEADERS, name: encoded })).not.toThrow();
    expect(refusalOf(() => checkModern(call({ name: 'other' }), '2026-07-28', { ...HEADERS, name: encoded })).code).toBe(-32020);
  });

  it('needs no Mcp-Name for methods that do not name anything, and leaves a nameless tools/call to its own -32602', () => {
    expect(() => checkModern(call({}, 'tools/list'), '2026-07-28', { ...HEADERS, method: 'tools/list', name: undefined })).not.toThrow();
    expect(() => checkModern(call({ name: undefined }), '2026-07-28', { ...HEADERS, name: undefined })).not.toThrow();
  });
});

describe('checkModernNotification', () => {
  it('asks no header of a notification, but refuses one that does not mirror it', () => {
    expect(() => checkModernNotification('notifications/cancelled', '2026-07-28', {})).not.toThrow();
    expect(() =>
      checkModernNotification('notifications/cancelled', '2026-07-28', { protocolVersion: '2026-07-28', method: 'notifications/cancelled' }),
    ).not.toThrow();
    expect(refusalOf(() => checkModernNotification('notifications/cancelled', '2026-07-28', { protocolVersion: '2025-11-25' }))).toMatchObject({
      status: 400,
      code: -32020,
      message: expect.stringContaining('MCP-Protocol-Version header "2025-11-25"'),
    });
    expect(refusalOf(() => checkModernNotification('notifications/cancelled', '2026-07-28', { method: 'tools/call' }))).toMatchObject({
      status: 400,
      code: -32020,
      message: expect.stringContaining('Mcp-Method header "tools/call"'),
    });
  });
});

describe('decodeHeaderValue', () => {
  it('reads plain values as they are and the sentinel form as Base64 of UTF-8', () => {
    expect(decodeHeaderValue('us-west1')).toBe('us-west1');
    expect(decodeHeaderValue('=?base64?SGVsbG8sIOS4lueVjA==?=')).toBe('Hello, 世界');
    expect(decodeHeaderValue('=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=')).toBe('=?base64?literal?=');
  });

  it('refuses a sentinel that is not Base64 of valid UTF-8', () => {
    expect(decodeHeaderValue('=?base64?not base64?=')).toBeNull();
    expect(decodeHeaderValue(`=?base64?${Buffer.from([0xff, 0xfe]).toString('base64')}?=`)).toBeNull();
    expect(decodeHeaderValue('=?base64?QQ?=')).toBe('A');
  });
});
