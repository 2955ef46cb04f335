import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createTestApp, TestApp } from '../support/app';
import { createSession } from '../support/session';

describe('mcp smoke', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { WEBHOOK_ALLOWED_CIDRS: '' } });
    await t.app.listen(0, '127.0.0.1');
    base = await t.app.getUrl();
  });
  afterAll(async () => {
    await t.close();
  });

  it('sdk connects, lists and calls', async () => {
    const s = await createSession(t.admin);
    const client = new Client({ name: 'test', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${s.apiKey}` } },
    });
    await client.connect(transport);
    const tools = await client.listTools();
    expect(tools.tools.map((x) => x.name)).toContain('register_webhook');
    const listed = await client.callTool({ name: 'list_webhooks', arguments: {} });
    expect(listed.structuredContent).toEqual({ endpoints: [] });
    const bad = await client.callTool({ name: 'register_webhook', arguments: { url: 'https://127.0.0.1/x', events: ['message.received'] } });
    expect(bad.isError).toBe(true);
    expect(bad.content).toEqual([{ type: 'text', text: expect.stringContaining('127.0.0.1') }]);
    const lines = await client.callTool({ name: 'list_phone_numbers', arguments: {} });
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    expect(lines.structuredContent).toEqual({ phoneNumbers: [{ id: phone.id, channelType: 'PHONE_NUMBER', phoneNumber: phone.address }] });
    await client.close();
  });
});
