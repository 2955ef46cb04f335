import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMessagingTestApp, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { rpc } from '../support/mcp';
import { connectOverHttp } from '../support/oauth';
import { createSession, Session } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
import { PAGE_ORIGIN, postForm, signInBrowser } from '../support/web';
import { emailWithPdf } from './support/clients';
import { fmt, ResultBuilder } from './support/results';
import { ROOT, waitFor } from './support/stack';

/**
 * Issue 6: "An authorization matrix: every tool × another user's ids, a LINES key outside its
 * lines, MEMBER vs the roles a tool needs, a revoked key: nothing leaks, nothing changes."
 *
 * A victim (OWNER in org A) owns one of everything: a webhook endpoint and its deliveries, an SMS
 * and an email thread (with a PDF attachment), a contact, a label, an agent and a draft turn. Then
 * every tool the OWNER's tools/list shows is called with the victim's ids by:
 *   - another OWNER of the same org (not a member of the victim's lines),
 *   - a user of the same org who IS a member of the victim's lines, with a key limited (LINES) to
 *     a line of their own,
 *   - a MEMBER of the same org,
 *   - an OWNER of another org,
 *   - the victim's own key after it was revoked.
 * Each answer must hold none of the victim's ids, secrets or contents (beyond ids the caller sent),
 * and a checksum of every table must be the same after the call as before. Contacts are shared by
 * the org by design (docs/messaging.md, "Who sees what"): writes on them by same-org callers are
 * not in the matrix, but a contact's identities on lines the caller may not use must not show.
 * The control: the victim's own key, with the same arguments, does see its data (so a leak would
 * have been caught).
 *
 * Issue 16, least privilege: the victim's own key with only the `read` permission lists only read
 * tools that are not webhook tools, and calls every other tool with the victim's own ids: each call
 * is refused naming the permission it lacks, and no table changes.
 *
 * Issue 10, section 1: the victim's own key limited (LINES) to its phone line calls every webhook
 * tool on the victim's endpoints scoped to all lines, to that line, to the other line and to both.
 * Only the endpoint scoped to its line answers; every other one (and its deliveries) answers exactly
 * as an unknown id, holds nothing back to the key and changes no table, and afterwards its events
 * still go to its own URL and none to the URLs the key tried to set.
 */
interface Actor {
  name: string;
  key: string;
  sameOrg: boolean;
}

interface Call {
  actor: string;
  tool: string;
  args: Record<string, unknown>;
  outcome: 'refused' | 'empty' | 'answered';
  detail: string;
}

const M = randomBytes(4).toString('hex');

type Scope = 'all lines' | 'its line' | 'another line' | 'both lines';
const SCOPES: Scope[] = ['all lines', 'its line', 'another line', 'both lines'];
/** The ten webhook tools; delete_webhook last, so the visible endpoint answers every other tool first. */
const WEBHOOK_TOOLS = [
  'list_webhooks',
  'get_webhook',
  'list_webhook_deliveries',
  'get_webhook_delivery',
  'resend_webhook_delivery',
  'recover_webhook_deliveries',
  'register_webhook',
  'update_webhook',
  'rotate_webhook_secret',
  'delete_webhook',
];

interface ScopedCall {
  scope: Scope;
  tool: string;
  outcome: 'not found' | 'refused' | 'answered';
  /** For not found: the answer was exactly the one an unknown id gets. */
  asUnknownId?: boolean;
}

/** Values for the arguments that are not ids, whatever tool asks for them: `url` to set, the victim's `partner`, a search `query`. */
function plainArgs(url: string, partner: string, query: string): Record<string, unknown> {
  return {
    url,
    events: ['message.received'],
    smsBody: 'hello',
    body: 'hello',
    subject: 'hello',
    to: 'someone@example.com',
    displayName: 'Changed',
    identities: [{ kind: 'PHONE', value: partner }],
    add: [{ name: 'attacker-label' }],
    status: 'disabled',
    notes: 'changed',
    query,
    // recover_webhook_deliveries: a window the victim's deliveries fall in (an hour back, within every bound).
    since: new Date(Date.now() - 3_600_000).toISOString(),
  };
}

