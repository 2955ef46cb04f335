import { ToolRegistry } from '../../src/mcp/tool-registry';
import { rpc, toolError, toolOk } from '../support/mcp';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * Which API key permission each tool needs (docs/mcp.md, "Key permissions"): webhook and delivery
 * tools `webhooks` (reads too), other read tools `read`, every other write `send`. Every tool the
 * service registers must be here, so a new tool is classified on purpose, not by accident. The
 * look-ups of issue 16 are listed before they land: their kind alone must put them right.
 */
const PERMISSION_OF: Record<string, 'read' | 'send' | 'webhooks'> = {
  approve_agent_turn: 'send',
  cancel_scheduled_message: 'send',
  create_agent_turn: 'send',
  create_contact: 'send',
  delete_webhook: 'webhooks',
  get_agent_turn: 'read',
  get_contact: 'read',
  get_message: 'read',
  get_thread: 'read',
  get_webhook: 'webhooks',
  get_webhook_delivery: 'webhooks',
  label_thread: 'send',
  list_agent_turns: 'read',
  list_agents: 'read',
  list_contacts: 'read',
  list_email_accounts: 'read',
  list_labels: 'read',
  list_phone_numbers: 'read',
  list_threads: 'read',
  list_webhook_deliveries: 'webhooks',
  list_webhooks: 'webhooks',
  merge_contacts: 'send',
  read_attachment: 'read',
  recover_webhook_deliveries: 'webhooks',
  register_webhook: 'webhooks',
  reject_agent_turn: 'send',
  reply_to_thread: 'send',
  resend_webhook_delivery: 'webhooks',
  rotate_webhook_secret: 'webhooks',
  search_messages: 'read',
  send_email: 'send',
  send_sms: 'send',
  update_contact: 'send',
  update_webhook: 'webhooks',
};

type Tool = { name: string; annotations: { readOnlyHint: boolean } };

