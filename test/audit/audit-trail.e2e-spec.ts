import { ToolRegistry } from '../../src/mcp/tool-registry';
import { KEY_PERMISSIONS } from '../../src/identity/key-permissions';
import type { QueryRunner } from 'typeorm';
import { AuditEventsRepository, AuditRow as WrittenRow } from '../../src/audit/audit-events.repository';
import { AuditRetention } from '../../src/audit/audit-retention';
import { callTool, rpc, toolOk } from '../support/mcp';
import { modernRpc } from '../support/mcp-modern';
import { createMessagingTestApp, Hook, inboundSms, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { createSession, Session, uniquePhone } from '../support/session';
import { waitUntil } from '../support/wait';
import { postForm, signInBrowser } from '../support/web';
import { connectApp } from '../support/oauth';

type Json = Record<string, any>;

/** What the walk knows when it builds a tool's arguments: a fresh thread, agents, a webhook, made with the setup key. */
interface Ctx {
  m: MessagingTestApp;
  s: Session;
  phone: string;
  phoneLineId: string;
  thread(): Promise<string>;
  /** The one shared endpoint (the tier caps endpoints); freshHook for one to delete. */
  hook(): Promise<Hook>;
  freshHook(): Promise<Hook>;
  draftTurn(): Promise<string>;
  contact(): Promise<string>;
}

/**
 * Valid arguments for every tool that is not a read. A write tool added to the registry without a
 * row here fails the walk below: its audit row must be shown to exist before it ships.
 */
const WRITE_TOOL_ARGS: Record<string, (c: Ctx) => Promise<Json>> = {
  send_sms: async () => ({ to: partnerPhone(), body: 'Your table is ready.' }),
  send_email: async () => ({ to: 'erin@partner.example', subject: 'Hello', body: 'First words.' }),
  reply_to_thread: async (c) => ({ threadId: await c.thread(), body: 'On our way.' }),
  cancel_scheduled_message: async (c) => {
    const sendAt = new Date(Date.now() + 3_600_000).toISOString();
    return { messageId: (await toolOk(c.m, c.s.apiKey, 'send_sms', { to: partnerPhone(), body: 'Later.', sendAt })).message.id };
  },
  create_agent_turn: async (c) => ({ agentId: (await agentOn(c, 'DRAFT')).id, threadId: await c.thread(), body: 'A draft.' }),
  approve_agent_turn: async (c) => ({ turnId: await c.draftTurn() }),
  reject_agent_turn: async (c) => ({ turnId: await c.draftTurn() }),
  create_contact: async () => ({ displayName: 'Ada', identities: [{ kind: 'PHONE', value: uniquePhone() }] }),
  update_contact: async (c) => ({ contactId: await c.contact(), notes: 'Prefers SMS after 6pm.' }),
  merge_contacts: async (c) => ({ contactIds: [await c.contact(), await c.contact()] }),
  label_thread: async (c) => ({ threadId: await c.thread(), add: [{ name: 'audited' }] }),
  register_webhook: async (c) => ({ url: `${c.m.receiverUrl}/hook/audited`, events: ['message.received'] }),
  update_webhook: async (c) => ({ endpointId: (await c.hook()).id, events: ['message.received', 'message.sent'] }),
  rotate_webhook_secret: async (c) => ({ endpointId: (await c.hook()).id }),
  delete_webhook: async (c) => ({ endpointId: (await c.freshHook()).id }),
  resend_webhook_delivery: async (c) => ({ deliveryId: await delivered(c) }),
  recover_webhook_deliveries: async (c) => ({ endpointId: (await c.hook()).id, since: new Date(Date.now() - 3_600_000).toISOString() }),
};

async function agentOn(c: Ctx, mode: 'DRAFT' | 'AUTO'): Promise<Json> {
  return (await c.m.admin.post(`/admin/lines/${c.phoneLineId}/agents`, { name: `Agent ${mode}`, mode }).expect(201)).body;
}

/** A delivery to a fresh endpoint: an inbound SMS after it was registered. */
async function delivered(c: Ctx): Promise<string> {
  const hook = await c.hook();
  await inboundSms(c.m, c.phone, partnerPhone(), 'hello');
  let id: string | undefined;
  await waitUntil(
    async () => {
      id = (await c.m.db.query(`SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 LIMIT 1`, [hook.id]))[0]?.id;
      return id !== undefined;
    },
    () => `a delivery to ${hook.id}`,
  );
  return id!;
}

interface AuditRow {
  action: string;
  surface: string;
  actor_kind: string;
  credential_id: string | null;
  user_id: string | null;
  outcome: string;
  error_code: string | null;
  targets: Json;
  detail: string | null;
}

describe('the audit trail: one row per changing call, in its transaction, never for reads', () => {
  let m: MessagingTestApp;
  let s: Session;
  let audited: { id: string; key: string };
  let ctx: Ctx;

  const rowsOf = (credentialId: string): Promise<AuditRow[]> =>
    m.db.query(
      `SELECT action, surface, actor_kind, credential_id, user_id, outcome, error_code, targets, detail FROM audit_events WHERE credential_id = $1 ORDER BY at, id`,
      [credentialId],
    );

  beforeAll(async () => {
    m = await createMessagingTestApp();
    s = await createSession(m.admin, { lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    audited = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'audited', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    const phone = s.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    let shared: Promise<Hook> | undefined;
    ctx = {
      m,
      s,
      phone: phone.address,
      phoneLineId: phone.id,
      thread: async () => (await inboundSms(m, phone.address, partnerPhone(), 'Do you open on Sunday?')).threadId,
      hook: () => (shared ??= Hook.register(m, s.apiKey, { events: ['message.received'] })),
      freshHook: () => Hook.register(m, s.apiKey, { events: ['message.received'] }),
      draftTurn: async () => {
        const agent = await agentOn(ctx, 'DRAFT');
        return (await toolOk(m, s.apiKey, 'create_agent_turn', { agentId: agent.id, threadId: await ctx.thread(), body: 'A draft.' })).turn.id;
      },
      contact: async () =>
        (await toolOk(m, s.apiKey, 'create_contact', { displayName: 'Bo', identities: [{ kind: 'PHONE', value: uniquePhone() }] })).contact.id,
    };
  });
  afterAll(async () => {
    await m?.close();
  });

  const tools = () => {
    const registry = m.app.get(ToolRegistry);
    return registry.listFor({ role: 'OWNER', permissions: [...KEY_PERMISSIONS] }).map((d) => registry.get(d.name)!);
  };

  it('walks the tool registry: every tool that is not a read has arguments here, and leaves exactly one row naming it and the key', async () => {
    const writes = tools().filter((t) => t.spec.kind !== 'read');
    expect(writes.length).toBeGreaterThan(10);
    expect(writes.map((t) => t.spec.name).filter((name) => !(name in WRITE_TOOL_ARGS))).toEqual([]); // a new write tool needs a row in WRITE_TOOL_ARGS
    // Which tools' rows were written in the transaction of their change, and which after the call (no transaction).
    const inserts = rowWrites(m.app.get(AuditEventsRepository));
    const afterTheFact: string[] = [];
    for (const tool of writes) {
      const name = tool.spec.name;
      const args = await WRITE_TOOL_ARGS[name](ctx);
      const before = (await rowsOf(audited.id)).length;
      inserts.mockClear();
      await toolOk(m, audited.key, name, args);
      const own = inserts.calls().filter(([row]) => row.credentialId === audited.id);
      expect({ name, inserts: own.length }).toEqual({ name, inserts: 1 });
      if (own[0][1] === undefined) afterTheFact.push(name);
      const rows = await rowsOf(audited.id);
      expect({ name, added: rows.length - before }).toEqual({ name, added: 1 });
      expect(rows[rows.length - 1]).toMatchObject({
        action: name,
        surface: 'mcp',
        actor_kind: 'api_key',
        credential_id: audited.id,
        user_id: s.userId,
        outcome: 'ok',
      });
    }
    inserts.mockRestore();
    expect(afterTheFact).toEqual([]); // docs/decisions.md, "The audit trail": every write tool changes in a transaction
  });

  it('the row is part of the change: when it cannot be written, the change rolls back and the call fails', async () => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'atomic', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    const repository = m.app.get(AuditEventsRepository);
    const insert = repository.insert.bind(repository);
    const insertCarried = repository.insertCarried.bind(repository);
    const spy = jest.spyOn(repository, 'insert').mockImplementation(async (row, runner) => {
      if (runner && row.credentialId === key.id) throw new Error('the audit row could not be written');
      return insert(row, runner);
    });
    // The send's row is carried by its message's INSERT (claimAuditRow): it fails there instead.
    const carried = jest.spyOn(repository, 'insertCarried').mockImplementation((row, runner) => {
      if (row.credentialId === key.id) throw new Error('the audit row could not be written');
      return insertCarried(row, runner);
    });
    try {
      const to = partnerPhone();
      const res = await rpc(m, key.key, 'tools/call', { name: 'send_sms', arguments: { to, body: 'never sent' } });
      expect(res.body.error ?? res.body.result?.isError).toBeTruthy();
      expect(await m.db.query(`SELECT id FROM messages WHERE sent_by_key_id = $1`, [key.id])).toEqual([]);
      expect(await rowsOf(key.id)).toEqual([expect.objectContaining({ action: 'send_sms', outcome: 'failed', error_code: 'INTERNAL' })]);
    } finally {
      spy.mockRestore();
      carried.mockRestore();
    }
  });

  it('records no read, whatever its answer', async () => {
    const reads = tools().filter((t) => t.spec.kind === 'read');
    expect(reads.length).toBeGreaterThan(10);
    const threadId = await ctx.thread();
    const known: Json = { threadId, endpointId: (await ctx.hook()).id, contactId: await ctx.contact(), query: 'Sunday' };
    const before = (await rowsOf(audited.id)).length;
    for (const tool of reads) {
      const required = ((tool.spec.inputSchema as Json).required ?? []) as string[];
      const args = Object.fromEntries(required.filter((field) => field in known).map((field) => [field, known[field]]));
      await callTool(m, audited.key, tool.spec.name, args);
    }
    expect((await rowsOf(audited.id)).length).toBe(before);
  });

  it('send_sms in both protocol revisions: one row each, with the message and thread it made as targets', async () => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'eras', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    const legacy = await toolOk(m, key.key, 'send_sms', { to: partnerPhone(), body: 'legacy era' });
    const res = await modernRpc(m, key.key, 'tools/call', { name: 'send_sms', arguments: { to: partnerPhone(), body: 'modern era' } }).expect(200);
    const modern = res.body.result.structuredContent;
    expect(res.body.result.isError).toBeUndefined();
    const rows = await rowsOf(key.id);
    expect(rows).toHaveLength(2);
    for (const [row, sent] of [
      [rows[0], legacy],
      [rows[1], modern],
    ] as const) {
      expect(row).toMatchObject({ action: 'send_sms', outcome: 'ok', error_code: null, credential_id: key.id });
      expect(row.targets).toMatchObject({ messageId: sent.message.id, threadId: sent.message.threadId });
      expect(JSON.stringify(row)).not.toMatch(/era/); // never the message's text
    }
  });

  it('an OAuth grant (a connected app) is recorded as oauth_grant with the grant as credential', async () => {
    const browser = await signInBrowser(m, s.userId);
    const choice = { access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on', 'permission-send': 'on' };
    const app = await connectApp(m, browser, { clientName: 'Audited App', choice });
    const [grant] = await m.db.query(`SELECT g.id FROM oauth_grants g JOIN oauth_clients c ON c.client_id = g.client_id WHERE c.client_id = $1`, [
      app.clientId,
    ]);
    const sent = await toolOk(m, app.accessToken, 'send_sms', { to: partnerPhone(), body: 'from an app' });
    expect(await rowsOf(grant.id)).toEqual([
      expect.objectContaining({
        action: 'send_sms',
        actor_kind: 'oauth_grant',
        credential_id: grant.id,
        user_id: s.userId,
        outcome: 'ok',
        targets: expect.objectContaining({ messageId: sent.message.id }),
      }),
    ]);
  });

  it('events/subscribe is audited like a write tool (here refused, naming no secret); events/list is a read', async () => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'events', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    const secret = 'whsec_notpadded';
    const res = await rpc(m, key.key, 'events/subscribe', { name: 'message.received', delivery: { mode: 'webhook', url: `${m.receiverUrl}/sub`, secret } });
    expect(res.body.error).toBeDefined();
    await rpc(m, key.key, 'events/list', {}).expect(200);
    const rows = await rowsOf(key.id);
    expect(rows).toEqual([
      expect.objectContaining({ action: 'events/subscribe', surface: 'mcp', outcome: 'refused', error_code: `JSONRPC_${res.body.error.code}` }),
    ]);
    expect(JSON.stringify(rows)).not.toContain(secret);
  });

  it('records a refused call (no permission, bad arguments, a refusal of the service) with its code, nothing changed', async () => {
    const readOnly = (
      await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'read only', channelAccess: { mode: 'ALL' }, permissions: ['read'] }).expect(201)
    ).body;
    expect((await callTool(m, readOnly.key, 'send_sms', { to: partnerPhone(), body: 'no' })).isError).toBe(true);
    expect((await callTool(m, readOnly.key, 'list_threads', {})).isError).toBeFalsy();
    expect(await rowsOf(readOnly.id)).toEqual([expect.objectContaining({ action: 'send_sms', outcome: 'refused', error_code: 'FORBIDDEN' })]);

    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'refused', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    expect((await callTool(m, key.key, 'send_sms', { to: 'not a number', body: 'no' })).isError).toBe(true);
    expect((await callTool(m, key.key, 'send_sms', { to: ctx.phone, body: 'to my own line' })).isError).toBe(true);
    expect((await callTool(m, key.key, 'update_contact', { contactId: '00000000-0000-4000-8000-000000000000', notes: 'x' })).isError).toBe(true);
    expect(await rowsOf(key.id)).toEqual([
      expect.objectContaining({ action: 'send_sms', outcome: 'refused', error_code: 'VALIDATION' }),
      expect.objectContaining({ action: 'send_sms', outcome: 'refused', error_code: 'SEND_REFUSED', detail: 'rule: own_line' }),
      expect.objectContaining({
        action: 'update_contact',
        outcome: 'refused',
        error_code: 'NOT_FOUND',
        targets: { contactId: '00000000-0000-4000-8000-000000000000' },
      }),
    ]);
  });

  it('a batch of JSON-RPC messages: one row per write, each its own, none for the reads beside them', async () => {
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'batch', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    const call = (id: number, name: string, args: Json) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
    const res = await m
      .http()
      .post('/api/mcp')
      .set('Authorization', `Bearer ${key.key}`)
      .set('Accept', 'application/json, text/event-stream')
      .send([
        call(1, 'send_sms', { to: partnerPhone(), body: 'one' }),
        call(2, 'list_threads', {}),
        call(3, 'create_contact', { displayName: 'Cy', identities: [{ kind: 'PHONE', value: uniquePhone() }] }),
        call(4, 'send_sms', { to: partnerPhone(), body: 'two' }),
      ])
      .expect(200);
    expect(res.body.every((r: Json) => !r.result.isError)).toBe(true);
    const rows = await rowsOf(key.id);
    expect(rows.map((r) => r.action).sort()).toEqual(['create_contact', 'send_sms', 'send_sms']);
    const messageIds = res.body.filter((r: Json) => r.result.structuredContent.message).map((r: Json) => r.result.structuredContent.message.id);
    expect(
      rows
        .filter((r) => r.action === 'send_sms')
        .map((r) => r.targets.messageId)
        .sort(),
    ).toEqual(messageIds.sort());
  });

  it('a REST agent route is recorded with its route pattern and the ids of its path and answer; a GET is not', async () => {
    const agent = await agentOn(ctx, 'DRAFT');
    const threadId = await ctx.thread();
    const key = (await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'rest', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    const turn = (
      await m.http().post(`/api/agents/${agent.id}/turns`).set('Authorization', `Bearer ${key.key}`).send({ threadId, body: 'Via REST.' }).expect(201)
    ).body.turn;
    await m.http().get('/api/events').set('Authorization', `Bearer ${key.key}`);
    const rows = await rowsOf(key.id);
    expect(rows).toEqual([
      expect.objectContaining({
        action: 'POST /api/agents/:agentId/turns',
        surface: 'rest',
        outcome: 'ok',
        targets: expect.objectContaining({ agentId: agent.id, turnId: turn.id }),
      }),
    ]);
  });

  it('page forms of a person are recorded as the person (surface web, no credential), in the transaction of their change', async () => {
    const person = await createSession(m.admin, { orgId: s.orgId, role: 'OWNER', lines: [] });
    await m.admin.put(`/admin/lines/${ctx.phoneLineId}/members/${person.userId}`).expect(200);
    const browser = await signInBrowser(m, person.userId);
    const threadId = await ctx.thread();
    const turnA = await ctx.draftTurn();
    const turnB = await ctx.draftTurn();
    const doomed = (await m.admin.post(`/admin/users/${person.userId}/api-keys`, { name: 'doomed', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    const inserts = rowWrites(m.app.get(AuditEventsRepository));
    const forms: Array<[string, Record<string, string>]> = [
      [`/conversations/${threadId}/reply`, { body: 'From the page.' }],
      [`/conversations/${threadId}/labels`, { label: 'from-page' }],
      [`/conversations/${threadId}/labels/remove`, { label: 'from-page' }],
      [`/conversations/${threadId}/contact`, { displayName: 'Partner' }],
      [`/conversations/${threadId}/contact/notes`, { notes: 'Met at the door.' }],
      [`/approvals/${turnA}/approve`, {}],
      [`/approvals/${turnB}/reject`, {}],
      [`/settings/api-keys/${doomed.id}/revoke`, {}],
    ];
    const afterTheFact: string[] = [];
    for (const [path, fields] of forms) {
      inserts.mockClear();
      const res = await postForm(m, browser, path, fields);
      expect({ path, status: res.status }).toEqual({ path, status: 303 });
      const own = inserts.calls().filter(([row]) => row.userId === person.userId && row.surface === 'web');
      expect({ path, rows: own.length }).toEqual({ path, rows: 1 });
      if (own[0][1] === undefined) afterTheFact.push(own[0][0].action);
    }
    inserts.mockRestore();
    const rows: AuditRow[] = await m.db.query(
      `SELECT action, surface, actor_kind, credential_id, user_id, outcome, error_code, targets, detail FROM audit_events WHERE user_id = $1 AND surface = 'web' ORDER BY at, id`,
      [person.userId],
    );
    expect(rows.map((r) => r.action)).toEqual([
      'POST /conversations/:threadId/reply',
      'POST /conversations/:threadId/labels',
      'POST /conversations/:threadId/labels/remove',
      'POST /conversations/:threadId/contact',
      'POST /conversations/:threadId/contact/notes',
      'POST /approvals/:turnId/approve',
      'POST /approvals/:turnId/reject',
      'POST /settings/api-keys/:id/revoke',
    ]);
    expect(rows.every((r) => r.actor_kind === 'person' && r.credential_id === null && r.outcome === 'ok')).toBe(true);
    expect(rows[0].targets).toEqual({ threadId, messageId: expect.stringMatching(/^[0-9a-f-]{36}$/) }); // the reply it wrote, named by the send path
    expect(afterTheFact).toEqual([]);
  });

  it('access changes and revocations (page forms, admin routes) write their row in the transaction of their change, never after it', async () => {
    const person = await createSession(m.admin, { orgId: s.orgId, role: 'OWNER', lines: [] });
    const browser = await signInBrowser(m, person.userId);
    const choice = { access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on', 'permission-send': 'on' };
    const grantOf = async (clientName: string): Promise<string> => {
      const app = await connectApp(m, browser, { clientName, choice });
      const [grant] = await m.db.query(`SELECT g.id FROM oauth_grants g WHERE g.client_id = $1`, [app.clientId]);
      return grant.id;
    };
    const pageGrant = await grantOf('Edited App');
    const adminGrant = await grantOf('Admin Revoked App');
    const key = (await m.admin.post(`/admin/users/${person.userId}/api-keys`, { name: 'edited', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    const inserts = rowWrites(m.app.get(AuditEventsRepository));
    const calls: Array<[string, () => Promise<number>]> = [
      [
        `/settings/api-keys/:id/edit`,
        async () =>
          (await postForm(m, browser, `/settings/api-keys/${key.id}/edit`, { access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on' })).status,
      ],
      [
        `/settings/connected-apps/:id/edit`,
        async () =>
          (await postForm(m, browser, `/settings/connected-apps/${pageGrant}/edit`, { access: 'ALL', 'permissions-shown': 'on', 'permission-read': 'on' }))
            .status,
      ],
      [`/settings/connected-apps/:id/revoke`, async () => (await postForm(m, browser, `/settings/connected-apps/${pageGrant}/revoke`, {})).status],
      [`PATCH /admin/api-keys/:keyId`, async () => (await m.admin.patch(`/admin/api-keys/${key.id}`, { permissions: ['read', 'send'] })).status],
      [`DELETE /admin/oauth-grants/:grantId`, async () => (await m.admin.delete(`/admin/oauth-grants/${adminGrant}`)).status],
    ];
    const afterTheFact: string[] = [];
    for (const [name, call] of calls) {
      inserts.mockClear();
      const status = await call();
      expect({ name, ok: [200, 204, 303].includes(status) }).toEqual({ name, ok: true });
      const own = inserts.calls().filter(([row]) => row.userId === person.userId || row.actorKind === 'admin');
      expect({ name, rows: own.length }).toEqual({ name, rows: 1 });
      if (own[0][1] === undefined) afterTheFact.push(name);
    }
    inserts.mockRestore();
    expect(afterTheFact).toEqual([]);
  });

  it("admin API writes are recorded as the admin, in the org their path names; the admin API lists the org's rows, paged by cursor", async () => {
    const res = await m.admin.post(`/admin/users/${s.userId}/api-keys`, { name: 'admin made', channelAccess: { mode: 'ALL' } }).expect(201);
    const [row] = await m.db.query(`SELECT * FROM audit_events WHERE actor_kind = 'admin' AND targets->>'userId' = $1 ORDER BY at DESC LIMIT 1`, [s.userId]);
    expect(row).toMatchObject({
      org_id: s.orgId,
      action: 'POST /admin/users/:userId/api-keys',
      surface: 'admin',
      credential_id: null,
      user_id: null,
      outcome: 'ok',
    });
    expect(JSON.stringify(row)).not.toContain(res.body.key); // never the secret

    const first = await m.admin.get(`/admin/orgs/${s.orgId}/audit-events?credentialId=${audited.id}`).expect(200);
    expect(first.body.events.length).toBeGreaterThan(0);
    expect(first.body.events.every((e: Json) => e.credentialId === audited.id)).toBe(true);
    const all: Json[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = (await m.admin.get(`/admin/orgs/${s.orgId}/audit-events${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`).expect(200)).body;
      all.push(...page.events);
      cursor = page.nextCursor;
    } while (cursor);
    const total = (await m.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE org_id = $1`, [s.orgId]))[0].n;
    expect(all.length).toBe(total);
    expect(new Set(all.map((e) => e.id)).size).toBe(total);
    const until = all[0].at;
    const older = (await m.admin.get(`/admin/orgs/${s.orgId}/audit-events?until=${encodeURIComponent(until)}`).expect(200)).body.events;
    expect(older.every((e: Json) => e.at < until)).toBe(true);
    const bad = await m.admin.get(`/admin/orgs/${s.orgId}/audit-events?credentialId=nope`).expect(400);
    expect(JSON.stringify(bad.body)).toMatch(/credentialId/);
    await m.admin.get(`/admin/orgs/${s.orgId}/audit-events?cursor=forged.xxxxxxxxxxxxxxxxxxxxxx`).expect(400);
  });

  it('keeps rows AUDIT_RETENTION_DAYS (365 by default) and prunes older ones', async () => {
    const orgId = '00000000-0000-4000-8000-00000000a0d1';
    const row = (id: string, daysAgo: number) =>
      m.db.query(
        `INSERT INTO audit_events (id, org_id, at, actor_kind, action, surface, targets, outcome) VALUES ($1, $2, now() - make_interval(days => $3), 'admin', 'POST /admin/orgs', 'admin', '{}', 'ok')`,
        [id, orgId, daysAgo],
      );
    await row('00000000-0000-4000-8000-0000000000a1', 366);
    await row('00000000-0000-4000-8000-0000000000a2', 364);
    expect((await m.app.get(AuditRetention).prune()).rows).toBeGreaterThanOrEqual(1);
    expect((await m.db.query(`SELECT id FROM audit_events WHERE org_id = $1`, [orgId])).map((r: Json) => r.id)).toEqual([
      '00000000-0000-4000-8000-0000000000a2',
    ]);
    await m.db.query(`DELETE FROM audit_events WHERE org_id = $1`, [orgId]);
  });
});

/**
 * The audit rows a repository is asked to write, as [row, runner]: written on its own or through
 * the change's transaction (insert), or carried by a statement of that transaction (insertCarried).
 * A row written after the fact has no runner.
 */
function rowWrites(repository: AuditEventsRepository) {
  const inserts = jest.spyOn(repository, 'insert');
  const carried = jest.spyOn(repository, 'insertCarried');
  return {
    calls: (): Array<[row: WrittenRow, runner?: QueryRunner]> => [...inserts.mock.calls, ...carried.mock.calls],
    mockClear: () => {
      inserts.mockClear();
      carried.mockClear();
    },
    mockRestore: () => {
      inserts.mockRestore();
      carried.mockRestore();
    },
  };
}
