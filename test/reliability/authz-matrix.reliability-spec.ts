import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMessagingTestApp, MessagingTestApp, partnerPhone } from '../support/messaging-hooks';
import { rpc } from '../support/mcp';
import { createSession, Session } from '../support/session';
import { INGEST_TOKEN } from '../support/test-env';
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
    const sms = await t.http().post('/ingest/sms/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`)
      .send({ to: vPhone.address, from: partner, body: `victim sms ${M}`, providerMessageId: `authz-${M}` });
    expect(sms.status).toBe(201);
    const pdf = readFileSync(join(ROOT, 'test/fixtures/emails/invoice-42.pdf'));
    const raw = emailWithPdf(vEmail.address, `victim.partner.${M}@example.org`, pdf, `Victim subject ${M}`).replace(/invoice\.pdf/g, `victim-${M}.pdf`);
    const mail = await t.http().post('/ingest/email/inbound').set('Authorization', `Bearer ${INGEST_TOKEN}`).set('Content-Type', 'message/rfc822').send(raw);
    expect(mail.status).toBe(201);
    const { contact } = await tool(victim.apiKey, 'create_contact', { displayName: `Victim Contact ${M}`, identities: [{ kind: 'PHONE', value: partner }] });
    await tool(victim.apiKey, 'label_thread', { threadId: sms.body.threadId, add: [{ name: `victim-label-${M}` }] });
    const agent = (await admin.post(`/admin/lines/${vPhone.id}/agents`, { name: `Victim Agent ${M}`, mode: 'DRAFT' }).expect(201)).body;
    const turn = (await t.http().post(`/api/agents/${agent.id}/turns`).set('Authorization', `Bearer ${victim.apiKey}`)
      .send({ threadId: sms.body.threadId, body: `victim draft ${M}` }).expect(201)).body.turn;

    // Quiet before measuring: every delivery done, every attachment extracted, every event relayed.
    await waitFor(async () => {
      const [q] = await t.db.query(
        `SELECT (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND status <> 'succeeded')::int AS open,
                (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1)::int AS deliveries,
                (SELECT count(*) FROM attachments WHERE message_id = $2 AND extraction_status NOT IN ('extracted', 'failed'))::int AS extracting,
                (SELECT count(*) FROM outbox_events WHERE relayed_at IS NULL)::int AS unrelayed`,
        [endpoint.id, mail.body.messageId],
      );
      return q.open === 0 && q.deliveries >= 4 && q.extracting === 0 && q.unrelayed === 0;
    }, 'the victim data to settle (deliveries, extraction, relay)', 90_000, 250);
    const [delivery] = await t.db.query(`SELECT id, event_id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at LIMIT 1`, [endpoint.id]);
    const [attachment] = await t.db.query(`SELECT id FROM attachments WHERE message_id = $1`, [mail.body.messageId]);
    const [identity] = await t.db.query(`SELECT id FROM identities WHERE org_id = $1 AND value = $2`, [victim.orgId, partner]);
    const eventIds: string[] = (await t.db.query(`SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1`, [endpoint.id])).map((r: { event_id: string }) => r.event_id);

    // --- the callers ------------------------------------------------------------------------------
    const sameOrgOwner = await createSession(admin, { orgId: victim.orgId, lines: ['PHONE_NUMBER'] });
    const linesUser = await createSession(admin, { orgId: victim.orgId, lines: ['PHONE_NUMBER'] });
    for (const line of victim.lines) await admin.put(`/admin/lines/${line.id}/members/${linesUser.userId}`).expect(200);
    const linesKey = (await admin.post(`/admin/users/${linesUser.userId}/api-keys`, { name: 'own line only', channelAccess: { mode: 'LINES', lines: [linesUser.lines[0].address] } }).expect(201)).body.key;
    const member = await createSession(admin, { orgId: victim.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
    const otherOrg = await createSession(admin, { tier: 'POWER', lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
    const { contact: otherContact } = await tool(otherOrg.apiKey, 'create_contact', { displayName: 'Other org contact', identities: [{ kind: 'PHONE', value: partnerPhone() }] });
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
      endpointId: endpoint.id, secret, endpointUrl: `victim-${M}`, deliveryId: delivery.id, ...Object.fromEntries(eventIds.map((id, i) => [`eventId${i}`, id])),
      smsThread: sms.body.threadId, smsMessage: sms.body.messageId, emailThread: mail.body.threadId, emailMessage: mail.body.messageId,
      attachmentId: attachment.id, attachmentName: `victim-${M}.pdf`, smsBody: `victim sms ${M}`, subject: `Victim subject ${M}`,
      partnerEmail: `victim.partner.${M}`, label: `victim-label-${M}`, agentId: agent.id, agentName: `Victim Agent ${M}`, turnId: turn.id,
      draft: `victim draft ${M}`, phoneLine: vPhone.id, emailLine: vEmail.id, phoneAddress: vPhone.address, emailAddress: vEmail.address,
      partnerPhone: partner, identityId: identity.id, victimUser: victim.userId,
    };
    const orgOnly: Record<string, string> = { contactId: contact.id, contactName: `Victim Contact ${M}` };

    // --- the tools and their arguments ------------------------------------------------------------
    const listed = await rpc(t, victim.apiKey, 'tools/list');
    const tools: Array<{ name: string; inputSchema: { properties?: Record<string, { format?: string }>; required?: string[] }; annotations: { readOnlyHint: boolean } }> = listed.body.result.tools;
    const memberList = (await rpc(t, member.apiKey, 'tools/list')).body.result.tools.map((x: { name: string }) => x.name);
    const victimIds: Record<string, unknown[]> = {
      turnId: [turn.id], endpointId: [endpoint.id], threadId: [sms.body.threadId, mail.body.threadId], agentId: [agent.id], deliveryId: [delivery.id],
      attachmentId: [attachment.id], contactId: [contact.id], contactIds: [[contact.id, otherContact.id]], into: [contact.id],
      lineId: [vPhone.id, vEmail.id], fromAccountId: [vEmail.id], identityId: [identity.id],
      channelScope: [{ allChannels: false, channels: [{ channelType: 'PHONE_NUMBER', channelId: vPhone.id }] }, { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: vEmail.id }] }],
    };
    const plain: Record<string, unknown> = {
      url: `${t.receiverUrl}/attacker-${M}`, events: ['message.received'], smsBody: 'hello', body: 'hello', subject: 'hello', to: 'someone@example.com',
      displayName: 'Changed', identities: [{ kind: 'PHONE', value: partner }], add: [{ name: 'attacker-label' }], status: 'disabled', notes: 'changed',
    };
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
      return out;
    };
    const contactWrites = new Set(['create_contact', 'update_contact', 'merge_contacts']);

    const checksum = async (): Promise<Record<string, string>> => {
      const tables: string[] = (await t.db.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)).map((r: { tablename: string }) => r.tablename);
      const [row] = await t.db.query(`SELECT ${tables.map((name) => `(SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM "${name}" x) AS "${name}"`).join(', ')}`);
      return row;
    };
    const leaks = (text: string, request: string, markers: Record<string, string>) =>
      Object.entries(markers).filter(([, value]) => text.includes(value) && !request.includes(value)).map(([name]) => name);

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
          const outcome: Call['outcome'] = res.status !== 200 || res.body?.error || r?.isError ? 'refused' : /"(\w+)":\[\]/.test(res.text) || /:null\b/.test(res.text) ? 'empty' : 'answered';
          const detail = res.status !== 200 ? `HTTP ${res.status}` : res.body?.error ? `JSON-RPC ${res.body.error.code}` : r?.isError ? r.content[0].text.slice(0, 80) : res.text.slice(0, 120);
          calls.push({ actor: actor.name, tool: name, args, outcome, detail });
          if (leaked.length) problems.push(`${actor.name} ${name} ${request}: LEAKED ${leaked.join(', ')}: ${res.text.slice(0, 200)}`);
          if (changed.length) problems.push(`${actor.name} ${name} ${request}: CHANGED ${changed.join(', ')} (${outcome}: ${detail})`);
          if (outcome !== 'refused' && !tools.find((x) => x.name === name)!.annotations.readOnlyHint) problems.push(`${actor.name} ${name} ${request}: a write tool was not refused: ${detail}`);
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

    const by = (pred: (c: Call) => boolean) => calls.filter(pred).length;
    result.load = '—';
    result.faults = '—';
    result.badInputs = `${fmt(calls.length)} calls: ${tools.length} tools × 5 callers with the victim's ids`;
    result.lost = null;
    result.duplicates = '—';
    result.figure('tools in the OWNER tools/list', `${tools.length}: ${tools.map((x) => x.name).join(', ')}`);
    result.figure('tools in the MEMBER tools/list', `${memberList.length} (every tool's lowest role is MEMBER)`);
    for (const actor of actors) {
      const mine = calls.filter((c) => c.actor === actor.name);
      result.figure(`${actor.name}: calls refused / empty read / other read`, `${fmt(mine.filter((c) => c.outcome === 'refused').length)} / ${fmt(mine.filter((c) => c.outcome === 'empty').length)} / ${fmt(mine.filter((c) => c.outcome === 'answered').length)}`);
    }
    result.figure('answers holding a victim id, secret or content', fmt(problems.filter((p) => p.includes('LEAKED')).length));
    result.figure('calls after which any table changed', fmt(problems.filter((p) => p.includes('CHANGED')).length));
    result.figure('write tools not refused', fmt(problems.filter((p) => p.includes('write tool')).length));
    result.figure('control: read tools where the victim\'s own key sees its data', `${controls} of ${controls + blind.length}${blind.length ? ` (not: ${blind.join(', ')})` : ''}`);
    result.figure('left out', 'create_contact (takes no ids); update_contact and merge_contacts for same-org callers (contacts are the org\'s by design)');
    if (problems.length) result.notes.push(...problems.slice(0, 10));
    const answered = calls.filter((c) => c.outcome === 'answered');
    if (answered.length) result.notes.push(`reads that answered (without victim data): ${[...new Set(answered.map((c) => `${c.actor}: ${c.tool}`))].join('; ')}`);

    expect(memberList.sort()).toEqual(tools.map((x) => x.name).sort());
    expect(problems).toEqual([]);
    expect(by((c) => c.actor === 'revoked key' && c.outcome !== 'refused')).toBe(0);
    expect(blind.filter((name) => !['list_contacts'].includes(name))).toEqual([]);
    result.passed = true;
  });
});
