import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createServer, IncomingMessage } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { verifyWebhook } from '../../src/sdk';
import { createTestApp, TestApp } from '../support/app';
import { callTool, ISO_MS, toolError, toolOk, UUID } from '../support/mcp';
import { TestReceiver } from '../support/receiver';
import { createSession, Session, uniquePhone } from '../support/session';
import { CapturingMailServer, startCapturingSmtp } from '../support/smtp';
import { INGEST_TOKEN } from '../support/test-env';
import { waitUntil } from '../support/wait';

/** An event as a subscriber sees it, after verifying its signature. */
interface Received {
  endpoint: 'concise' | 'verbose';
  type: string;
  data: any;
}

interface CarrierCall {
  from: string;
  to: string;
  body: string;
}

const AGENT_EVENTS = ['agent_turn.awaiting_approval', 'agent_turn.sent', 'message.sent'];

describe('agents: turns, approval and agent_turn.* events', () => {
  let t: TestApp;
  let db: DataSource;
  const receiver = new TestReceiver();
  const carrierCalls: CarrierCall[] = [];
  const carrier = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      carrierCalls.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as CarrierCall);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ providerMessageId: `prov-${randomUUID()}` }));
    });
  });
  /** The local mail server: every raw email it accepted. */
  let smtp: CapturingMailServer;
  const secrets: Record<string, string> = {};

  let s: Session;
  let phone: Session['lines'][number];
  let email: Session['lines'][number];
  let threadId: string;
  const partner = uniquePhone();
  const agents: Record<'DRAFT' | 'AUTO' | 'SUPERVISED', { id: string; name: string }> = {} as never;

  beforeAll(async () => {
    await new Promise<void>((r) => carrier.listen(0, '127.0.0.1', r));
    smtp = await startCapturingSmtp();
    const hooks = await receiver.start();
    t = await createTestApp({
      env: {
        SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
        SMS_CARRIER_URL: `http://127.0.0.1:${(carrier.address() as AddressInfo).port}/sms`,
        APP_ENV: 'development',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
      },
    });
    await t.app.listen(0, '127.0.0.1');
    db = t.app.get(DataSource);

    s = await createSession(t.admin);
    phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    email = s.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
    for (const mode of ['concise', 'verbose'] as const) {
      const { secret } = await toolOk(t, s.apiKey, 'register_webhook', { url: `${hooks}/${mode}`, events: AGENT_EVENTS, mode });
      secrets[mode] = secret;
    }
    for (const mode of ['DRAFT', 'AUTO', 'SUPERVISED'] as const) {
      const res = await t.admin.post(`/admin/lines/${phone.id}/agents`, { name: `${mode} bot`, mode });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ id: expect.stringMatching(UUID), lineId: phone.id, name: `${mode} bot`, mode, createdAt: expect.stringMatching(ISO_MS) });
      agents[mode] = res.body;
    }
    const inbound = await t
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to: phone.address, from: partner, body: 'Can I book a table for two?', providerMessageId: `p-${randomUUID()}` });
    expect(inbound.status).toBe(201);
    threadId = inbound.body.threadId;
  });

  afterAll(async () => {
    await t?.close();
    await receiver.stop();
    carrier.close();
    await smtp.close();
  });

  function events(): Received[] {
    return receiver.requests.map((r) => {
      const endpoint = r.url.endsWith('/verbose') ? 'verbose' : 'concise';
      const event = verifyWebhook<{ type: string; data: any }>(r.body, r.headers['x-service-signature'] as string, [secrets[endpoint]]);
      return { endpoint, type: event.type, data: event.data };
    });
  }

  /** Waits until the concise and the verbose endpoint each got an event matching `match`. */
  async function both(type: string, match: (data: any) => boolean, timeoutMs = 20_000): Promise<{ concise: any; verbose: any }> {
    return waitUntil(
      () => {
        const found = events().filter((e) => e.type === type && match(e.data));
        const concise = found.find((e) => e.endpoint === 'concise');
        const verbose = found.find((e) => e.endpoint === 'verbose');
        return concise && verbose && { concise: concise.data, verbose: verbose.data };
      },
      () => `${type} on both endpoints; got ${JSON.stringify(events().map((e) => [e.endpoint, e.type]))}`,
      { timeoutMs },
    );
  }

  async function waitForCarrier(body: string, timeoutMs = 20_000): Promise<CarrierCall> {
    return waitUntil(() => carrierCalls.find((c) => c.body === body), `the carrier to receive "${body}"`, { timeoutMs });
  }

  function postTurn(key: string, agentId: string, body: object) {
    return t.http().post(`/api/agents/${agentId}/turns`).set('Authorization', `Bearer ${key}`).send(body);
  }

  function decide(key: string, turnId: string, decision: 'approve' | 'reject') {
    return t.http().post(`/api/agent-turns/${turnId}/${decision}`).set('Authorization', `Bearer ${key}`).send();
  }

  function expectAgentTurnShape(data: any, mode: 'concise' | 'verbose') {
    expect(Object.keys(data).sort()).toEqual(['agentTurn', 'labels', 'person', 'thread']);
    expect(Object.keys(data.agentTurn).sort()).toEqual(['agent', 'createdAt', 'id', 'messageId', 'status', 'threadId']);
    expect(data.thread).toMatchObject({ id: threadId, subject: null, lastMessageAt: expect.stringMatching(ISO_MS), messageCount: expect.any(Number) });
    expect(data.person).toMatchObject({ id: null, displayName: partner });
    expect(data.labels).toEqual([]);
    if (mode === 'concise') {
      expect(data.thread).not.toHaveProperty('recentMessages');
      expect(data.person).not.toHaveProperty('identities');
    } else {
      expect(data.thread.recentMessages.length).toBeGreaterThanOrEqual(1);
      expect(data.thread.recentMessages[0]).toMatchObject({ threadId, direction: 'INBOUND', body: 'Can I book a table for two?' });
      expect(data.person.identities).toEqual([{ id: expect.stringMatching(UUID), kind: 'PHONE', value: partner, displayName: null }]);
      for (const absent of ['message', 'attachments', 'emailHeaders', 'labelConfidence']) expect(data).not.toHaveProperty(absent);
    }
  }

  it('DRAFT: the turn waits (awaiting_approval, nothing sent); approve_agent_turn sends it (agent_turn.sent, then message.sent)', async () => {
    const draft = 'Yes! 7pm works. See you then.';
    const res = await postTurn(s.apiKey, agents.DRAFT.id, { threadId, body: draft });
    expect(res.status).toBe(201);
    const turn = res.body.turn;
    expect(turn).toEqual({
      id: expect.stringMatching(UUID),
      status: 'AWAITING_APPROVAL',
      threadId,
      messageId: null,
      createdAt: expect.stringMatching(ISO_MS),
      agent: { id: agents.DRAFT.id, name: 'DRAFT bot', mode: 'DRAFT' },
      body: draft,
      decidedByUserId: null,
      decidedAt: null,
      rejectionReason: null,
    });

    const waiting = await both('agent_turn.awaiting_approval', (d) => d.agentTurn.id === turn.id);
    for (const mode of ['concise', 'verbose'] as const) {
      expectAgentTurnShape(waiting[mode], mode);
      expect(waiting[mode].agentTurn).toEqual({
        id: turn.id,
        status: 'AWAITING_APPROVAL',
        threadId,
        messageId: null,
        createdAt: turn.createdAt,
        agent: { id: agents.DRAFT.id, name: 'DRAFT bot', mode: 'DRAFT' },
      });
    }
    expect(waiting.verbose.thread.recentMessages.map((m: any) => m.body)).toEqual(['Can I book a table for two?']);
    expect(waiting.concise.thread.messageCount).toBe(1);
    // Nothing was sent: no message row for the draft.
    expect(await db.query(`SELECT id FROM messages WHERE thread_id = $1 AND body = $2`, [threadId, draft])).toEqual([]);

    const listed = await toolOk(t, s.apiKey, 'list_agent_turns', { threadId, status: 'AWAITING_APPROVAL' });
    expect(listed.turns.map((x: any) => x.id)).toContain(turn.id);
    expect(listed.turns.every((x: any) => x.status === 'AWAITING_APPROVAL')).toBe(true);

    const approved = (await toolOk(t, s.apiKey, 'approve_agent_turn', { turnId: turn.id })).turn;
    expect(approved).toEqual({
      ...turn,
      bodyLength: draft.length, // the tools cut a turn's body (docs/mcp.md, "Result sizes"); this one is whole
      truncated: false,
      status: 'SENT',
      messageId: expect.stringMatching(UUID),
      decidedByUserId: s.userId,
      decidedAt: expect.any(String),
    });

    const sent = await both('agent_turn.sent', (d) => d.agentTurn.id === turn.id);
    for (const mode of ['concise', 'verbose'] as const) {
      expectAgentTurnShape(sent[mode], mode);
      expect(sent[mode].agentTurn).toEqual({ ...waiting[mode].agentTurn, status: 'SENT', messageId: approved.messageId });
    }
    expect(sent.verbose.thread.recentMessages.at(-1)).toMatchObject({ id: approved.messageId, direction: 'OUTBOUND', body: draft });

    const handedOff = await both('message.sent', (d) => d.message.id === approved.messageId);
    expect(handedOff.concise.message).toMatchObject({
      id: approved.messageId,
      threadId,
      channel: 'SMS',
      direction: 'OUTBOUND',
      body: draft,
      fromIdentity: { value: phone.address, kind: 'PHONE' },
      toIdentity: { value: partner, kind: 'PHONE' },
    });
    expect(await waitForCarrier(draft)).toMatchObject({ from: phone.address, to: partner, body: draft });

    // Decided once: approving or rejecting again is refused, naming the status.
    expect(await toolError(t, s.apiKey, 'approve_agent_turn', { turnId: turn.id })).toMatch(/is SENT/);
    const again = await decide(s.apiKey, turn.id, 'reject');
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ message: expect.stringMatching(/is SENT/), field: 'turnId' });
  });

  it('DRAFT rejected: nothing is sent, no agent_turn.sent, and it cannot be approved afterwards', async () => {
    const draft = 'We are closed on Mondays, sorry.';
    const turn = (await postTurn(s.apiKey, agents.DRAFT.id, { threadId, body: draft }).expect(201)).body.turn;
    await both('agent_turn.awaiting_approval', (d) => d.agentTurn.id === turn.id);

    const rejected = (await toolOk(t, s.apiKey, 'reject_agent_turn', { turnId: turn.id })).turn;
    expect(rejected).toMatchObject({ id: turn.id, status: 'REJECTED', messageId: null, decidedByUserId: s.userId, decidedAt: expect.any(String) });

    expect(await toolError(t, s.apiKey, 'approve_agent_turn', { turnId: turn.id })).toMatch(/is REJECTED/);
    const rest = await decide(s.apiKey, turn.id, 'approve');
    expect(rest.status).toBe(409);
    expect(rest.body.message).toMatch(/is REJECTED/);

    // A later AUTO turn goes all the way to the carrier; by then the rejected one would have too.
    const later = 'A table for two at 7pm is booked.';
    await postTurn(s.apiKey, agents.AUTO.id, { threadId, body: later }).expect(201);
    await waitForCarrier(later);
    await both('agent_turn.sent', (d) => d.agentTurn.agent.id === agents.AUTO.id);
    expect(carrierCalls.map((c) => c.body)).not.toContain(draft);
    expect(
      events()
        .filter((e) => e.data.agentTurn?.id === turn.id)
        .map((e) => e.type),
    ).toEqual(['agent_turn.awaiting_approval', 'agent_turn.awaiting_approval']);
    expect(await db.query(`SELECT id FROM messages WHERE body = $1`, [draft])).toEqual([]);
    expect((await toolOk(t, s.apiKey, 'list_agent_turns', { status: 'REJECTED' })).turns.map((x: any) => x.id)).toEqual([turn.id]);
  });

  it.each(['AUTO', 'SUPERVISED'] as const)('%s: the reply is sent at once (agent_turn.sent with messageId, the carrier gets it)', async (mode) => {
    const body = `${mode}: your table is confirmed.`;
    const res = await postTurn(s.apiKey, agents[mode].id, { threadId, body });
    expect(res.status).toBe(201);
    const turn = res.body.turn;
    expect(turn).toMatchObject({ status: 'SENT', messageId: expect.stringMatching(UUID), agent: { id: agents[mode].id, mode }, decidedByUserId: null });

    const sent = await both('agent_turn.sent', (d) => d.agentTurn.id === turn.id);
    for (const m of ['concise', 'verbose'] as const) {
      expectAgentTurnShape(sent[m], m);
      expect(sent[m].agentTurn).toEqual({
        id: turn.id,
        status: 'SENT',
        threadId,
        messageId: turn.messageId,
        createdAt: turn.createdAt,
        agent: { id: agents[mode].id, name: `${mode} bot`, mode },
      });
    }
    expect(sent.verbose.thread.recentMessages.at(-1)).toMatchObject({ id: turn.messageId, body, status: 'QUEUED' });
    expect(await waitForCarrier(body)).toMatchObject({ from: phone.address, to: partner });
    const handedOff = await both('message.sent', (d) => d.message.id === turn.messageId);
    expect(handedOff.concise.message.body).toBe(body);
    // Nothing to decide on a turn that was never a draft.
    expect((await decide(s.apiKey, turn.id, 'approve')).status).toBe(409);
  });

  it('AUTO on an email thread: the reply is an email answering the thread (Re:, In-Reply-To), handed to the mail server', async () => {
    const agent = (await t.admin.post(`/admin/lines/${email.id}/agents`, { name: 'Mail bot', mode: 'AUTO' }).expect(201)).body;
    const inboundId = `<booking-${randomUUID()}@guest.example>`;
    const raw = [
      'From: Grace Guest <grace@guest.example>',
      `To: <${email.address}>`,
      'Subject: Table for four',
      `Message-ID: ${inboundId}`,
      'Date: Tue, 10 Nov 2026 09:14:01 +0000',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=UTF-8',
      '',
      'Could we have a table for four on Friday?',
      '',
    ].join('\r\n');
    const inbound = await t.http().post('/ingest/email/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).set('Content-Type', 'message/rfc822').send(raw);
    expect(inbound.status).toBe(201);

    const body = 'Friday at 8pm, table for four: booked.';
    const turn = (await postTurn(s.apiKey, agent.id, { threadId: inbound.body.threadId, body }).expect(201)).body.turn;
    expect(turn).toMatchObject({ status: 'SENT', messageId: expect.stringMatching(UUID), agent: { id: agent.id, mode: 'AUTO' } });
    const sent = await both('agent_turn.sent', (d) => d.agentTurn.id === turn.id);
    expect(sent.concise).toMatchObject({ thread: { id: inbound.body.threadId, subject: 'Table for four' }, person: { id: null, displayName: 'Grace Guest' } });
    expect(sent.verbose.person.identities).toEqual([expect.objectContaining({ kind: 'EMAIL', value: 'grace@guest.example' })]);
    expect(sent.verbose).not.toHaveProperty('emailHeaders');

    const handedOff = await both('message.sent', (d) => d.message.id === turn.messageId);
    expect(handedOff.concise.message).toMatchObject({
      channel: 'EMAIL',
      direction: 'OUTBOUND',
      body,
      fromIdentity: { value: email.address, kind: 'EMAIL' },
      toIdentity: { value: 'grace@guest.example', kind: 'EMAIL' },
    });
    expect(handedOff.verbose.emailHeaders).toMatchObject({ inReplyTo: inboundId, references: [inboundId], messageId: expect.stringMatching(/^<.+@/) });
    const mail = smtp.mails.find((m) => m.includes(body));
    expect(mail).toBeDefined();
    expect(mail).toMatch(/^Subject: Re: Table for four\r?$/m);
    expect(mail).toContain(`In-Reply-To: ${inboundId}`);
    expect(mail).toMatch(/^To: grace@guest\.example\r?$/m);
  });

  it("a MEMBER with the line may approve; a LINES key without the agent's line and another org see nothing (404)", async () => {
    const member = await createSession(t.admin, { orgId: s.orgId, role: 'MEMBER', lines: [] });
    await t.admin.put(`/admin/lines/${phone.id}/members/${member.userId}`).expect(200);
    const emailOnly = (
      await t.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'email only', channelAccess: { mode: 'LINES', lines: [email.address] } }).expect(201)
    ).body.key as string;
    const other = await createSession(t.admin);

    const turn = (await postTurn(s.apiKey, agents.DRAFT.id, { threadId, body: 'Scoped draft' }).expect(201)).body.turn;

    for (const key of [emailOnly, other.apiKey]) {
      const create = await postTurn(key, agents.DRAFT.id, { threadId, body: 'not mine' });
      expect(create.status).toBe(404);
      expect(create.body.field).toBe('agentId');
      for (const decision of ['approve', 'reject'] as const) {
        const res = await decide(key, turn.id, decision);
        expect(res.status).toBe(404);
        expect(res.body.field).toBe('turnId');
      }
      expect(await toolError(t, key, 'approve_agent_turn', { turnId: turn.id })).toMatch(/not found/);
      expect(await toolError(t, key, 'reject_agent_turn', { turnId: turn.id })).toMatch(/not found/);
      // Turns on the phone line (this SMS thread) are not listed; the email-only key still lists its email line's turns.
      expect((await toolOk(t, key, 'list_agent_turns', {})).turns.filter((x: any) => x.threadId === threadId)).toEqual([]);
      expect((await toolOk(t, key, 'list_agent_turns', { threadId })).turns).toEqual([]);
    }
    expect((await t.http().post(`/api/agents/${agents.DRAFT.id}/turns`).send({ threadId, body: 'x' })).status).toBe(401);

    // The turn is untouched, and the MEMBER on the line may decide it.
    const approved = await decide(member.apiKey, turn.id, 'approve');
    expect(approved.status).toBe(200);
    expect(approved.body.turn).toMatchObject({ status: 'SENT', decidedByUserId: member.userId });
    await waitForCarrier('Scoped draft');
  });

  it("a thread must be on the agent's line; the body is validated", async () => {
    const emailAgent = (await t.admin.post(`/admin/lines/${email.id}/agents`, { name: 'Inbox bot', mode: 'AUTO' }).expect(201)).body;
    const offLine = await postTurn(s.apiKey, emailAgent.id, { threadId, body: 'wrong line' });
    expect(offLine.status).toBe(404);
    expect(offLine.body.field).toBe('threadId');
    expect((await postTurn(s.apiKey, agents.AUTO.id, { threadId: randomUUID(), body: 'x' })).status).toBe(404);
    expect((await postTurn(s.apiKey, randomUUID(), { threadId, body: 'x' })).status).toBe(404);

    const cases: Array<[object, string]> = [
      [{ threadId }, 'body'],
      [{ threadId, body: '   ' }, 'body'],
      [{ threadId, body: 'x'.repeat(1601) }, 'body'], // an SMS thread takes at most 1600
      [{ threadId: 'nope', body: 'x' }, 'threadId'],
      [{ threadId, body: 'x', extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await postTurn(s.apiKey, agents.AUTO.id, body);
      expect([res.status, res.body.field]).toEqual([400, field]);
    }
    const badId = await postTurn(s.apiKey, 'not-a-uuid', { threadId, body: 'x' });
    expect([badId.status, badId.body.field]).toEqual([400, 'agentId']);
    expect(await db.query(`SELECT id FROM messages WHERE body IN ('wrong line', '   ')`)).toEqual([]);
  });

  it('admin route: 404 for an unknown line, 400 naming the field, 401 without the admin token', async () => {
    expect((await t.admin.post(`/admin/lines/${randomUUID()}/agents`, { name: 'x', mode: 'AUTO' })).status).toBe(404);
    const cases: Array<[object, string]> = [
      [{ mode: 'AUTO' }, 'name'],
      [{ name: '  ', mode: 'AUTO' }, 'name'],
      [{ name: 'x'.repeat(201), mode: 'AUTO' }, 'name'],
      [{ name: 'x' }, 'mode'],
      [{ name: 'x', mode: 'MANUAL' }, 'mode'],
      [{ name: 'x', mode: 'AUTO', lineId: phone.id }, 'lineId'],
    ];
    for (const [body, field] of cases) {
      const res = await t.admin.post(`/admin/lines/${phone.id}/agents`, body);
      expect([res.status, res.body.field]).toEqual([400, field]);
    }
    const badLine = await t.admin.post('/admin/lines/nope/agents', { name: 'x', mode: 'AUTO' });
    expect([badLine.status, badLine.body.field]).toEqual([400, 'lineId']);
    expect((await t.http().post(`/admin/lines/${phone.id}/agents`).set('Authorization', `Bearer ${s.apiKey}`).send({ name: 'x', mode: 'AUTO' })).status).toBe(
      401,
    );
    // A deleted line takes no new agents.
    const gone = (await t.admin.post(`/admin/orgs/${s.orgId}/lines`, { type: 'PHONE_NUMBER', address: uniquePhone() }).expect(201)).body;
    await t.admin.delete(`/admin/lines/${gone.id}`).expect(204);
    expect((await t.admin.post(`/admin/lines/${gone.id}/agents`, { name: 'x', mode: 'AUTO' })).status).toBe(404);
  });

  it('the official MCP client accepts what the three tools return (it checks each result against the advertised outputSchema)', async () => {
    const client = new Client({ name: 'agents-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${await t.app.getUrl()}/api/mcp`.replace('[::1]', '127.0.0.1')), {
        requestInit: { headers: { Authorization: `Bearer ${s.apiKey}` } },
      }),
    );
    try {
      // The client checks results only against the schemas it has listed.
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(['list_agent_turns', 'approve_agent_turn', 'reject_agent_turn']));
      const call = async (name: string, args: Record<string, unknown>) => {
        const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
        expect(result.isError).toBeFalsy();
        return result.structuredContent as Record<string, any>;
      };
      const first = (await postTurn(s.apiKey, agents.DRAFT.id, { threadId, body: 'SDK draft one' }).expect(201)).body.turn;
      const second = (await postTurn(s.apiKey, agents.DRAFT.id, { threadId, body: 'SDK draft two' }).expect(201)).body.turn;
      expect((await call('approve_agent_turn', { turnId: first.id })).turn).toMatchObject({ id: first.id, status: 'SENT' });
      expect((await call('reject_agent_turn', { turnId: second.id })).turn).toMatchObject({ id: second.id, status: 'REJECTED', messageId: null });
      const listed = await call('list_agent_turns', { threadId });
      const statusOf = new Map(listed.turns.map((x: any) => [x.id, x.status]));
      expect([statusOf.get(first.id), statusOf.get(second.id)]).toEqual(['SENT', 'REJECTED']);
      expect(listed.nextCursor).toBeNull();
    } finally {
      await client.close();
    }
  });

  it('list_agent_turns pages 25 at a time, newest first, with an opaque cursor', async () => {
    // Its own org and no webhooks, so these turns stay out of the other tests' receivers.
    const o = await createSession(t.admin, { lines: ['PHONE_NUMBER'] });
    const line = o.lines[0];
    const agent = (await t.admin.post(`/admin/lines/${line.id}/agents`, { name: 'Pager', mode: 'DRAFT' }).expect(201)).body;
    const inbound = await t
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to: line.address, from: uniquePhone(), body: 'hi', providerMessageId: `p-${randomUUID()}` })
      .expect(201);
    const ids: string[] = [];
    for (let i = 0; i < 26; i += 1) {
      ids.push((await postTurn(o.apiKey, agent.id, { threadId: inbound.body.threadId, body: `draft ${i}` }).expect(201)).body.turn.id);
    }
    const first = await toolOk(t, o.apiKey, 'list_agent_turns', {});
    expect(first.turns).toHaveLength(25);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await toolOk(t, o.apiKey, 'list_agent_turns', { cursor: first.nextCursor });
    expect(second).toEqual({ turns: [expect.objectContaining({ id: ids[0] })], nextCursor: null });
    expect([...first.turns, ...second.turns].map((x: any) => x.id)).toEqual([...ids].reverse());
    expect((await toolOk(t, o.apiKey, 'list_agent_turns', { agentId: agent.id, status: 'SENT' })).turns).toEqual([]);
    expect(await toolError(t, o.apiKey, 'list_agent_turns', { cursor: 'garbage' })).toMatch(/cursor/);
    const bad = await callTool(t, o.apiKey, 'list_agent_turns', { status: 'PENDING' });
    expect(bad.isError).toBe(true);
  });
});
