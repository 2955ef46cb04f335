import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DataSource } from 'typeorm';
import { createMessagingTestApp, Hook, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { toolOk, UUID } from '../support/mcp';
import { connectApp } from '../support/oauth';
import { createSession, Session } from '../support/session';
import { signInBrowser } from '../support/web';
import { waitUntil } from '../support/wait';

/** A client of either SDK line, as a user runs it. */
interface AnyClient {
  tools(): Promise<Array<{ name: string; description?: string; annotations?: Record<string, unknown> }>>;
  call(name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; structuredContent?: Record<string, any>; content: Array<{ text?: string }> }>;
  close(): Promise<void>;
}

/**
 * Draft-only credentials (issue 45; docs/mcp.md, "Draft-only credentials"): a key with `draft`
 * in place of `send` calls send_sms, send_email and reply_to_thread in both protocol eras, through
 * the official clients of both SDK lines (which check the answer against the tool's outputSchema);
 * nothing is sent, each call answers a turn AWAITING_APPROVAL and raises
 * agent_turn.awaiting_approval; the key cannot approve; a person's approval sends exactly the
 * proposal once; a rejection's reason is seen by get_agent_turn and the webhook.
 */
describe('draft-only credentials', () => {
  let m: MessagingTestApp;
  let s: Session;
  let db: DataSource;
  let hook: Hook;
  let draftKey: { id: string; key: string };
  let url: URL;
  const phone = () => s.lines.find((l) => l.type === 'PHONE_NUMBER')!;

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    db = m.app.get(DataSource);
    url = new URL(`${m.baseUrl}/api/mcp`);
    hook = await Hook.register(m, s.apiKey, { events: ['agent_turn.awaiting_approval', 'agent_turn.sent', 'agent_turn.rejected'] });
    const res = await m.admin.post(`/admin/users/${s.userId}/api-keys`, {
      name: 'drafting agent',
      channelAccess: { mode: 'ALL' },
      permissions: ['read', 'draft'],
    });
    expect(res.status).toBe(201);
    draftKey = res.body;
  });
  afterAll(async () => {
    await m?.close();
  });

  const legacy = async (token: string): Promise<AnyClient> => {
    const client = new LegacyClient({ name: 'e2e-v1', version: '1.0.0' });
    await client.connect(new LegacyTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return {
      tools: async () => (await client.listTools()).tools,
      call: async (name, args) => (await client.callTool({ name, arguments: args })) as never,
      close: () => client.close(),
    };
  };
  const modern = async (token: string): Promise<AnyClient> => {
    const client = new ModernClient({ name: 'e2e-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new ModernTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return {
      tools: async () => (await client.listTools()).tools,
      call: async (name, args) => (await client.callTool({ name, arguments: args })) as never,
      close: () => client.close(),
    };
  };

  async function messagesOn(threadId: string): Promise<number> {
    const [row] = await db.query(`SELECT count(*)::int AS n FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND'`, [threadId]);
    return row.n;
  }

  it('refuses send with draft on the admin route, naming permissions', async () => {
    const res = await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'both', channelAccess: { mode: 'ALL' }, permissions: ['send', 'draft'] });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('permissions must not hold both send and draft');
  });

  describe.each([
    ['v1 client (2025-11-25 handshake)', legacy],
    ['v2 client pinned to 2026-07-28', modern],
  ])('%s', (_name, connect) => {
    it('lists the send tools as drafts; send_sms, reply_to_thread and send_email send nothing and answer a turn awaiting approval; the key cannot approve', async () => {
      const client = await connect(draftKey.key);
      try {
        const tools = await client.tools();
        const names = tools.map((tool) => tool.name);
        expect(names).toEqual(expect.arrayContaining(['send_sms', 'send_email', 'reply_to_thread', 'get_agent_turn']));
        expect(names).not.toContain('approve_agent_turn');
        expect(names).not.toContain('create_agent_turn');
        const sendSms = tools.find((tool) => tool.name === 'send_sms')!;
        expect(sendSms.description).toContain('This credential is draft-only: the call sends nothing.');
        expect(sendSms.annotations).toMatchObject({ openWorldHint: false, destructiveHint: false });

        const to = partnerPhone();
        await inboundSms(m, phone().address, to, 'Book me a table?');
        const drafted = await client.call('send_sms', { to, from: phone().address, body: 'Your table is booked' });
        expect(drafted.isError).toBeFalsy();
        const turn = drafted.structuredContent!.turn;
        expect(drafted.structuredContent!.message).toBeUndefined();
        expect(turn).toMatchObject({
          id: expect.stringMatching(UUID),
          status: 'AWAITING_APPROVAL',
          messageId: null,
          body: 'Your table is booked',
          agent: { id: draftKey.id, name: 'drafting agent', mode: 'DRAFT' },
          credential: { id: draftKey.id, name: 'drafting agent', kind: 'API_KEY' },
          rejectionReason: null,
        });
        expect(await messagesOn(turn.threadId)).toBe(0);
        const event = await waitUntil(
          () => hook.events('agent_turn.awaiting_approval').find((e) => e.data.agentTurn.id === turn.id),
          'agent_turn.awaiting_approval of the draft',
        );
        expect(event.data.agentTurn).toMatchObject({ status: 'AWAITING_APPROVAL', credential: { id: draftKey.id, kind: 'API_KEY' } });

        const inbound = await inboundSms(m, phone().address, partnerPhone(), 'Is Friday free?');
        const replied = await client.call('reply_to_thread', { threadId: inbound.threadId, body: 'Friday is free' });
        expect(replied.isError).toBeFalsy();
        expect(replied.structuredContent!.turn).toMatchObject({ status: 'AWAITING_APPROVAL', threadId: inbound.threadId, body: 'Friday is free' });
        expect(await messagesOn(inbound.threadId)).toBe(0);

        // A new conversation is refused (a draft goes on a thread that has a message), and nothing is left behind.
        const email = s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
        const address = `someone-${Date.now()}@example.net`;
        const mailed = await client.call('send_email', { to: address, subject: 'Hello', body: 'A proposal', fromAccountId: email.id });
        expect(mailed.isError).toBe(true);
        expect(mailed.content[0].text).toContain('to: this credential is draft-only, and a draft goes on a conversation that exists');
        const newNumber = partnerPhone();
        const texted = await client.call('send_sms', { to: newNumber, from: phone().address, body: 'Hi' });
        expect(texted.isError).toBe(true);
        const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM identities WHERE value = ANY ($1)`, [[address, newNumber]]);
        expect(n).toBe(0);

        const approve = await client.call('approve_agent_turn', { turnId: turn.id });
        expect(approve.isError).toBe(true);
        expect(approve.content[0].text).toBe('approve_agent_turn needs the send permission, which this API key does not have (it has read, draft)');
        expect(m.carried.filter((sms) => sms.to === to)).toEqual([]);
      } finally {
        await client.close();
      }
    });
  });

  it("a person's approval (REST) sends exactly the proposal once; the draft key cannot approve by REST either", async () => {
    const to = partnerPhone();
    await inboundSms(m, phone().address, to, 'Table for eight?');
    const { turn } = await toolOk(m, draftKey.key, 'send_sms', { to, from: phone().address, body: 'See you at eight' });
    const refused = await m.http().post(`/api/agent-turns/${turn.id}/approve`).set('Authorization', `Bearer ${draftKey.key}`).send({});
    expect(refused.status).toBe(403);

    const approved = await m.http().post(`/api/agent-turns/${turn.id}/approve`).set('Authorization', `Bearer ${s.apiKey}`).send({});
    expect(approved.status).toBe(200);
    expect(approved.body.turn).toMatchObject({ id: turn.id, status: 'SENT', messageId: expect.stringMatching(UUID), decidedByUserId: s.userId });
    await waitUntil(() => m.carried.some((sms) => sms.to === to), `the approved SMS to reach the carrier`);
    const again = await m.http().post(`/api/agent-turns/${turn.id}/approve`).set('Authorization', `Bearer ${s.apiKey}`).send({});
    expect(again.status).toBe(409);
    await waitUntil(() => hook.events('agent_turn.sent').some((e) => e.data.agentTurn.id === turn.id), 'agent_turn.sent of the approved draft');
    expect(hook.events('agent_turn.sent').filter((e) => e.data.agentTurn.id === turn.id)).toHaveLength(1);
    expect(m.carried.filter((sms) => sms.to === to)).toEqual([{ from: phone().address, to, body: 'See you at eight' }]);
    expect(await messagesOn(turn.threadId)).toBe(1);
  });

  it('a rejection keeps its reason: get_agent_turn and the webhook see it; a reason too long is refused naming reason', async () => {
    const { threadId } = await inboundSms(m, phone().address, partnerPhone(), 'Any deals?');
    const { turn } = await toolOk(m, draftKey.key, 'reply_to_thread', { threadId, body: 'Half price today' });
    const tooLong = await m
      .http()
      .post(`/api/agent-turns/${turn.id}/reject`)
      .set('Authorization', `Bearer ${s.apiKey}`)
      .send({ reason: 'x'.repeat(1001) });
    expect(tooLong.status).toBe(400);
    expect(JSON.stringify(tooLong.body)).toContain('reason must be at most 1000 characters');

    const rejected = await toolOk(m, s.apiKey, 'reject_agent_turn', { turnId: turn.id, reason: 'We do not run discounts by text' });
    expect(rejected.turn).toMatchObject({ status: 'REJECTED', rejectionReason: 'We do not run discounts by text' });
    const seen = await toolOk(m, draftKey.key, 'get_agent_turn', { turnId: turn.id });
    expect(seen.turn).toMatchObject({ status: 'REJECTED', rejectionReason: 'We do not run discounts by text', decidedByUserId: s.userId });
    const event = await waitUntil(() => hook.events('agent_turn.rejected').find((e) => e.data.agentTurn.id === turn.id), 'agent_turn.rejected of the draft');
    expect(event.data.agentTurn).toMatchObject({ status: 'REJECTED', rejectionReason: 'We do not run discounts by text', credential: { id: draftKey.id } });
    expect(await messagesOn(turn.threadId)).toBe(0);
  });

  it('an app (OAuth grant) given draft in place of send: its reply_to_thread is held as a draft naming the app', async () => {
    const browser = await signInBrowser(m, s.userId);
    const app = await connectApp(m, browser, {
      clientName: 'Drafting App',
      scope: 'read send draft',
      choice: { access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on', 'permission-draft': 'on' },
    });
    const { threadId } = await inboundSms(m, phone().address, partnerPhone(), 'Open on Sunday?');
    const { turn } = await toolOk(m, app.accessToken, 'reply_to_thread', { threadId, body: 'Yes, from noon' });
    expect(turn).toMatchObject({ status: 'AWAITING_APPROVAL', credential: { name: 'Drafting App', kind: 'OAUTH_GRANT' } });
    expect(await messagesOn(threadId)).toBe(0);
    const [grant] = await db.query(`SELECT permissions, requested_scopes FROM oauth_grants WHERE id = $1`, [turn.credential.id]);
    expect(grant).toEqual({ permissions: ['read', 'draft'], requested_scopes: ['read', 'send', 'draft'] });
  });
});
