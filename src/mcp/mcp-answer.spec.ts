import { answerText, serializedAs } from './mcp-answer';
import { JsonRpcResponse } from './json-rpc';

describe('answerText', () => {
  const page = { threads: [{ id: 'a', subject: 'Quote "this" \\ please', labels: ['vip'] }], nextCursor: null };

  it('writes what JSON.stringify writes, byte for byte, with structuredContent taken from its known text', () => {
    const value = structuredClone(page);
    const response: JsonRpcResponse = {
      jsonrpc: '2.0',
      id: 7,
      result: { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: serializedAs(value, JSON.stringify(value)) },
    };
    expect(answerText(response)).toBe(JSON.stringify(response));
    expect(answerText([response, { jsonrpc: '2.0', id: 'x', result: {} }])).toBe(JSON.stringify([response, { jsonrpc: '2.0', id: 'x', result: {} }]));
  });

  it('uses the known text rather than serializing the value again', () => {
    const value = { n: 1 };
    const response: JsonRpcResponse = { jsonrpc: '2.0', id: 1, result: { structuredContent: serializedAs(value, '{"n":2}') } };
    expect(JSON.parse(answerText(response))).toEqual({ jsonrpc: '2.0', id: 1, result: { structuredContent: { n: 2 } } });
  });

  it('serializes errors and results without a known text as JSON.stringify does', () => {
    const error: JsonRpcResponse = { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } };
    const plain: JsonRpcResponse = { jsonrpc: '2.0', id: 2, result: { content: [], structuredContent: { fresh: true } } };
    expect(answerText(error)).toBe(JSON.stringify(error));
    expect(answerText(plain)).toBe(JSON.stringify(plain));
  });
});
