import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { MessagingTestApp, partnerPhone } from '../../support/messaging-hooks';
import { rpc } from '../../support/mcp';
import { modernRpc, withoutModernFields } from '../../support/mcp-modern';
import { createSession, Session, SessionLine } from '../../support/session';
import { INGEST_TOKEN } from '../../support/test-env';
import { emailWithPdf } from '../support/clients';
import { ROOT, waitFor } from '../support/stack';

/** A marker of this run, in every name and text the cases plant, so an answer holding one is a leak. */
export const M = randomBytes(4).toString('hex');

export type Scope = 'all lines' | 'its line' | 'another line' | 'both lines';
export const SCOPES: Scope[] = ['all lines', 'its line', 'another line', 'both lines'];

/** A tool as tools/list shows it: the matrix derives its calls from the input schema. */
export interface ListedTool {
  name: string;
  inputSchema: { properties?: Record<string, { format?: string }>; required?: string[] };
  annotations: { readOnlyHint: boolean };
}

/** Values for the arguments that are not ids, whatever tool asks for them: `url` to set, the victim's `partner`, a search `query`. */
export function plainArgs(url: string, partner: string, query: string): Record<string, unknown> {
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

/** What a call in both eras came to, for the row's figure (MatrixReport.eraCall). */
export interface EraOutcome {
  /** The call was made again as a 2026-07-28 request (not when the legacy call answered a write: it would run twice). */
  repeated: boolean;
  /** The legacy answer was a refusal: an HTTP error, a JSON-RPC error or a tool error. */
  refused: boolean;
  /** How the 2026-07-28 answer differed from the legacy one; null when alike (or not repeated). */
  differs: string | null;
}

/** Counts the calls made in both eras; MatrixReport implements it. */
export interface EraTally {
  eraCall(outcome: EraOutcome): void;
}

/**
 * tools/call `name` with `args` by `token` as the matrix has always made it (legacy JSON-RPC, no
 * version), then the same call as a 2026-07-28 request (the `_meta` envelope and the mirrored
 * MCP-Protocol-Version, Mcp-Method and Mcp-Name headers), unless the first answered a `write` tool:
 * that would run it twice. The two must answer alike: the same HTTP status and the same refusal (a
 * JSON-RPC error, a tool error, a 401), or the same result but for what the modern era adds
 * (resultType "complete", the server's identity in _meta). Answers the legacy response, which the
 * case judges as before; `differs` says how the modern one differed (counted in `tally`).
 */
export async function callInBothEras(
  t: MessagingTestApp,
  tally: EraTally,
  token: string,
  name: string,
  args: Record<string, unknown>,
  write: boolean,
): Promise<{ res: request.Response; differs: string | null }> {
  const res = await rpc(t, token, 'tools/call', { name, arguments: args });
  const refused = res.status !== 200 || Boolean(res.body?.error) || Boolean(res.body?.result?.isError);
  if (write && !refused) {
    tally.eraCall({ repeated: false, refused, differs: null });
    return { res, differs: null };
  }
  const modern = await modernRpc(t, token, 'tools/call', { name, arguments: args });
  const differs = eraDifference(res, modern);
  tally.eraCall({ repeated: true, refused, differs });
  return { res, differs };
}

/**
 * tools/list by `token` in both eras: the legacy tools, and how the 2026-07-28 list differed (null
 * when it lists the same tools alike, as a list cacheable by this caller only).
 */
export async function toolsInBothEras(t: MessagingTestApp, tally: EraTally, token: string): Promise<{ tools: any[]; differs: string | null }> {
  const [legacy, modern] = [await rpc(t, token, 'tools/list'), await modernRpc(t, token, 'tools/list')];
  const { ttlMs, cacheScope, ...rest } = modern.body?.result ?? {};
  const alike =
    modern.status === 200 &&
    cacheScope === 'private' &&
    typeof ttlMs === 'number' &&
    !eraDifference(legacy, { ...modern, body: { ...modern.body, result: rest } } as request.Response);
  const differs = alike
    ? null
    : `answered HTTP ${modern.status} ${modern.text.slice(0, 160)} where the legacy request answered HTTP ${legacy.status} ${legacy.text.slice(0, 160)}`;
  tally.eraCall({ repeated: true, refused: false, differs });
  return { tools: legacy.body.result.tools, differs };
}

/** How a 2026-07-28 answer differs from the legacy answer to the same call; null when alike. */
function eraDifference(legacy: request.Response, modern: request.Response): string | null {
  const shown = (res: request.Response) => `HTTP ${res.status} ${res.text.slice(0, 160)}`;
  const differ = () => `answered ${shown(modern)} where the legacy request answered ${shown(legacy)}`;
  if (modern.status !== legacy.status || modern.headers['www-authenticate'] !== legacy.headers['www-authenticate']) return differ();
  if (legacy.body?.jsonrpc === undefined) return isDeepStrictEqual(modern.body, legacy.body) ? null : differ(); // a 401: no JSON-RPC
  if (legacy.body.error) return isDeepStrictEqual(modern.body?.error, legacy.body.error) && modern.body.id !== undefined ? null : differ();
  const result = modern.body?.result;
  if (!result || result.resultType !== 'complete' || !result._meta?.['io.modelcontextprotocol/serverInfo']) return differ();
  return isDeepStrictEqual(withoutModernFields(result), legacy.body.result) ? null : differ();
}

/** An md5 of every table's rows, by table name: a call that changed anything changes one. */
export async function tableChecksums(t: MessagingTestApp): Promise<Record<string, string>> {
  const tables: string[] = (await t.db.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)).map(
    (r: { tablename: string }) => r.tablename,
  );
  // last_used_at (API keys, grants) is the bookkeeping of authenticating the call (written at most
  // once a minute per key), not something the call did: every row is compared without it.
  // A refused call leaves one row by design: its own record in the audit trail (outcome
  // 'refused', in the caller's org; refusalsRecordedOutside checks where they land). Every
  // other audit row still counts: a refused call recorded as done would show.
  const row = `(to_jsonb(x) - 'last_used_at')::text`;
  const only = (name: string) => (name === 'audit_events' ? ` WHERE x.outcome <> 'refused'` : '');
  const [sums] = await t.db.query(
    `SELECT ${tables.map((name) => `(SELECT md5(coalesce(string_agg(${row}, '|' ORDER BY ${row}), '')) FROM "${name}" x${only(name)}) AS "${name}"`).join(', ')}`,
  );
  return sums;
}