describe('reliability: authorization matrix', () => {
  let t: MessagingTestApp;
  let victim: Session;
  const result = new ResultBuilder('authz-matrix', 'Authorization matrix: every tool × foreign ids, LINES key, MEMBER, revoked key');

  beforeAll(async () => {
    t = await createMessagingTestApp();
  });
  afterAll(async () => {
    result.record();
    await t?.close();
  });

  it('leaks nothing and changes nothing', async () => {
    const admin = t.admin;
    const tool = async (key: string, name: string, args: Record<string, unknown>) => {
      const res = await rpc(t, key, 'tools/call', { name, arguments: args });
      if (res.status !== 200 || !res.body.result || res.body.result.isError) throw new Error(`${name}: ${res.status} ${res.text}`);
      return res.body.result.structuredContent;
    };

    // --- the victim and its data ------------------------------------------------------------------
    victim = await createSession(admin, { tier: 'POWER', lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    const vEmail = victim.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
    const vPhone = victim.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const partner = partnerPhone();
    const { endpoint, secret } = await tool(victim.apiKey, 'register_webhook', {
      url: `${t.receiverUrl}/victim-${M}`,
      events: ['message.received', 'thread.created', 'attachment.extracted'],
    });
    // The same user's endpoints scoped to one line, to the other, and to both (issue 10, section 1).
    const phoneScope = { allChannels: false, channels: [{ channelType: 'PHONE_NUMBER', channelId: vPhone.id }] };
    const emailScope = { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: vEmail.id }] };
    const channelScopes: Record<Scope, object> = {
      'all lines': { allChannels: true },
      'its line': phoneScope,
      'another line': emailScope,
      'both lines': { allChannels: false, channels: [...phoneScope.channels, ...emailScope.channels] },
    };
    const scoped = { 'all lines': { id: endpoint.id, url: `/victim-${M}`, secret } } as Record<Scope, { id: string; url: string; secret: string }>;
    for (const scope of SCOPES.slice(1)) {
      const url = `/victim-${scope.replace(' ', '-')}-${M}`;
      const registered = await tool(victim.apiKey, 'register_webhook', {
        url: `${t.receiverUrl}${url}`,
        events: ['message.received', 'thread.created', 'attachment.extracted'],
        channelScope: channelScopes[scope],
      });
      scoped[scope] = { id: registered.endpoint.id, url, secret: registered.secret };
    }
    const endpointIds = SCOPES.map((scope) => scoped[scope].id);
    const sms = await t
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to: vPhone.address, from: partner, body: `victim sms ${M}`, providerMessageId: `authz-${M}` });
    expect(sms.status).toBe(201);
    const pdf = readFileSync(join(ROOT, 'test/fixtures/emails/invoice-42.pdf'));
    const raw = emailWithPdf(vEmail.address, `victim.partner.${M}@example.org`, pdf, `Victim subject ${M}`).replace(/invoice\.pdf/g, `victim-${M}.pdf`);
    const mail = await t.http().post('/ingest/email/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).set('Content-Type', 'message/rfc822').send(raw);
    expect(mail.status).toBe(201);
    const { contact } = await tool(victim.apiKey, 'create_contact', { displayName: `Victim Contact ${M}`, identities: [{ kind: 'PHONE', value: partner }] });
    await tool(victim.apiKey, 'label_thread', { threadId: sms.body.threadId, add: [{ name: `victim-label-${M}` }] });
    const agent = (await admin.post(`/admin/lines/${vPhone.id}/agents`, { name: `Victim Agent ${M}`, mode: 'DRAFT' }).expect(201)).body;
    const turn = (
      await t
        .http()
        .post(`/api/agents/${agent.id}/turns`)
        .set('Authorization', `Bearer ${victim.apiKey}`)
        .send({ threadId: sms.body.threadId, body: `victim draft ${M}` })
        .expect(201)
    ).body.turn;

    // Quiet before measuring: every delivery done, every attachment extracted, every event relayed.
    await waitFor(
      async () => {
        const [q] = await t.db.query(
          `SELECT (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ANY ($1::uuid[]) AND status <> 'succeeded')::int AS open,
                (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $3)::int AS deliveries,
                (SELECT count(DISTINCT endpoint_id) FROM webhook_deliveries WHERE endpoint_id = ANY ($1::uuid[]))::int AS receiving,
                (SELECT count(*) FROM attachments WHERE message_id = $2 AND extraction_status NOT IN ('extracted', 'failed'))::int AS extracting,
                (SELECT count(*) FROM outbox_events WHERE relayed_at IS NULL)::int AS unrelayed`,
          [endpointIds, mail.body.messageId, endpoint.id],
        );
        return q.open === 0 && q.deliveries >= 4 && q.receiving === endpointIds.length && q.extracting === 0 && q.unrelayed === 0;
      },
      'the victim data to settle (deliveries, extraction, relay)',
      90_000,
      250,
    );
    const [delivery] = await t.db.query(`SELECT id, event_id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at LIMIT 1`, [endpoint.id]);
    // One of them failed, in the window recover_webhook_deliveries is called with: a recovery by
    // anyone but the victim would copy it, and the table checksums would show it.
    await t.db.query(`UPDATE webhook_deliveries SET status = 'failed', last_status_code = 500, last_error = 'HTTP 500' WHERE id = $1`, [delivery.id]);
    const [attachment] = await t.db.query(`SELECT id FROM attachments WHERE message_id = $1`, [mail.body.messageId]);
    const [identity] = await t.db.query(`SELECT id FROM identities WHERE org_id = $1 AND value = $2`, [victim.orgId, partner]);
    const eventIds: string[] = (await t.db.query(`SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1`, [endpoint.id])).map(
      (r: { event_id: string }) => r.event_id,
    );
    const scopedDeliveries: Array<{ id: string; event_id: string; endpoint_id: string }> = await t.db.query(
      `SELECT id, event_id, endpoint_id FROM webhook_deliveries WHERE endpoint_id = ANY ($1::uuid[]) ORDER BY created_at, id`,
      [endpointIds],
    );

    // --- the callers ------------------------------------------------------------------------------
    const sameOrgOwner = await createSession(admin, { orgId: victim.orgId, lines: ['PHONE_NUMBER'] });
    const linesUser = await createSession(admin, { orgId: victim.orgId, lines: ['PHONE_NUMBER'] });
    for (const line of victim.lines) await admin.put(`/admin/lines/${line.id}/members/${linesUser.userId}`).expect(200);
    const linesKey = (
      await admin
        .post(`/admin/users/${linesUser.userId}/api-keys`, { name: 'own line only', channelAccess: { mode: 'LINES', lines: [linesUser.lines[0].address] } })
        .expect(201)
    ).body.key;
    const member = await createSession(admin, { orgId: victim.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const otherOrg = await createSession(admin, { tier: 'POWER', lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    const { contact: otherContact } = await tool(otherOrg.apiKey, 'create_contact', {
      displayName: 'Other org contact',
      identities: [{ kind: 'PHONE', value: partnerPhone() }],
    });
    const revoked = (await admin.post(`/admin/users/${victim.userId}/api-keys`, { name: 'to revoke', channelAccess: { mode: 'ALL' } }).expect(201)).body;
    await admin.delete(`/admin/api-keys/${revoked.id}`).expect(204);
    const actors: Actor[] = [
      { name: 'same-org OWNER', key: sameOrgOwner.apiKey, sameOrg: true },
      { name: 'LINES key outside its lines', key: linesKey, sameOrg: true },
      { name: 'same-org MEMBER', key: member.apiKey, sameOrg: true },
      { name: 'other-org OWNER', key: otherOrg.apiKey, sameOrg: false },
      { name: 'revoked key', key: revoked.key, sameOrg: true },
    ];

    // What must never show: the victim's ids, secrets and contents. The contact's id and name are
    // the org's (shared); only another org must not see them. The partner's number is the
    // contact's identity, in view only for keys that may use the victim's lines.
    const common: Record<string, string> = {
      endpointId: endpoint.id,
      secret,
      endpointUrl: `victim-${M}`,
      deliveryId: delivery.id,
      ...Object.fromEntries(eventIds.map((id, i) => [`eventId${i}`, id])),
      smsThread: sms.body.threadId,
      smsMessage: sms.body.messageId,
      emailThread: mail.body.threadId,
      emailMessage: mail.body.messageId,
      attachmentId: attachment.id,
      attachmentName: `victim-${M}.pdf`,
      smsBody: `victim sms ${M}`,
      subject: `Victim subject ${M}`,
      partnerEmail: `victim.partner.${M}`,
      label: `victim-label-${M}`,
      agentId: agent.id,
      agentName: `Victim Agent ${M}`,
      turnId: turn.id,
      draft: `victim draft ${M}`,
      phoneLine: vPhone.id,
      emailLine: vEmail.id,
      phoneAddress: vPhone.address,
      emailAddress: vEmail.address,
      partnerPhone: partner,
      identityId: identity.id,
      victimUser: victim.userId,
      ...Object.fromEntries(
        SCOPES.slice(1).flatMap((scope) => [
          [`${scope} endpoint`, scoped[scope].id],
          [`${scope} url`, scoped[scope].url],
          [`${scope} secret`, scoped[scope].secret],
        ]),
      ),
      ...Object.fromEntries(
        scopedDeliveries.flatMap((d, i) => [
          [`scoped delivery ${i}`, d.id],
          [`scoped eventId ${i}`, d.event_id],
        ]),
      ),
    };
    const orgOnly: Record<string, string> = { contactId: contact.id, contactName: `Victim Contact ${M}` };

    // --- the tools and their arguments ------------------------------------------------------------
    const listed = await rpc(t, victim.apiKey, 'tools/list');
    const tools: Array<{
      name: string;
      inputSchema: { properties?: Record<string, { format?: string }>; required?: string[] };
      annotations: { readOnlyHint: boolean };
    }> = listed.body.result.tools;
    const memberList = (await rpc(t, member.apiKey, 'tools/list')).body.result.tools.map((x: { name: string }) => x.name);
    const victimIds: Record<string, unknown[]> = {
      turnId: [turn.id],
      endpointId: [endpoint.id],
      threadId: [sms.body.threadId, mail.body.threadId],
      messageId: [sms.body.messageId, mail.body.messageId],
      agentId: [agent.id],
      deliveryId: [delivery.id],
      attachmentId: [attachment.id],
      contactId: [contact.id],
      contactIds: [[contact.id, otherContact.id]],
      into: [contact.id],
      lineId: [vPhone.id, vEmail.id],
      fromAccountId: [vEmail.id],
      identityId: [identity.id],
      channelScope: [
        { allChannels: false, channels: [{ channelType: 'PHONE_NUMBER', channelId: vPhone.id }] },
        { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: vEmail.id }] },
      ],
    };
    // search_messages: words of the victim's SMS (not all of them, so the body itself would be a leak).
    const plain = plainArgs(`${t.receiverUrl}/attacker-${M}`, partner, `victim ${M}`);
    /** One call with every id field set to the victim's first id, then one more per further id of a field. */
    const variants = (schema: { properties?: Record<string, { format?: string }>; required?: string[] }, name: string): Array<Record<string, unknown>> => {
      const props = Object.entries(schema.properties ?? {});
      const base: Record<string, unknown> = {};
      const idFields = props.filter(([k]) => k in victimIds).map(([k]) => k);
      for (const [k, p] of props) {
        if (k in victimIds) base[k] = victimIds[k][0];
        else if (p.format === 'uuid') throw new Error(`the matrix has no victim id for ${name}.${k}: add one`);
        else if ((schema.required ?? []).includes(k) || (name.startsWith('update_') && k in plain)) {
          if (!(k in plain)) throw new Error(`the matrix has no value for ${name}.${k}: add one`);
          base[k] = plain[k];
        }
      }
      if (name === 'update_webhook') delete base.channelScope; // one change at a time: the url (and status) below
      const out = [base];
      for (const k of idFields) for (const v of victimIds[k].slice(1)) out.push({ ...base, [k]: v });
      if (name === 'update_webhook') out.push({ endpointId: endpoint.id, channelScope: victimIds.channelScope[0] });
      // search_messages: also over every thread the caller may see, not only the victim's (which is not found).
      if (name === 'search_messages') out.push({ query: plain.query });
      return out;
    };
    const contactWrites = new Set(['create_contact', 'update_contact', 'merge_contacts']);

    const checksum = async (): Promise<Record<string, string>> => {
      const tables: string[] = (await t.db.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)).map(
        (r: { tablename: string }) => r.tablename,
      );
      // api_keys.last_used_at is the bookkeeping of authenticating the call (written at most once a
      // minute per key), not something the call did: every row is compared without it.
      const row = (x: string) => `(to_jsonb(${x}) - 'last_used_at')::text`;
      const [sums] = await t.db.query(
        `SELECT ${tables.map((name) => `(SELECT md5(coalesce(string_agg(${row('x')}, '|' ORDER BY ${row('x')}), '')) FROM "${name}" x) AS "${name}"`).join(', ')}`,
      );
      return sums;
    };
    const leaks = (text: string, request: string, markers: Record<string, string>) =>
      Object.entries(markers)
        .filter(([, value]) => text.includes(value) && !request.includes(value))
        .map(([name]) => name);

    const calls: Call[] = [];
    const problems: string[] = [];
    let before = await checksum();
    for (const actor of actors) {
      for (const { name, inputSchema } of tools) {
        if (actor.name !== 'revoked key') {
          // create_contact takes nobody's ids (it only creates in the caller's own org); same-org contact writes are allowed by design.
          if (name === 'create_contact') continue;
          if (actor.sameOrg && contactWrites.has(name)) continue;
        }
        for (const args of variants(inputSchema, name)) {
          const res = await rpc(t, actor.key, 'tools/call', { name, arguments: args });
          const request = JSON.stringify(args);
          const markers = actor.sameOrg ? common : { ...common, ...orgOnly };
          const leaked = leaks(res.text, request, markers);
          const after = await checksum();
          const changed = Object.keys(after).filter((k) => after[k] !== before[k]);
          before = after;
          const r = res.body?.result;
          const outcome: Call['outcome'] =
            res.status !== 200 || res.body?.error || r?.isError ? 'refused' : /"(\w+)":\[\]/.test(res.text) || /:null\b/.test(res.text) ? 'empty' : 'answered';
          const detail =
            res.status !== 200
              ? `HTTP ${res.status}`
              : res.body?.error
                ? `JSON-RPC ${res.body.error.code}`
                : r?.isError
                  ? r.content[0].text.slice(0, 80)
                  : res.text.slice(0, 120);
          calls.push({ actor: actor.name, tool: name, args, outcome, detail });
          if (leaked.length) problems.push(`${actor.name} ${name} ${request}: LEAKED ${leaked.join(', ')}: ${res.text.slice(0, 200)}`);
          if (changed.length) problems.push(`${actor.name} ${name} ${request}: CHANGED ${changed.join(', ')} (${outcome}: ${detail})`);
          if (outcome !== 'refused' && !tools.find((x) => x.name === name)!.annotations.readOnlyHint)
            problems.push(`${actor.name} ${name} ${request}: a write tool was not refused: ${detail}`);
          if (actor.name === 'revoked key' && res.status !== 401) problems.push(`revoked key ${name}: HTTP ${res.status}, not 401`);
        }
      }
    }

    // The control: the victim's own key sees its data with the same read calls.
    let controls = 0;
    const blind: string[] = [];
    for (const { name, inputSchema, annotations } of tools) {
      if (!annotations.readOnlyHint) continue;
      const args = variants(inputSchema, name)[0];
      const res = await rpc(t, victim.apiKey, 'tools/call', { name, arguments: args });
      if (leaks(res.text, JSON.stringify(args), { ...common, ...orgOnly }).length > 0) controls += 1;
      else blind.push(name);
    }

    // --- issue 16: the victim's own key with only `read` calls every tool that needs send or webhooks ---
    const readOnlyKey = (await admin.post(`/admin/users/${victim.userId}/api-keys`, { name: 'read only', permissions: ['read'] }).expect(201)).body.key;
    const readOnlyList: Array<{ name: string; annotations: { readOnlyHint: boolean } }> = (await rpc(t, readOnlyKey, 'tools/list')).body.result.tools;
    for (const listedTool of readOnlyList) {
      if (!listedTool.annotations.readOnlyHint || listedTool.name.includes('webhook')) problems.push(`read-only key: tools/list shows ${listedTool.name}`);
    }
    const gated = tools.filter((x) => !readOnlyList.some((y) => y.name === x.name));
    let readOnlyCalls = 0;
    let readOnlyRefused = 0;
    before = await checksum();
    for (const { name, inputSchema } of gated) {
      for (const args of variants(inputSchema, name)) {
        const res = await rpc(t, readOnlyKey, 'tools/call', { name, arguments: args });
        const request = JSON.stringify(args);
        const after = await checksum();
        const changed = Object.keys(after).filter((k) => after[k] !== before[k]);
        before = after;
        readOnlyCalls += 1;
        const r = res.body?.result;
        const text: string = r?.isError ? r.content[0].text : '';
        const where = `read-only key: ${name} ${request}`;
        if (
          res.status === 200 &&
          r?.isError &&
          [
            `${name} needs the send permission, which this API key does not have (it has read)`,
            `${name} needs the webhooks permission, which this API key does not have (it has read)`,
          ].includes(text)
        )
          readOnlyRefused += 1;
        else problems.push(`${where}: not refused for its permission: HTTP ${res.status} ${res.text.slice(0, 200)}`);
        if (changed.length) problems.push(`${where}: CHANGED ${changed.join(', ')}`);
        const leaked = leaks(res.text, request, common);
        if (leaked.length) problems.push(`${where}: LEAKED ${leaked.join(', ')}: ${res.text.slice(0, 200)}`);
      }
    }

    // --- issue 10, section 1: the victim's own key limited to its phone line -----------------------
    const scopedKey = (
      await admin
        .post(`/admin/users/${victim.userId}/api-keys`, { name: 'phone line only', channelAccess: { mode: 'LINES', lines: [vPhone.address] } })
        .expect(201)
    ).body.key;
    expect(
      tools
        .filter((x) => x.name.includes('webhook'))
        .map((x) => x.name)
        .sort(),
    ).toEqual([...WEBHOOK_TOOLS].sort());
    // What the key must never be shown: everything of the endpoints not scoped to its line, and the other line's contents.
    const hiddenMarkers: Record<string, string> = {
      ...Object.fromEntries(
        SCOPES.filter((scope) => scope !== 'its line').flatMap((scope) => [
          [`${scope} endpoint`, scoped[scope].id],
          [`${scope} url`, scoped[scope].url],
          [`${scope} secret`, scoped[scope].secret],
        ]),
      ),
      ...Object.fromEntries(
        scopedDeliveries
          .filter((d) => d.endpoint_id !== scoped['its line'].id)
          .flatMap((d, i) => [
            [`delivery ${i}`, d.id],
            [`eventId ${i}`, d.event_id],
          ]),
      ),
      emailThread: mail.body.threadId,
      emailMessage: mail.body.messageId,
      subject: `Victim subject ${M}`,
      partnerEmail: `victim.partner.${M}`,
      attachmentName: `victim-${M}.pdf`,
    };
    const attackerUrl = (scope: Scope) => `${t.receiverUrl}/scoped-key-${scope.replace(' ', '-')}-${M}`;
    const scopedArgs = (name: string, scope: Scope): Array<Record<string, unknown>> => {
      const id = scoped[scope].id;
      const deliveryId = scopedDeliveries.find((d) => d.endpoint_id === id)!.id;
      switch (name) {
        case 'list_webhooks':
          return [{}];
        case 'register_webhook':
          return [{ url: attackerUrl(scope), events: ['message.received'], channelScope: channelScopes[scope] }];
        case 'resend_webhook_delivery':
        case 'get_webhook_delivery':
          return [{ deliveryId }];
        case 'recover_webhook_deliveries':
          return [{ endpointId: id, since: plain.since }];
        // Redirect it, or narrow it into the key's own line (which would take it over).
        case 'update_webhook':
          return [
            { endpointId: id, url: attackerUrl(scope), status: 'disabled' },
            { endpointId: id, url: attackerUrl(scope), channelScope: phoneScope },
          ];
        default:
          return [{ endpointId: id }];
      }
    };
    const scopedCalls: ScopedCall[] = [];
    before = await checksum();
    for (const scope of SCOPES) {
      for (const name of WEBHOOK_TOOLS) {
        if (name === 'list_webhooks' && scope !== 'its line') continue; // takes no id: once is enough
        for (const args of scopedArgs(name, scope)) {
          const res = await rpc(t, scopedKey, 'tools/call', { name, arguments: args });
          const request = JSON.stringify(args);
          const after = await checksum();
          const changed = Object.keys(after).filter((k) => after[k] !== before[k]);
          before = after;
          const r = res.body?.result;
          const text: string = r?.isError ? r.content[0].text : '';
          const leaked = leaks(res.text, request, hiddenMarkers);
          if (leaked.length) problems.push(`${scope}: ${name} ${request}: LEAKED ${leaked.join(', ')}: ${res.text.slice(0, 200)}`);
          const where = `LINES key on its user's endpoint scoped to ${scope}: ${name} ${request}`;
          if (res.status !== 200 || res.body?.error) {
            problems.push(`${where}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
            continue;
          }
          if (name === 'list_webhooks') {
            const ids = (r.structuredContent.endpoints as Array<{ id: string }>).map((e) => e.id);
            if (JSON.stringify(ids) !== JSON.stringify([scoped['its line'].id])) problems.push(`${where}: listed ${ids.join(', ')}`);
            scopedCalls.push({ scope, tool: name, outcome: 'answered' });
          } else if (name === 'register_webhook') {
            const outcome = r.isError ? 'refused' : 'answered';
            if ((outcome === 'answered') !== (scope === 'its line')) problems.push(`${where}: ${outcome}: ${text || res.text.slice(0, 120)}`);
            if (outcome === 'refused' && changed.length) problems.push(`${where}: refused, but CHANGED ${changed.join(', ')}`);
            scopedCalls.push({ scope, tool: name, outcome });
          } else if (scope === 'its line') {
            if (r.isError) problems.push(`${where}: the endpoint within its line was refused: ${text}`);
            scopedCalls.push({ scope, tool: name, outcome: r.isError ? 'refused' : 'answered' });
          } else {
            // What the same tool answers for an id that never existed, with that id in place of this one.
            const id = String(args.endpointId ?? args.deliveryId);
            const ghost = randomUUID();
            const ghostRes = await rpc(t, scopedKey, 'tools/call', { name, arguments: JSON.parse(request.replaceAll(id, ghost)) });
            const expected = ghostRes.body?.result?.isError ? String(ghostRes.body.result.content[0].text).replaceAll(ghost, id) : null;
            const asUnknownId = r.isError && text === expected;
            if (!r.isError) problems.push(`${where}: ANSWERED ${res.text.slice(0, 200)}`);
            else if (!asUnknownId) problems.push(`${where}: answered "${text}", an unknown id gets "${expected}"`);
            if (changed.length) problems.push(`${where}: CHANGED ${changed.join(', ')}`);
            scopedCalls.push({ scope, tool: name, outcome: r.isError ? 'not found' : 'answered', asUnknownId });
          }
        }
      }
    }
    // Events of both lines still reach the hidden endpoints' own URLs, and none the URLs the key tried.
    const requestsTo = (path: string) => t.receiver.requests.filter((q) => q.url === path).length;
    const beforeEvents = Object.fromEntries(SCOPES.map((scope) => [scope, requestsTo(scoped[scope].url)]));
    await t
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to: vPhone.address, from: partner, body: `after the scoped key ${M}`, providerMessageId: `authz-after-${M}` })
      .expect(201);
    await t
      .http()
      .post('/ingest/email/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .set('Content-Type', 'message/rfc822')
      .send(
        `From: <victim.partner.${M}@example.org>\r\nTo: <${vEmail.address}>\r\nSubject: after ${M}\r\nMessage-ID: <after-${M}@example.org>\r\n\r\nafter the scoped key\r\n`,
      )
      .expect(201);
    const hiddenScopes = SCOPES.filter((scope) => scope !== 'its line');
    await waitFor(
      async () => hiddenScopes.every((scope) => requestsTo(scoped[scope].url) > beforeEvents[scope]),
      'the hidden endpoints to receive the new events',
      15_000,
      100,
    ).catch((error: Error) => problems.push(`after the LINES key's attempts: ${error.message}`));
    const receivedAfter = hiddenScopes.map((scope) => requestsTo(scoped[scope].url) - beforeEvents[scope]);
    const atAttacker = t.receiver.requests.filter((q) => q.url.includes('/scoped-key-') && !q.url.includes('its-line')).length;
    if (atAttacker) problems.push(`${atAttacker} requests reached a URL the LINES key set on an endpoint hidden from it`);

    const by = (pred: (c: Call) => boolean) => calls.filter(pred).length;
    result.load = '—';
    result.faults = '—';
    result.badInputs = `${fmt(calls.length)} calls: ${tools.length} tools × 5 callers with the victim's ids; ${fmt(scopedCalls.length)} calls: ${WEBHOOK_TOOLS.length} webhook tools × a LINES key × its user's endpoints of 4 scopes`;
    result.lost = null;
    result.duplicates = '—';
    result.figure('tools in the OWNER tools/list', `${tools.length}: ${tools.map((x) => x.name).join(', ')}`);
    result.figure('tools in the MEMBER tools/list', `${memberList.length} (every tool's lowest role is MEMBER)`);
    for (const actor of actors) {
      const mine = calls.filter((c) => c.actor === actor.name);
      result.figure(
        `${actor.name}: calls refused / empty read / other read`,
        `${fmt(mine.filter((c) => c.outcome === 'refused').length)} / ${fmt(mine.filter((c) => c.outcome === 'empty').length)} / ${fmt(mine.filter((c) => c.outcome === 'answered').length)}`,
      );
    }
    result.figure('answers holding a victim id, secret or content', fmt(problems.filter((p) => p.includes('LEAKED')).length));
    result.figure('calls after which any table changed', fmt(problems.filter((p) => p.includes('CHANGED')).length));
    result.figure('write tools not refused', fmt(problems.filter((p) => p.includes('write tool')).length));
    result.figure(
      "control: read tools where the victim's own key sees its data",
      `${controls} of ${controls + blind.length}${blind.length ? ` (not: ${blind.join(', ')})` : ''}`,
    );
    const scopeFigure = (scope: Scope) => {
      const mine = scopedCalls.filter((c) => c.scope === scope);
      return `${mine.filter((c) => c.outcome === 'not found').length} / ${mine.filter((c) => c.outcome === 'refused').length} / ${mine.filter((c) => c.outcome === 'answered').length}`;
    };
    result.figure(
      "LINES key (one line) on its own user's endpoints: not found / refused / answered, for the endpoint scoped to all lines; its line; another line; both",
      SCOPES.map(scopeFigure).join('; '),
    );
    result.figure(
      "victim's read-only key (issue 16): tools listed / tools needing send or webhooks / calls refused for the permission, of calls",
      `${readOnlyList.length} / ${gated.length} / ${fmt(readOnlyRefused)} of ${fmt(readOnlyCalls)}`,
    );
    const notFound = scopedCalls.filter((c) => c.outcome === 'not found');
    result.figure("hidden-endpoint answers identical to an unknown id's", `${notFound.filter((c) => c.asUnknownId).length} of ${notFound.length}`);
    result.figure(
      "events after the attempts: at the hidden endpoints' own URLs (all lines, another line, both) / at URLs the key tried to set",
      `${receivedAfter.join(', ')} / ${atAttacker}`,
    );
    result.figure('left out', "create_contact (takes no ids); update_contact and merge_contacts for same-org callers (contacts are the org's by design)");
    if (problems.length) result.notes.push(...problems.slice(0, 10));
    const answered = calls.filter((c) => c.outcome === 'answered');
    if (answered.length)
      result.notes.push(`reads that answered (without victim data): ${[...new Set(answered.map((c) => `${c.actor}: ${c.tool}`))].join('; ')}`);

    expect(memberList.sort()).toEqual(tools.map((x) => x.name).sort());
    expect(problems).toEqual([]);
    expect(readOnlyRefused).toBe(readOnlyCalls);
    expect(gated.length).toBeGreaterThan(10);
    expect(by((c) => c.actor === 'revoked key' && c.outcome !== 'refused')).toBe(0);
    expect(blind.filter((name) => !['list_contacts'].includes(name))).toEqual([]);
    result.passed = true;
  });

  /**
   * Issue 30: access to a line ends, its deliveries with it. A MEMBER whose membership of a phone
   * line is removed, and an OWNER whose phone line is deleted, each with an all-channels endpoint
   * that got (and failed) one delivery of a message on that line and one on a line they keep: every
   * delivery tool and the webhook pages answer the lost line's delivery as an unknown id, list and
   * recover leave it out, and nothing of it reaches the new URL they point the endpoint at.
   */
  it('a removed member and a deleted line get nothing of the line through the delivery tools and pages', async () => {
    const passedBefore = result.passed;
    result.passed = false;
    const problems: string[] = [];
    const figures: string[] = [];
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const call = async (key: string, name: string, args: Record<string, unknown>) => {
      const res = await rpc(t, key, 'tools/call', { name, arguments: args });
      if (res.status !== 200 || !res.body.result) throw new Error(`${name}: ${res.status} ${res.text}`);
      return {
        text: res.text,
        isError: Boolean(res.body.result.isError),
        error: res.body.result.content?.[0]?.text as string,
        data: res.body.result.structuredContent,
      };
    };
    for (const [label, role] of [
      ['removed member', 'MEMBER'],
      ['deleted line', 'OWNER'],
    ] as const) {
      const s = await createSession(t.admin, { role, lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
      const [lost, kept] = s.lines;
      const tag = `${label.replace(' ', '-')}-${M}`;
      const { endpoint } = await call(s.apiKey, 'register_webhook', { url: `${t.receiverUrl}/lost-${tag}`, events: ['message.received'] }).then((r) => r.data);
      for (const [line, body] of [
        [lost, `LOST LINE CONFIDENTIAL ${tag}`],
        [kept, `kept line ${tag}`],
      ] as const) {
        await t
          .http()
          .post('/ingest/sms/inbound')
          .set('Authorization', `Bearer ${INGEST_TOKEN}`)
          .send({ to: line.address, from: partnerPhone(), body, providerMessageId: `lost-${line.id}` })
          .expect(201);
      }
      const rows: Array<{ id: string; event_id: string; line_id: string }> = await waitFor(
        async () => {
          const found = await t.db.query(`SELECT id, event_id, line_id, status FROM webhook_deliveries WHERE endpoint_id = $1`, [endpoint.id]);
          return found.length === 2 && found.every((r: { status: string }) => r.status === 'succeeded') && found;
        },
        `both deliveries of the ${label} case`,
        30_000,
      );
      // Both failed, as an endpoint that was down: recover_webhook_deliveries would copy them.
      await t.db.query(`UPDATE webhook_deliveries SET status = 'failed', last_status_code = 500, last_error = 'HTTP 500' WHERE endpoint_id = $1`, [
        endpoint.id,
      ]);
      const hidden = rows.find((r) => r.line_id === lost.id)!;
      const control = rows.find((r) => r.line_id === kept.id)!;
      const browser = await signInBrowser(t, s.userId);
      const markers: Record<string, string> = { deliveryId: hidden.id, eventId: hidden.event_id, body: `LOST LINE CONFIDENTIAL ${tag}` };
      const leaksOf = (text: string, request: string) =>
        Object.entries(markers)
          .filter(([, v]) => text.includes(v) && !request.includes(v))
          .map(([k]) => k);
      if (!(await call(s.apiKey, 'get_webhook_delivery', { deliveryId: hidden.id })).text.includes(markers.body))
        problems.push(`${label}: control: the lost line's delivery was not readable before`);

      if (label === 'removed member') await t.admin.delete(`/admin/lines/${lost.id}/members/${s.userId}`).expect(204);
      else await t.admin.delete(`/admin/lines/${lost.id}`).expect(204);
      const newPath = `/new-url-${tag}`;
      await call(s.apiKey, 'update_webhook', { endpointId: endpoint.id, url: `${t.receiverUrl}${newPath}` });

      let calls = 0;
      let leaked = 0;
      let asUnknown = 0;
      const check = (where: string, text: string, request: string) => {
        calls += 1;
        const found = leaksOf(text, request);
        if (found.length) {
          leaked += 1;
          problems.push(`${label}: ${where}: LEAKED ${found.join(', ')}: ${text.slice(0, 200)}`);
        }
      };
      for (const args of [{ endpointId: endpoint.id }, { endpointId: endpoint.id, status: 'failed' }]) {
        const r = await call(s.apiKey, 'list_webhook_deliveries', args);
        check(`list_webhook_deliveries ${JSON.stringify(args)}`, r.text, JSON.stringify(args));
        const ids = ((r.data?.deliveries ?? []) as Array<{ id: string }>).map((d) => d.id);
        if (JSON.stringify(ids) !== JSON.stringify([control.id]))
          problems.push(`${label}: list_webhook_deliveries ${JSON.stringify(args)} listed ${ids.join(', ')}`);
      }
      for (const name of ['get_webhook_delivery', 'resend_webhook_delivery']) {
        const r = await call(s.apiKey, name, { deliveryId: hidden.id });
        check(name, r.text, hidden.id);
        const ghost = randomUUID();
        const g = await call(s.apiKey, name, { deliveryId: ghost });
        if (r.isError && g.isError && r.error === g.error.replaceAll(ghost, hidden.id)) asUnknown += 1;
        else problems.push(`${label}: ${name}: answered "${r.error ?? r.text.slice(0, 120)}", an unknown id gets "${g.error}"`);
      }
      const recovered = await call(s.apiKey, 'recover_webhook_deliveries', { endpointId: endpoint.id, since });
      check('recover_webhook_deliveries', recovered.text, endpoint.id);
      if (recovered.data?.queued !== 1) problems.push(`${label}: recover_webhook_deliveries queued ${recovered.data?.queued} (only the kept line's 1 is due)`);
      // The web pages.
      const base = `/settings/webhooks/${endpoint.id}`;
      const page = async (path: string) => t.http().get(path).set('Cookie', browser.cookie);
      const form = async (path: string, fields: Record<string, string> = {}) => postForm(t, browser, path, fields);
      const ghost = randomUUID();
      const [detail, ghostDetail] = [await page(`${base}/deliveries/${hidden.id}`), await page(`${base}/deliveries/${ghost}`)];
      check('web: the delivery page', detail.text, hidden.id);
      if (detail.status === 404 && detail.text.replaceAll(hidden.id, '<id>') === ghostDetail.text.replaceAll(ghost, '<id>')) asUnknown += 1;
      else problems.push(`${label}: web: the delivery page answered ${detail.status}, not the unknown id's 404 page`);
      const log = await page(base);
      check('web: the endpoint page', log.text, endpoint.id);
      const resent = await form(`${base}/deliveries/${hidden.id}/resend`);
      check('web: resend', resent.text, hidden.id);
      if (resent.status === 404) asUnknown += 1;
      else problems.push(`${label}: web: resend answered ${resent.status}`);
      const webRecover = await form(`${base}/recover`, { since: since.slice(0, 16) });
      check('web: recover', webRecover.text, endpoint.id);
      if (webRecover.headers.location !== `${base}?recovered=0`)
        problems.push(`${label}: web: recover answered ${webRecover.status} ${webRecover.headers.location}`);

      // The kept line's copy arrives at the new URL; the lost line's delivery is untouched and never copied.
      await waitFor(() => t.receiver.requests.some((q) => q.url === newPath), `the kept line's copy at ${newPath}`, 30_000).catch((e: Error) =>
        problems.push(`${label}: ${e.message}`),
      );
      const [state] = await t.db.query(
        `SELECT (SELECT count(*) FROM webhook_deliveries WHERE resent_from_id = $1)::int AS copies,
                (SELECT status || ',' || (recovered_at IS NULL) FROM webhook_deliveries WHERE id = $1) AS original,
                (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $2 AND status IN ('pending', 'retrying'))::int AS owed`,
        [hidden.id, endpoint.id],
      );
      if (state.copies !== 0 || state.original !== 'failed,true')
        problems.push(`${label}: the lost line's delivery was copied or changed: ${JSON.stringify(state)}`);
      const atNewUrl = t.receiver.requests.filter((q) => q.url === newPath);
      const carrying = atNewUrl.filter((q) => q.body.includes(markers.body)).length;
      if (carrying) problems.push(`${label}: ${carrying} request(s) at the new URL carried the lost line's message`);
      leaked += carrying;
      figures.push(
        `${label} (${role}): ${calls} calls, ${leaked} leaks, ${asUnknown} of 4 as an unknown id; at the new URL ${atNewUrl.length} (kept line) / ${carrying} (lost line)`,
      );
    }
    result.badInputs = `${result.badInputs || '—'}; ${figures.length} cases of access ended (a membership removed, a line deleted) × the delivery tools and webhook pages`;
    result.figure(
      'issue 30, access ended (membership removed / line deleted): delivery tools and webhook pages: calls, answers or requests holding the lost line, answers as an unknown id (get, resend, page, web resend), requests at the new URL',
      figures.join('; '),
    );
    if (problems.length) result.notes.push(...problems.slice(0, 10));
    expect(problems).toEqual([]);
    result.passed = passedBefore;
  });

  /**
   * Issue 30: the REST routes that act for a key pass the same check as the tools. The agent routes
   * (create a turn, approve, reject) × the victim's own keys of each permission set: only a key with
   * `send` acts, every other is refused (403) with no table changed; and × the foreign callers with
   * the victim's ids: not found or 401, nothing of the victim in the answer, nothing changed.
   */
  it('the agent REST routes × keys of each permission set and foreign callers', async () => {
    const passedBefore = result.passed;
    result.passed = false;
    const admin = t.admin;
    const problems: string[] = [];
    const owner = await createSession(admin, { tier: 'POWER', lines: ['PHONE_NUMBER'] });
    const phone = owner.lines[0];
    const partner = partnerPhone();
    const sms = await t
      .http()
      .post('/ingest/sms/inbound')
      .set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to: phone.address, from: partner, body: `rest victim sms ${M}`, providerMessageId: `authz-rest-${M}` })
      .expect(201);
    const threadId: string = sms.body.threadId;
    const agentOf = async (mode: 'DRAFT' | 'AUTO') =>
      (await admin.post(`/admin/lines/${phone.id}/agents`, { name: `REST ${mode} ${M}`, mode }).expect(201)).body.id;
    const agents = { DRAFT: await agentOf('DRAFT'), AUTO: await agentOf('AUTO') };
    const post = (key: string, path: string, body?: object) => t.http().post(path).set('Authorization', `Bearer ${key}`).send(body);
    const draft = async (body: string) =>
      (await post(owner.apiKey, `/api/agents/${agents.DRAFT}/turns`, { threadId, body }).expect(201)).body.turn.id as string;
    const routes = (turnId: string, tag: string, rejectId = turnId) => [
      {
        route: 'POST /api/agents/:agentId/turns (AUTO: sends at once)',
        path: `/api/agents/${agents.AUTO}/turns`,
        body: { threadId, body: `rest auto ${tag} ${M}` },
      },
      { route: 'POST /api/agents/:agentId/turns (DRAFT)', path: `/api/agents/${agents.DRAFT}/turns`, body: { threadId, body: `rest draft ${tag} ${M}` } },
      { route: 'POST /api/agent-turns/:turnId/approve', path: `/api/agent-turns/${turnId}/approve` },
      { route: 'POST /api/agent-turns/:turnId/reject', path: `/api/agent-turns/${rejectId}/reject` },
    ];
    const checksum = async (): Promise<string> => {
      const [row] = await t.db.query(
        `SELECT md5(coalesce((SELECT string_agg(to_jsonb(x)::text, '|' ORDER BY x.id) FROM agent_turns x), '') ||
                    coalesce((SELECT string_agg(to_jsonb(x)::text, '|' ORDER BY x.id) FROM messages x), '') ||
                    coalesce((SELECT string_agg(id::text, '|' ORDER BY id) FROM outbox_events), '')) AS sum`,
      );
      return row.sum;
    };

    // The owner's own keys, one per permission set.
    const sets = [['read'], ['webhooks'], ['read', 'webhooks'], ['send'], ['read', 'send'], ['send', 'webhooks'], ['read', 'send', 'webhooks']];
    let refused = 0;
    let acted = 0;
    let permissionCalls = 0;
    for (const permissions of sets) {
      const key = (await admin.post(`/admin/users/${owner.userId}/api-keys`, { name: permissions.join('+'), permissions }).expect(201)).body.key;
      const tag = permissions.join('-');
      for (const { route, path, body } of routes(await draft(`to approve ${tag} ${M}`), tag, await draft(`to reject ${tag} ${M}`))) {
        const before = await checksum();
        const res = await post(key, path, body);
        const changed = (await checksum()) !== before;
        permissionCalls += 1;
        const where = `key with ${permissions.join(', ')}: ${route}`;
        if (permissions.includes('send')) {
          if (res.status === 200 || res.status === 201) acted += 1;
          else problems.push(`${where}: HTTP ${res.status} ${res.text.slice(0, 160)}`);
        } else {
          const expected = `this route needs the send permission, which this API key does not have (it has ${permissions.join(', ')})`;
          if (res.status === 403 && res.body.message === expected && res.body.field === 'permissions') refused += 1;
          else problems.push(`${where}: not refused for its permission: HTTP ${res.status} ${res.text.slice(0, 160)}`);
          if (changed) problems.push(`${where}: refused, but a turn, message or event changed`);
        }
      }
    }

    // Foreign callers with the owner's ids.
    const sameOrgOwner = await createSession(admin, { orgId: owner.orgId, lines: ['PHONE_NUMBER'] });
    const member = await createSession(admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const otherOrg = await createSession(admin, { tier: 'POWER', lines: ['PHONE_NUMBER'] });
    const revoked = (await admin.post(`/admin/users/${owner.userId}/api-keys`, { name: 'to revoke' }).expect(201)).body;
    await admin.delete(`/admin/api-keys/${revoked.id}`).expect(204);
    const foreign = [
      { name: 'same-org OWNER, not on the line', key: sameOrgOwner.apiKey, status: 404 },
      { name: 'same-org MEMBER, not on the line', key: member.apiKey, status: 404 },
      { name: 'other-org OWNER', key: otherOrg.apiKey, status: 404 },
      { name: 'revoked key', key: revoked.key, status: 401 },
    ];
    const turnId = await draft(`foreign target ${M}`);
    const markers = [threadId, turnId, agents.DRAFT, agents.AUTO, `rest victim sms ${M}`, `foreign target ${M}`, phone.id, phone.address, partner];
    let foreignCalls = 0;
    let foreignAsExpected = 0;
    for (const actor of foreign) {
      for (const { route, path, body } of routes(turnId, actor.name.replace(/\W+/g, '-'))) {
        const before = await checksum();
        const res = await post(actor.key, path, body);
        const changed = (await checksum()) !== before;
        foreignCalls += 1;
        const request = `${path} ${JSON.stringify(body ?? {})}`;
        const leaked = markers.filter((marker) => res.text.includes(marker) && !request.includes(marker));
        if (res.status === actor.status && !leaked.length && !changed) foreignAsExpected += 1;
        else
          problems.push(
            `${actor.name}: ${route}: HTTP ${res.status} (want ${actor.status})${leaked.length ? `, LEAKED ${leaked.join(', ')}` : ''}${changed ? ', CHANGED' : ''}`,
          );
      }
    }

    result.badInputs = `${result.badInputs || '—'}; ${permissionCalls + foreignCalls} REST calls: 3 agent routes × keys of ${sets.length} permission sets and 4 foreign callers`;
    result.figure(
      'issue 30, the agent REST routes: keys without send refused (403, nothing changed) / keys with send that acted / foreign callers answered 404 or 401 with nothing leaked or changed',
      `${refused} of ${sets.filter((x) => !x.includes('send')).length * 4} / ${acted} of ${sets.filter((x) => x.includes('send')).length * 4} / ${foreignAsExpected} of ${foreignCalls}`,
    );
    if (problems.length) result.notes.push(...problems.slice(0, 10));
    expect(problems).toEqual([]);
    result.passed = passedBefore;
  });

  /**
   * Issue 31: OAuth access tokens with narrow access (one line, Read only), obtained through DCR,
   * sign-in and consent, as callers. Each calls every tool (those its tools/list shows and the
   * others) with a victim's ids: nothing of what the token may not reach shows, every tool outside
   * its tools/list is refused for its permission, and no table changes. A token, even with every
   * permission on every line, is refused (401) on the agent REST routes.
   */
  it('OAuth access tokens with one line and Read only × every tool; tokens on the agent REST routes', async () => {
    const passedBefore = result.passed;
    result.passed = false;
    const admin = t.admin;
    const problems: string[] = [];
    const tag = `oauth-${M}`;
    const victim = await createSession(admin, { tier: 'POWER', lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    const vEmail = victim.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
    const vPhone = victim.lines.find((l) => l.type === 'PHONE_NUMBER')!;
    const partner = partnerPhone();
    const tool = async (name: string, args: Record<string, unknown>) =>
      (await rpc(t, victim.apiKey, 'tools/call', { name, arguments: args })).body.result.structuredContent;
    const { endpoint, secret } = await tool('register_webhook', { url: `${t.receiverUrl}/${tag}`, events: ['message.received'] });
    const ingest = (path: string) => t.http().post(path).set('Authorization', `Bearer ${INGEST_TOKEN}`);
    const sms = (
      await ingest('/ingest/sms/inbound')
        .send({ to: vPhone.address, from: partner, body: `sms ${tag}`, providerMessageId: tag })
        .expect(201)
    ).body;
    const pdf = readFileSync(join(ROOT, 'test/fixtures/emails/invoice-42.pdf'));
    const raw = emailWithPdf(vEmail.address, `partner.${tag}@example.org`, pdf, `Subject ${tag}`).replace(/invoice\.pdf/g, `${tag}.pdf`);
    const mail = (await ingest('/ingest/email/inbound').set('Content-Type', 'message/rfc822').send(raw).expect(201)).body;
    const { contact } = await tool('create_contact', { displayName: `Contact ${tag}`, identities: [{ kind: 'PHONE', value: partner }] });
    await tool('label_thread', { threadId: mail.threadId, add: [{ name: `label-${tag}` }] });
    const agent = (await admin.post(`/admin/lines/${vEmail.id}/agents`, { name: `Agent ${tag}`, mode: 'DRAFT' }).expect(201)).body;
    const post = (token: string, path: string, body?: object) => t.http().post(path).set('Authorization', `Bearer ${token}`).send(body);
    const turn = (await post(victim.apiKey, `/api/agents/${agent.id}/turns`, { threadId: mail.threadId, body: `draft ${tag}` }).expect(201)).body.turn;
    const [delivery] = await waitFor(
      async () => {
        const [q] = await t.db.query(
          `SELECT (SELECT count(*) FROM attachments WHERE message_id = $1 AND extraction_status NOT IN ('extracted', 'failed'))::int AS extracting,
                  (SELECT count(*) FROM outbox_events WHERE relayed_at IS NULL)::int AS unrelayed,
                  (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $2 AND status <> 'succeeded')::int AS open`,
          [mail.messageId, endpoint.id],
        );
        const rows = await t.db.query(`SELECT id FROM webhook_deliveries WHERE endpoint_id = $1`, [endpoint.id]);
        return q.extracting === 0 && q.unrelayed === 0 && q.open === 0 && rows.length >= 2 && rows;
      },
      'the OAuth victim data to settle (deliveries, extraction, relay)',
      90_000,
      250,
    );
    const [attachment] = await t.db.query(`SELECT id FROM attachments WHERE message_id = $1`, [mail.messageId]);
    const [identity] = await t.db.query(`SELECT id FROM identities WHERE org_id = $1 AND value = $2`, [victim.orgId, partner]);

    // The tokens: through DCR, sign-in and consent, as a host and the person's browser would.
    const tokenOf = async (userId: string, choice: { lineIds?: string[]; permissions: string[] }) => {
      const link = await admin.post(`/admin/users/${userId}/sign-in-links`).expect(201);
      const connected = await connectOverHttp({ url: t.baseUrl, origin: PAGE_ORIGIN }, new URL(link.body.url).searchParams.get('token')!, choice);
      return connected.tokens.access_token;
    };
    const onVictimLines = await createSession(admin, { orgId: victim.orgId, lines: ['PHONE_NUMBER'] });
    for (const line of victim.lines) await admin.put(`/admin/lines/${line.id}/members/${onVictimLines.userId}`).expect(200);
    const otherOrg = await createSession(admin, { tier: 'POWER', lines: ['PHONE_NUMBER'] });
    // What must never show to a caller outside the victim's lines; the victim's own phone-line token must not see the email line's.
    const emailSide: Record<string, string> = {
      emailThread: mail.threadId,
      emailMessage: mail.messageId,
      attachmentId: attachment.id,
      attachmentName: `${tag}.pdf`,
      subject: `Subject ${tag}`,
      partnerEmail: `partner.${tag}`,
      emailLine: vEmail.id,
      emailAddress: vEmail.address,
      label: `label-${tag}`,
      agentId: agent.id,
      agentName: `Agent ${tag}`,
      turnId: turn.id,
      draft: `draft ${tag}`,
      endpointId: endpoint.id,
      endpointUrl: `/${tag}`,
      secret,
      deliveryId: delivery.id,
    };
    const everything: Record<string, string> = {
      ...emailSide,
      smsThread: sms.threadId,
      smsMessage: sms.messageId,
      smsBody: `sms ${tag}`,
      phoneLine: vPhone.id,
      phoneAddress: vPhone.address,
      partnerPhone: partner,
      identityId: identity.id,
    };
    const callers = [
      {
        name: "the victim's own token, its phone line, read",
        token: await tokenOf(victim.userId, { lineIds: [vPhone.id], permissions: ['read'] }),
        markers: emailSide,
      },
      {
        name: "same-org user on the victim's lines, token for an own line, read",
        token: await tokenOf(onVictimLines.userId, { lineIds: [onVictimLines.lines[0].id], permissions: ['read'] }),
        markers: everything,
      },
      {
        name: 'other-org OWNER, token for an own line, read',
        token: await tokenOf(otherOrg.userId, { lineIds: [otherOrg.lines[0].id], permissions: ['read'] }),
        markers: { ...everything, contactId: contact.id, contactName: `Contact ${tag}` },
      },
    ];

    // Every tool of the OWNER's tools/list, with the victim's ids (one call per further id of a field).
    const tools: Array<{ name: string; inputSchema: { properties?: Record<string, { format?: string }>; required?: string[] } }> = (
      await rpc(t, victim.apiKey, 'tools/list')
    ).body.result.tools;
    const ids: Record<string, unknown[]> = {
      threadId: [sms.threadId, mail.threadId],
      messageId: [sms.messageId, mail.messageId],
      turnId: [turn.id],
      agentId: [agent.id],
      endpointId: [endpoint.id],
      deliveryId: [delivery.id],
      attachmentId: [attachment.id],
      contactId: [contact.id],
      contactIds: [[contact.id, randomUUID()]],
      into: [contact.id],
      lineId: [vPhone.id, vEmail.id],
      fromAccountId: [vEmail.id],
      identityId: [identity.id],
      channelScope: [{ allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: vEmail.id }] }],
    };
    const plain = plainArgs(`${t.receiverUrl}/attacker-${tag}`, partner, `sms ${M}`);
    const variants = (name: string, schema: (typeof tools)[number]['inputSchema']): Array<Record<string, unknown>> => {
      const base: Record<string, unknown> = {};
      for (const [k, p] of Object.entries(schema.properties ?? {})) {
        if (k in ids) base[k] = ids[k][0];
        else if (p.format === 'uuid') throw new Error(`no victim id for ${name}.${k}: add one`);
        else if ((schema.required ?? []).includes(k)) {
          if (!(k in plain)) throw new Error(`no value for ${name}.${k}: add one`);
          base[k] = plain[k];
        }
      }
      const further = Object.keys(base).flatMap((k) => (ids[k] ?? []).slice(1).map((v) => ({ ...base, [k]: v })));
      return [base, ...further];
    };
    const checksum = async (): Promise<string> => {
      const tables: string[] = (await t.db.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)).map(
        (r: { tablename: string }) => r.tablename,
      );
      // last_used_at (API keys, grants) is the bookkeeping of authenticating the call, not something it did.
      const row = `(to_jsonb(x) - 'last_used_at')::text`;
      const [sums] = await t.db.query(
        `SELECT ${tables.map((n) => `(SELECT md5(coalesce(string_agg(${row}, '|' ORDER BY ${row}), '')) FROM "${n}" x) AS "${n}"`).join(', ')}`,
      );
      return JSON.stringify(sums);
    };

    let calls = 0;
    let refusedForPermission = 0;
    let answered = 0;
    let leaked = 0;
    let changed = 0;
    let before = await checksum();
    for (const caller of callers) {
      const listed: Array<{ name: string; annotations: { readOnlyHint: boolean } }> = (await rpc(t, caller.token, 'tools/list')).body.result.tools;
      const wrong = listed.filter((x) => !x.annotations.readOnlyHint || x.name.includes('webhook')).map((x) => x.name);
      if (wrong.length || listed.length === 0) problems.push(`${caller.name}: tools/list shows ${wrong.join(', ') || 'nothing'}`);
      for (const { name, inputSchema } of tools) {
        for (const args of variants(name, inputSchema)) {
          const res = await rpc(t, caller.token, 'tools/call', { name, arguments: args });
          const request = JSON.stringify(args);
          const after = await checksum();
          const where = `${caller.name}: ${name} ${request}`;
          calls += 1;
          if (after !== before) {
            changed += 1;
            problems.push(`${where}: a table CHANGED`);
          }
          before = after;
          const found = Object.entries(caller.markers).filter(([, v]) => res.text.includes(v) && !request.includes(v));
          if (found.length) {
            leaked += 1;
            problems.push(`${where}: LEAKED ${found.map(([k]) => k).join(', ')}: ${res.text.slice(0, 200)}`);
          }
          const r = res.body?.result;
          if (res.status !== 200 || !r) problems.push(`${where}: HTTP ${res.status} ${res.text.slice(0, 160)}`);
          else if (listed.some((x) => x.name === name)) answered += 1;
          else if (r.isError && /^\w+ needs the (send|webhooks) permission, which this API key does not have \(it has read\)$/.test(r.content[0].text))
            refusedForPermission += 1;
          else problems.push(`${where}: outside its tools/list, not refused for its permission: ${res.text.slice(0, 160)}`);
        }
      }
    }
    // The control: the victim's phone-line token does see that line's thread.
    const control = await rpc(t, callers[0].token, 'tools/call', { name: 'list_threads', arguments: {} });
    if (!control.text.includes(sms.threadId))
      problems.push(`control: the victim's phone-line token does not see its SMS thread: ${control.text.slice(0, 160)}`);

    // The agent REST routes: a token is not an API key there, whatever it may do on /api/mcp.
    const full = await tokenOf(victim.userId, { permissions: ['read', 'send', 'webhooks'] });
    const restRoutes = [
      { path: `/api/agents/${agent.id}/turns`, body: { threadId: mail.threadId, body: `rest ${tag}` } },
      { path: `/api/agent-turns/${turn.id}/approve` },
      { path: `/api/agent-turns/${turn.id}/reject` },
    ];
    let restRefused = 0;
    before = await checksum();
    for (const token of [full, ...callers.map((c) => c.token)]) {
      for (const { path, body } of restRoutes) {
        const res = await post(token, path, body);
        const after = await checksum();
        if (res.status === 401 && after === before) restRefused += 1;
        else problems.push(`token on POST ${path}: HTTP ${res.status}${after !== before ? ', CHANGED' : ''} ${res.text.slice(0, 160)}`);
        before = after;
      }
    }

    result.badInputs = `${result.badInputs || '—'}; ${calls} calls: ${tools.length} tools × ${callers.length} OAuth tokens (one line, read) with a victim's ids; ${restRoutes.length * (callers.length + 1)} REST calls with tokens`;
    result.figure(
      'issue 31, OAuth access tokens with one line and Read only × every tool: calls / answered (in its tools/list) / refused for the permission / answers holding what the token may not reach / calls after which a table changed',
      `${calls} / ${answered} / ${refusedForPermission} / ${leaked} / ${changed}`,
    );
    result.figure(
      'issue 31, OAuth access tokens on the agent REST routes: refused 401 with nothing changed',
      `${restRefused} of ${restRoutes.length * (callers.length + 1)}`,
    );
    if (problems.length) result.notes.push(...problems.slice(0, 10));
    expect(problems).toEqual([]);
    result.passed = passedBefore;
  });
});