describe('MCP: API key permissions (read, send, webhooks)', () => {
  let m: MessagingTestApp;
  let registered: string[];
  beforeAll(async () => {
    m = await createMessagingTestApp();
    registered = m.app
      .get(ToolRegistry)
      .listFor({ role: 'OWNER', permissions: ['read', 'send', 'webhooks'] })
      .map((tool) => tool.name);
  });
  afterAll(async () => {
    await m.close();
  });

  async function keyWith(s: Session, permissions: string[]): Promise<string> {
    const res = await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: permissions.join('+'), permissions });
    expect(res.status).toBe(201);
    return res.body.key;
  }

  async function listed(key: string): Promise<Tool[]> {
    const res = await rpc(m, key, 'tools/list');
    expect(res.status).toBe(200);
    return res.body.result.tools;
  }

  const needing = (...permissions: string[]) => registered.filter((name) => permissions.includes(PERMISSION_OF[name]));

  it('every tool needs the permission the table gives it, derived from its declaration', () => {
    const registry = m.app.get(ToolRegistry);
    expect(registered.length).toBeGreaterThan(20);
    for (const name of registered) {
      expect({ name, permission: registry.get(name)!.permission }).toEqual({ name, permission: PERMISSION_OF[name] });
    }
  });

  it('a key created without permissions has all three and lists every tool', async () => {
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    expect((await listed(s.apiKey)).map((tool) => tool.name)).toEqual([...registered].sort());
  });

  it('a read-only key lists only the read tools, sends nothing, registers nothing', async () => {
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const readOnly = await keyWith(s, ['read']);
    const tools = await listed(readOnly);
    expect(tools.map((tool) => tool.name)).toEqual(needing('read').sort());
    expect(tools.every((tool) => tool.annotations.readOnlyHint)).toBe(true);
    expect(tools.some((tool) => /webhook/.test(tool.name))).toBe(false);

    const from = partnerPhone();
    const { threadId } = await inboundSms(m, s.lines[0].address, from, 'please call me');
    expect((await toolOk(m, readOnly, 'get_thread', { threadId })).thread.id).toBe(threadId);

    expect(await toolError(m, readOnly, 'send_sms', { threadId, smsBody: 'from the read-only key' })).toBe(
      'send_sms needs the send or draft permission, which this API key does not have (it has read)',
    );
    // Refused before the arguments are looked at: bad ones get the same answer.
    expect(await toolError(m, readOnly, 'send_sms', { nonsense: true })).toMatch(/^send_sms needs the send or draft permission/);
    expect(await toolError(m, readOnly, 'register_webhook', { url: 'https://hooks.example.com/in', events: ['message.received'] })).toBe(
      'register_webhook needs the webhooks permission, which this API key does not have (it has read)',
    );
    expect(await toolError(m, readOnly, 'list_webhooks', {})).toMatch(/^list_webhooks needs the webhooks permission/);

    // A send with the full key afterwards reaches the carrier; the refused one never does.
    await toolOk(m, s.apiKey, 'send_sms', { threadId, smsBody: 'from the full key' });
    await waitUntil(() => m.carried.some((x) => x.body === 'from the full key' && x.to === from), 'the full key’s SMS at the carrier');
    expect(m.carried.filter((x) => x.body === 'from the read-only key')).toEqual([]);
    const [{ count }] = await m.db.query(`SELECT count(*)::int AS count FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND'`, [threadId]);
    expect(count).toBe(1);
    const endpoints = await m.db.query('SELECT id FROM webhook_endpoints WHERE user_id = $1', [s.userId]);
    expect(endpoints).toEqual([]);
  });

  it('a webhooks-only key lists only the webhook and delivery tools, and uses them', async () => {
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const hooks = await keyWith(s, ['webhooks']);
    expect((await listed(hooks)).map((tool) => tool.name)).toEqual(needing('webhooks').sort());
    const { endpoint } = await toolOk(m, hooks, 'register_webhook', { url: `${m.receiverUrl}/perm`, events: ['message.received'] });
    expect((await toolOk(m, hooks, 'list_webhooks', {})).endpoints.map((e: { id: string }) => e.id)).toEqual([endpoint.id]);
    expect(await toolError(m, hooks, 'list_threads', {})).toBe('list_threads needs the read permission, which this API key does not have (it has webhooks)');
    expect(await toolError(m, hooks, 'create_contact', { displayName: 'X' })).toMatch(/^create_contact needs the send permission/);
    await toolOk(m, hooks, 'delete_webhook', { endpointId: endpoint.id });
  });

  it('a send-only key may send but not read or manage webhooks', async () => {
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const send = await keyWith(s, ['send']);
    expect((await listed(send)).map((tool) => tool.name)).toEqual(needing('send').sort());
    const from = partnerPhone();
    const { threadId } = await inboundSms(m, s.lines[0].address, from);
    await toolOk(m, send, 'send_sms', { threadId, smsBody: 'sent by the send-only key' });
    await waitUntil(() => m.carried.some((x) => x.body === 'sent by the send-only key' && x.to === from), 'the SMS at the carrier');
    expect(await toolError(m, send, 'get_thread', { threadId })).toMatch(/^get_thread needs the read permission.*\(it has send\)$/);
  });

  it('protocol methods work whatever the permissions: initialize, ping, tools/list', async () => {
    const s = await createSession(m.admin, { lines: [] });
    for (const key of [await keyWith(s, ['webhooks']), await keyWith(s, ['send'])]) {
      const init = await rpc(m, key, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } });
      expect(init.body.result).toMatchObject({ protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: false } } });
      expect((await rpc(m, key, 'ping')).body.result).toEqual({});
      expect((await listed(key)).length).toBeGreaterThan(0);
    }
  });

  it('a PATCH of the permissions takes effect on the next call', async () => {
    const s = await createSession(m.admin, { lines: ['PHONE_NUMBER'] });
    const from = partnerPhone();
    const { threadId } = await inboundSms(m, s.lines[0].address, from);
    expect((await m.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { permissions: ['read'] })).status).toBe(200);
    expect(await toolError(m, s.apiKey, 'send_sms', { threadId, smsBody: 'not yet' })).toMatch(/^send_sms needs the send or draft permission/);
    expect((await listed(s.apiKey)).some((tool) => tool.name === 'send_sms')).toBe(false);

    expect((await m.admin.patch(`/admin/api-keys/${s.apiKeyId}`, { permissions: ['read', 'send'] })).status).toBe(200);
    expect((await listed(s.apiKey)).some((tool) => tool.name === 'send_sms')).toBe(true);
    await toolOk(m, s.apiKey, 'send_sms', { threadId, smsBody: 'now allowed' });
    await waitUntil(() => m.carried.some((x) => x.body === 'now allowed' && x.to === from), 'the SMS at the carrier');
    expect(m.carried.some((x) => x.body === 'not yet')).toBe(false);
  });

  it('an unknown tool is still -32602, whatever the permissions', async () => {
    const s = await createSession(m.admin, { lines: [] });
    const res = await rpc(m, await keyWith(s, ['webhooks']), 'tools/call', { name: 'no_such_tool', arguments: {} });
    expect(res.body.error).toEqual({ code: -32602, message: 'Unknown tool: no_such_tool' });
  });

  it('in a batch, each refused call is a tool error and the others run', async () => {
    const s = await createSession(m.admin, { lines: [] });
    const readOnly = await keyWith(s, ['read']);
    const res = await m
      .http()
      .post('/api/mcp')
      .set('Authorization', `Bearer ${readOnly}`)
      .set('Content-Type', 'application/json')
      .send([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_phone_numbers', arguments: {} } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete_webhook', arguments: { endpointId: s.userId } } },
      ]);
    expect(res.status).toBe(200);
    expect(res.body[0].result.isError).toBeUndefined();
    expect(res.body[1].result).toEqual({
      content: [{ type: 'text', text: 'delete_webhook needs the webhooks permission, which this API key does not have (it has read)' }],
      isError: true,
    });
  });
});