/**
 * The audit rows of refusals that landed in `orgId`'s trail for a person of another org: a
 * refusal is recorded in the caller's org, never in the org whose ids it named.
 */
export async function refusalsRecordedOutside(t: MessagingTestApp, orgId: string): Promise<number> {
  const [{ count }] = await t.db.query(
    `SELECT count(*)::int AS count FROM audit_events a
      WHERE a.org_id = $1 AND a.outcome = 'refused' AND a.user_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = a.user_id AND u.org_id = a.org_id)`,
    [orgId],
  );
  return count;
}

/**
 * A user of `victim`'s org who is a member of every line of the victim's, with a key limited
 * (LINES) to a line of their own: the matrix's "LINES key outside its lines".
 */
export async function linesKeyOutside(t: MessagingTestApp, victim: Session): Promise<{ user: Session; key: string }> {
  const user = await createSession(t.admin, { orgId: victim.orgId, lines: ['PHONE_NUMBER'] });
  for (const line of victim.lines) await t.admin.put(`/admin/lines/${line.id}/members/${user.userId}`).expect(200);
  const key = (
    await t.admin
      .post(`/admin/users/${user.userId}/api-keys`, { name: 'own line only', channelAccess: { mode: 'LINES', lines: [user.lines[0].address] } })
      .expect(201)
  ).body.key;
  return { user, key };
}

/** The names of the markers `text` holds that the caller did not send itself (`request`). */
export function leaks(text: string, request: string, markers: Record<string, string>): string[] {
  return Object.entries(markers)
    .filter(([, value]) => text.includes(value) && !request.includes(value))
    .map(([name]) => name);
}

/**
 * A victim (OWNER in org A, POWER tier) with one of everything: an all-lines webhook endpoint and
 * one scoped to each of its lines and to both, their deliveries (one failed), an SMS and an email
 * thread (with an extracted PDF), a contact, a label, an agent and a draft turn; and an OWNER of
 * another org with a contact of its own (merge_contacts takes the two).
 */
