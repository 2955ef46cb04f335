import { randomUUID } from 'node:crypto';
import { connect, Socket } from 'node:net';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ApiKeyLimits } from '../../src/limits/api-key-limits.service';
import { apiKeyRoutes } from '../../src/identity/action.guard';
import { hangUpWhileLocked, settled } from '../support/hang-up';
import { rpc } from '../support/mcp';
import { createMessagingTestApp, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * Issue 30: every surface that acts for an API key passes one check of permission, rate and
 * running calls (identity/action.guard.ts). The agent REST routes did not: a `read` key created
 * and approved turns, a `webhooks` key rejected drafts, and a key refused on /api/mcp for its
 * rate kept acting through REST.
 */
const RATE = 12;
const WINDOW = 30;
const KEY_CONCURRENCY = 2;

/** Every API-key route of the service and what it declares: a new one must be added here on purpose. */
const API_KEY_ROUTES = [
  { name: 'McpController.post', path: '/api/mcp', action: 'per-call' },
  { name: 'AgentsController.createTurn', path: '/api/agents/:agentId/turns', action: 'send' },
  { name: 'AgentsController.approve', path: '/api/agent-turns/:turnId/approve', action: 'send' },
  { name: 'AgentsController.reject', path: '/api/agent-turns/:turnId/reject', action: 'send' },
  { name: 'EventFeedController.list', path: '/api/events', action: 'webhooks' },
];

const PERMISSION_SETS = [['read'], ['webhooks'], ['read', 'webhooks'], ['send'], ['read', 'send', 'webhooks']];

describe('API-key routes: one check of permission, rate and running calls', () => {
  let m: MessagingTestApp;
  let s: Session;
  let threadId: string;
  const agents: Record<'DRAFT' | 'AUTO', string> = { DRAFT: '', AUTO: '' };

  beforeAll(async () => {
    m = await createMessagingTestApp({
      MCP_MAX_BATCH: '10',
      MCP_RATE_LIMIT: String(RATE),
      MCP_RATE_WINDOW_SECONDS: String(WINDOW),
      MCP_KEY_CONCURRENCY: String(KEY_CONCURRENCY),
    });
    s = await createSession(m.admin);
    const phone = s.lines.find((line) => line.type === 'PHONE_NUMBER')!;
    threadId = (await inboundSms(m, phone.address, partnerPhone(), 'Table for two?')).threadId;
    for (const mode of ['DRAFT', 'AUTO'] as const) {
      const res = await m.admin.post(`/admin/lines/${phone.id}/agents`, { name: `${mode} bot`, mode });
      expect(res.status).toBe(201);
      agents[mode] = res.body.id;
    }
  });
  afterAll(async () => {
    await m?.close();
  });

  async function keyWith(permissions: string[]): Promise<string> {
    const res = await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: permissions.join('+'), permissions });
    expect(res.status).toBe(201);
    return res.body.key;
  }

  const createTurn = (key: string, agentId: string, body: string) =>
    m.http().post(`/api/agents/${agentId}/turns`).set('Authorization', `Bearer ${key}`).send({ threadId, body });
  const decide = (key: string, turnId: string, decision: 'approve' | 'reject') =>
    m.http().post(`/api/agent-turns/${turnId}/${decision}`).set('Authorization', `Bearer ${key}`).send();
  const turnsWithBody = async (body: string) => Number((await m.db.query(`SELECT count(*)::int AS n FROM agent_turns WHERE body = $1`, [body]))[0].n);
  const messagesWithBody = async (body: string) => Number((await m.db.query(`SELECT count(*)::int AS n FROM messages WHERE body = $1`, [body]))[0].n);
  const statusOf = async (turnId: string) => (await m.db.query(`SELECT status FROM agent_turns WHERE id = $1`, [turnId]))[0].status;

  /** A DRAFT turn awaiting approval, made with an all-permissions key. */
  async function draft(body: string): Promise<string> {
    const res = await createTurn(await keyWith(['read', 'send', 'webhooks']), agents.DRAFT, body);
    expect(res.status).toBe(201);
    return res.body.turn.id;
  }

  it('every API-key route declares what it does for the key, and the service walks them all at start', () => {
    const routes = apiKeyRoutes(m.app.get(DiscoveryService), m.app.get(MetadataScanner), m.app.get(Reflector));
    expect(routes.sort((a, b) => a.name.localeCompare(b.name))).toEqual([...API_KEY_ROUTES].sort((a, b) => a.name.localeCompare(b.name)));
  });

  it.each(PERMISSION_SETS.map((permissions) => [permissions.join(' + '), permissions] as const))(
    'a key with %s may create, approve and reject turns only if it has send',
    async (_, permissions) => {
      const key = await keyWith(permissions);
      const allowed = permissions.includes('send');
      const tag = `${permissions.join('+')}-${Date.now()}`;
      const refusal = {
        statusCode: 403,
        error: 'Forbidden',
        message: `this route needs the send permission, which this API key does not have (it has ${permissions.join(', ')})`,
        field: 'permissions',
      };

      // An AUTO agent's turn is sent at once: a key without send must not send anything.
      const auto = await createTurn(key, agents.AUTO, `auto ${tag}`);
      if (allowed) {
        expect(auto.status).toBe(201);
        expect(auto.body.turn.status).toBe('SENT');
        await waitUntil(() => m.carried.find((sms) => sms.body === `auto ${tag}`), 'the AUTO turn to reach the carrier');
      } else {
        expect(auto.status).toBe(403);
        expect(auto.body).toEqual(refusal);
        expect(await turnsWithBody(`auto ${tag}`)).toBe(0);
        expect(await messagesWithBody(`auto ${tag}`)).toBe(0);
      }

      const toApprove = await draft(`approve ${tag}`);
      const approved = await decide(key, toApprove, 'approve');
      const toReject = await draft(`reject ${tag}`);
      const rejected = await decide(key, toReject, 'reject');
      if (allowed) {
        expect([approved.status, approved.body.turn.status]).toEqual([200, 'SENT']);
        expect([rejected.status, rejected.body.turn.status]).toEqual([200, 'REJECTED']);
      } else {
        expect([approved.status, approved.body]).toEqual([403, refusal]);
        expect([rejected.status, rejected.body]).toEqual([403, refusal]);
        expect(await statusOf(toApprove)).toBe('AWAITING_APPROVAL');
        expect(await statusOf(toReject)).toBe('AWAITING_APPROVAL');
        expect(await messagesWithBody(`approve ${tag}`)).toBe(0);
      }
    },
  );

  it('the REST routes and /api/mcp spend one rate budget per key: refused on one, refused on the other', async () => {
    const viaMcpFirst = await keyWith(['read', 'send']);
    for (let i = 0; i < RATE; i++) expect((await rpc(m, viaMcpFirst, 'ping')).status).toBe(200);
    expect((await rpc(m, viaMcpFirst, 'ping')).status).toBe(429);
    const body = `over the rate ${Date.now()}`;
    const refused = await createTurn(viaMcpFirst, agents.AUTO, body);
    expect(refused.status).toBe(429);
    expect(refused.body.message).toMatch(new RegExp(`^rate limit reached: this API key may make ${RATE} calls per ${WINDOW} s \\(MCP_RATE_LIMIT\\)`));
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(await turnsWithBody(body)).toBe(0);

    const viaRestFirst = await keyWith(['read', 'send']);
    const turnId = await draft(`rest budget ${Date.now()}`);
    for (let i = 0; i < RATE; i++) expect((await decide(viaRestFirst, turnId, i === 0 ? 'reject' : 'approve')).status).not.toBe(429);
    expect((await decide(viaRestFirst, turnId, 'approve')).status).toBe(429);
    expect((await rpc(m, viaRestFirst, 'ping')).status).toBe(429);
  });

  it('REST calls and tool calls share the running-calls slots of a key (MCP_KEY_CONCURRENCY)', async () => {
    const key = await keyWith(['read', 'send']);
    const { port } = new URL(m.baseUrl);
    // A request that declared a body and sent none of it holds its slot until it closes. It asks
    // to be told when to send the body (Expect: 100-continue): the server says so only once the
    // request was admitted, so the test knows the slot is held.
    const held: Socket[] = [];
    const hold = async (path: string) => {
      const socket = connect(Number(port), '127.0.0.1');
      held.push(socket);
      socket.on('error', () => undefined);
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
          'Content-Length: 100\r\nExpect: 100-continue\r\n\r\n',
      );
      await waitUntil(() => answer.includes('\r\n\r\n'), `an answer to the held ${path}`);
      expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
    };
    try {
      const turnId = await draft(`slots ${Date.now()}`);
      for (let i = 0; i < KEY_CONCURRENCY; i++) await hold(`/api/agent-turns/${turnId}/approve`);
      // The tool endpoint is refused while the REST calls run, and REST is refused too.
      const busyMessage = `too many calls at once: this API key may have ${KEY_CONCURRENCY} calls running at the same time (MCP_KEY_CONCURRENCY); retry after 1 s`;
      const mcp = await rpc(m, key, 'ping');
      expect([mcp.status, mcp.body.error.message]).toEqual([429, busyMessage]);
      const rest = await decide(key, turnId, 'reject');
      expect([rest.status, rest.body.message, rest.headers['retry-after']]).toEqual([429, busyMessage, '1']);
      expect(await statusOf(turnId)).toBe('AWAITING_APPROVAL');

      for (const socket of held.splice(0)) socket.destroy();
      await waitUntil(async () => (await rpc(m, key, 'ping')).status === 200, 'the slots to be given back');
      for (let i = 0; i < KEY_CONCURRENCY; i++) await hold('/api/mcp');
      const restWhileMcpRuns = await decide(key, turnId, 'reject');
      expect([restWhileMcpRuns.status, restWhileMcpRuns.body.message]).toEqual([429, busyMessage]);
      expect(await statusOf(turnId)).toBe('AWAITING_APPROVAL');
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  it('a REST call whose client hung up while its key was looked up gives its running-call slot back', async () => {
    const key = await keyWith(['read', 'send']);
    const { port } = new URL(m.baseUrl);
    const spending = jest.spyOn(m.app.get(ApiKeyLimits), 'spend');
    try {
      for (let i = 1; i <= KEY_CONCURRENCY; i++) {
        await hangUpWhileLocked(m.app, 'api_keys', '%SELECT k.key_hash, k.id AS key_id%', () => {
          const socket = connect(Number(port), '127.0.0.1');
          socket.on('error', () => undefined);
          socket.write(`POST /api/agent-turns/${randomUUID()}/reject HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Length: 0\r\n\r\n`);
          return () => socket.destroy();
        });
        await settled(spending, i, 'the hung-up call past its slot and rate check');
      }
    } finally {
      spending.mockRestore();
    }
    // Each took a slot after its client had gone: both are free again.
    const ping = await rpc(m, key, 'ping');
    expect([ping.status, ping.body.error?.message]).toEqual([200, undefined]);
  });
});
