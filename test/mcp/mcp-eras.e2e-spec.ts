import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connectApp } from '../support/oauth';
import { createMessagingTestApp, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';
import { signInBrowser } from '../support/web';

/** What every client of this file can do, whatever its SDK line and era. */
interface AnyClient {
  era: 'modern' | 'legacy';
  toolNames(): Promise<string[]>;
  call(name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; structuredContent?: Record<string, any>; content: Array<{ text?: string }> }>;
  close(): Promise<void>;
}

type Connect = (token: string) => Promise<AnyClient>;

/**
 * One running service, both eras (docs/mcp.md, "Protocol revisions"), each through an official
 * client as a user would run it: the v2 client pinned to 2026-07-28 and in `auto` mode (both land
 * on the modern era: no handshake, per-request _meta, the headers checked), and the v1 client
 * (the 2025-11-25 handshake). Each lists the tools, reads and sends; each is refused alike by
 * permission and by line scope; an API key and an OAuth access token both work in both eras.
 */
describe('MCP 2026-07-28 and 2025-11-25 on one URL, through the official clients of both SDK lines', () => {
  let m: MessagingTestApp;
  let s: Session;
  let url: URL;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
    url = new URL(`${m.baseUrl}/api/mcp`);
  });
  afterAll(async () => {
    await m?.close();
  });

  const modern =
    (mode: 'auto' | { pin: string }): Connect =>
    async (token) => {
      const client = new ModernClient({ name: 'e2e-v2', version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(new ModernTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
      return {
        era: client.getProtocolEra()!,
        toolNames: async () => (await client.listTools()).tools.map((tool) => tool.name),
        call: async (name, args) => (await client.callTool({ name, arguments: args })) as never,
        close: () => client.close(),
      };
    };
  const legacy: Connect = async (token) => {
    const client = new LegacyClient({ name: 'e2e-v1', version: '1.0.0' });
    await client.connect(new LegacyTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return {
      era: 'legacy',
      toolNames: async () => (await client.listTools()).tools.map((tool) => tool.name),
      call: async (name, args) => (await client.callTool({ name, arguments: args })) as never,
      close: () => client.close(),
    };
  };

  const CLIENTS: Array<[string, Connect, 'modern' | 'legacy']> = [
    ['v2 client pinned to 2026-07-28', modern({ pin: '2026-07-28' }), 'modern'],
    ['v2 client in auto mode', modern('auto'), 'modern'],
    ['v1 client (2025-11-25 handshake)', legacy, 'legacy'],
  ];

  async function newKey(body: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
    const res = await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'eras', channelAccess: { mode: 'ALL' }, ...body });
    expect(res.status).toBe(201);
    return res.body;
  }
  const keyOf = async (body: Record<string, unknown>) => (await newKey(body)).key;

  describe.each(CLIENTS)('%s', (_name, connect, era) => {
    it('lands on its era, lists the tools, reads and sends with an API key', async () => {
      const client = await connect(s.apiKey);
      try {
        expect(client.era).toBe(era);
        const names = await client.toolNames();
        expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b)));
        expect(names).toEqual(expect.arrayContaining(['list_phone_numbers', 'send_sms', 'list_webhooks']));

        const read = await client.call('list_phone_numbers', {});
        expect(read.isError).toBeFalsy();
        expect(read.structuredContent!.phoneNumbers.map((line: { id: string }) => line.id).sort()).toEqual(s.lines.map((line) => line.id).sort());

        const to = partnerPhone();
        const sent = await client.call('send_sms', { to, from: s.lines[0].address, body: `hello from the ${era} era` });
        expect(sent.isError).toBeFalsy();
        expect(sent.structuredContent!.message).toMatchObject({ direction: 'OUTBOUND', toIdentity: { value: to } });
        await waitUntil(() => m.carried.some((sms) => sms.to === to), `the SMS to ${to} to reach the carrier`);
        expect(m.carried.filter((sms) => sms.to === to)).toEqual([{ from: s.lines[0].address, to, body: `hello from the ${era} era` }]);
      } finally {
        await client.close();
      }
    });

    it('is refused by permission and by line scope, as in the other era', async () => {
      const reader = await connect(await keyOf({ permissions: ['read'] }));
      const scoped = await connect(await keyOf({ channelAccess: { mode: 'LINES', lines: [s.lines[0].address] } }));
      try {
        expect(await reader.toolNames()).not.toContain('send_sms');
        const refused = await reader.call('send_sms', { to: partnerPhone(), body: 'not allowed' });
        expect(refused.isError).toBe(true);
        expect(refused.content).toEqual([
          { type: 'text', text: 'send_sms needs the send or draft permission, which this API key does not have (it has read)' },
        ]);

        const phones = await scoped.call('list_phone_numbers', {});
        expect(phones.structuredContent!.phoneNumbers.map((line: { id: string }) => line.id)).toEqual([s.lines[0].id]);
        const outOfScope = await scoped.call('send_sms', { to: partnerPhone(), from: s.lines[1].address, body: 'other line' });
        expect(outOfScope.isError).toBe(true);
        expect(outOfScope.content[0].text).toContain(s.lines[1].address);
      } finally {
        await reader.close();
        await scoped.close();
      }
    });
  });

  describe('an OAuth access token', () => {
    let token: string;
    beforeAll(async () => {
      const browser = await signInBrowser(m, s.userId);
      token = (await connectApp(m, browser, { clientName: 'Eras Agent' })).accessToken; // Read only, all channels
    });

    it.each(CLIENTS)('works through the %s, and a send is refused as the app’s', async (_name, connect, era) => {
      const client = await connect(token);
      try {
        expect(client.era).toBe(era);
        expect(await client.toolNames()).not.toContain('send_sms');
        expect((await client.call('list_phone_numbers', {})).structuredContent!.phoneNumbers).toHaveLength(2);
        const refused = await client.call('send_sms', { to: partnerPhone(), body: 'x' });
        expect(refused.isError).toBe(true);
        expect(refused.content[0].text).toBe('send_sms needs the send or draft permission, which this app was not granted (it has read)');
      } finally {
        await client.close();
      }
    });

    it('an app limited to one line hears of its limit as the app’s, not a key’s', async () => {
      const browser = await signInBrowser(m, s.userId);
      const choice = { access: 'LINES', [`line-${s.lines[0].id}`]: 'on', 'permissions-shown': 'on', 'permission-read': 'on', 'permission-webhooks': 'on' };
      const app = await connectApp(m, browser, { clientName: 'Line Agent', choice });
      const client = await modern({ pin: '2026-07-28' })(app.accessToken);
      try {
        const all = await client.call('register_webhook', { url: 'https://hooks.example.com/app', events: ['message.received'] });
        expect(all.content[0].text).toBe(
          'channelScope: this app is limited to specific lines, so allChannels must be false with channels chosen from those lines',
        );
        const other = await client.call('register_webhook', {
          url: 'https://hooks.example.com/app',
          events: ['message.received'],
          channelScope: { allChannels: false, channels: [{ channelType: 'PHONE_NUMBER', channelId: s.lines[1].id }] },
        });
        expect(other.content[0].text).toBe(
          `channelScope.channels[0].channelId: ${s.lines[1].id} is not a line this app may use (see list_email_accounts, list_phone_numbers)`,
        );
        const from = await client.call('list_phone_numbers', {});
        expect(from.structuredContent!.phoneNumbers).toHaveLength(1);
      } finally {
        await client.close();
      }
    });
  });

  describe('subscriptions/listen through the v2 client', () => {
    /** A v2 client pinned to 2026-07-28 that counts the list_changed notifications it hears. */
    async function listener(token: string) {
      const client = new ModernClient({ name: 'e2e-listen', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await client.connect(new ModernTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
      const heard: string[] = [];
      client.setNotificationHandler('notifications/tools/list_changed', () => void heard.push('tools/list_changed'));
      const subscription = await client.listen({ toolsListChanged: true, resourcesListChanged: true });
      return { client, heard, subscription };
    }

    it('is acknowledged with what it honours; a permission change is told to that caller only; revoking the key ends its subscription', async () => {
      const [a, b] = [await newKey(), await newKey()];
      const la = await listener(a.key);
      const lb = await listener(b.key);
      try {
        expect(la.subscription.honoredFilter).toEqual({ toolsListChanged: true });

        expect((await m.admin.patch(`/admin/api-keys/${a.id}`, { permissions: ['read'] })).status).toBe(200);
        await waitUntil(() => la.heard.length === 1, "A's list_changed");
        expect((await la.client.listTools()).tools.map((tool) => tool.name)).not.toContain('send_sms');

        // B's own change is told to B; by then A's stream has heard nothing more, and B nothing of A's change.
        expect((await m.admin.patch(`/admin/api-keys/${b.id}`, { channelAccess: { mode: 'LINES', lines: [s.lines[1].address] } })).status).toBe(200);
        await waitUntil(() => lb.heard.length === 1, "B's list_changed");
        expect(la.heard).toHaveLength(1);

        expect((await m.admin.delete(`/admin/api-keys/${a.id}`)).status).toBe(204);
        expect(await la.subscription.closed).toBe('remote');
        expect(lb.heard).toHaveLength(1);
      } finally {
        await Promise.all([la.client.close(), lb.client.close()]);
      }
    });
  });
});