export interface Victim {
  session: Session;
  email: SessionLine;
  phone: SessionLine;
  partner: string;
  endpoint: { id: string };
  secret: string;
  /** The victim's endpoint of each scope, by the path of its URL at the receiver. */
  scoped: Record<Scope, { id: string; url: string; secret: string }>;
  channelScopes: Record<Scope, object>;
  phoneScope: { allChannels: false; channels: Array<{ channelType: string; channelId: string }> };
  sms: { threadId: string; messageId: string };
  mail: { threadId: string; messageId: string };
  contact: { id: string };
  agent: { id: string };
  turn: { id: string };
  /** The all-lines endpoint's first delivery, marked failed. */
  delivery: { id: string; event_id: string };
  scopedDeliveries: Array<{ id: string; event_id: string; endpoint_id: string }>;
  otherOrg: Session;
  /** Every tool of the victim's (an OWNER's) tools/list. */
  tools: ListedTool[];
  /** What must never show to a caller outside the victim's lines: its ids, secrets and contents. */
  common: Record<string, string>;
  /** The contact's id and name: the org's (shared), so only another org must not see them. */
  orgOnly: Record<string, string>;
  plain: Record<string, unknown>;
  /** The calls of a tool: every id field set to the victim's first id, then one more per further id of a field. */
  variants(schema: ListedTool['inputSchema'], name: string): Array<Record<string, unknown>>;
}

/** Plants the victim's data and waits until it has settled (deliveries done, the PDF extracted, every event relayed). */
export async function createVictim(t: MessagingTestApp): Promise<Victim> {
  const admin = t.admin;
  const tool = async (key: string, name: string, args: Record<string, unknown>) => {
    const res = await rpc(t, key, 'tools/call', { name, arguments: args });
    if (res.status !== 200 || !res.body.result || res.body.result.isError) throw new Error(`${name}: ${res.status} ${res.text}`);
    return res.body.result.structuredContent;
  };

  const victim = await createSession(admin, { tier: 'POWER', lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
  const vEmail = victim.lines.find((l) => l.type === 'EMAIL_ACCOUNT')!;
  const vPhone = victim.lines.find((l) => l.type === 'PHONE_NUMBER')!;
  const partner = partnerPhone();
  const { endpoint, secret } = await tool(victim.apiKey, 'register_webhook', {
    url: `${t.receiverUrl}/victim-${M}`,
    events: ['message.received', 'thread.created', 'attachment.extracted'],
  });
  // The same user's endpoints scoped to one line, to the other, and to both (issue 10, section 1).
  const phoneScope = { allChannels: false as const, channels: [{ channelType: 'PHONE_NUMBER', channelId: vPhone.id }] };
  const emailScope = { allChannels: false, channels: [{ channelType: 'EMAIL_ACCOUNT', channelId: vEmail.id }] };
  const channelScopes: Record<Scope, object> = {
    'all lines': { allChannels: true },
    'its line': phoneScope,
    'another line': emailScope,
    'both lines': { allChannels: false, channels: [...phoneScope.channels, ...emailScope.channels] },
  };
  const scoped = { 'all lines': { id: endpoint.id, url: `/victim-${M}`, secret } } as Victim['scoped'];
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
  // A scheduled send (issue 45), a day ahead: cancel_scheduled_message by anyone but the victim must change nothing.
  const scheduled = (
    await tool(victim.apiKey, 'send_sms', {
      threadId: sms.body.threadId,
      body: `victim scheduled ${M}`,
      sendAt: new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString(),
    })
  ).message;

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
  const scopedDeliveries: Victim['scopedDeliveries'] = await t.db.query(
    `SELECT id, event_id, endpoint_id FROM webhook_deliveries WHERE endpoint_id = ANY ($1::uuid[]) ORDER BY created_at, id`,
    [endpointIds],
  );
  const otherOrg = await createSession(admin, { tier: 'POWER', lines: ['EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
  const { contact: otherContact } = await tool(otherOrg.apiKey, 'create_contact', {
    displayName: 'Other org contact',
    identities: [{ kind: 'PHONE', value: partnerPhone() }],
  });

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
    scheduledMessage: scheduled.id,
    scheduledBody: `victim scheduled ${M}`,
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

  const tools: ListedTool[] = (await rpc(t, victim.apiKey, 'tools/list')).body.result.tools;
  const victimIds: Record<string, unknown[]> = {
    turnId: [turn.id],
    endpointId: [endpoint.id],
    threadId: [sms.body.threadId, mail.body.threadId],
    messageId: [sms.body.messageId, mail.body.messageId, scheduled.id],
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
  const variants = (schema: ListedTool['inputSchema'], name: string): Array<Record<string, unknown>> => {
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

  return {
    session: victim,
    email: vEmail,
    phone: vPhone,
    partner,
    endpoint,
    secret,
    scoped,
    channelScopes,
    phoneScope,
    sms: sms.body,
    mail: mail.body,
    contact,
    agent,
    turn,
    delivery,
    scopedDeliveries,
    otherOrg,
    tools,
    common,
    orgOnly,
    plain,
    variants,
  };
}
