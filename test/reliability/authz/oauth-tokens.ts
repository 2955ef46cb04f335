import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MessagingTestApp, partnerPhone } from '../../support/messaging-hooks';
import { rpc } from '../../support/mcp';
import { connectOverHttp } from '../../support/oauth';
import { createSession } from '../../support/session';
import { INGEST_TOKEN } from '../../support/test-env';
import { PAGE_ORIGIN } from '../../support/web';
import { emailWithPdf } from '../support/clients';
import { ROOT, waitFor } from '../support/stack';
import { callInBothEras, M, plainArgs, tableChecksums, toolsInBothEras } from './matrix';
import { FIGURE, MatrixReport } from './report';

/**
 * Issue 31: OAuth access tokens with narrow access (one line, Read only), obtained through DCR,
 * sign-in and consent, as callers. Each calls every tool (those its tools/list shows and the
 * others) with a victim's ids: nothing of what the token may not reach shows, every tool outside
 * its tools/list is refused for its permission, and no table changes. A token, even with every
 * permission on every line, is refused (401) on the agent REST routes.
 */
export async function oauthTokens(t: MessagingTestApp, report: MatrixReport): Promise<void> {
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
  const tools: Array<{
    name: string;
    inputSchema: { properties?: Record<string, { format?: string }>; required?: string[] };
    annotations: { readOnlyHint: boolean };
  }> = (await rpc(t, victim.apiKey, 'tools/list')).body.result.tools;
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
  const checksum = async (): Promise<string> => JSON.stringify(await tableChecksums(t));

  let calls = 0;
  let refusedForPermission = 0;
  let answered = 0;
  let leaked = 0;
  let changed = 0;
  let before = await checksum();
  for (const caller of callers) {
    const list = await toolsInBothEras(t, report, caller.token);
    if (list.differs) problems.push(`${caller.name}: tools/list: the 2026-07-28 request ${list.differs}`);
    const listed: Array<{ name: string; annotations: { readOnlyHint: boolean } }> = list.tools;
    const wrong = listed.filter((x) => !x.annotations.readOnlyHint || x.name.includes('webhook')).map((x) => x.name);
    if (wrong.length || listed.length === 0) problems.push(`${caller.name}: tools/list shows ${wrong.join(', ') || 'nothing'}`);
    for (const { name, inputSchema, annotations } of tools) {
      for (const args of variants(name, inputSchema)) {
        const { res, differs } = await callInBothEras(t, report, caller.token, name, args, !annotations.readOnlyHint);
        const request = JSON.stringify(args);
        const after = await checksum();
        const where = `${caller.name}: ${name} ${request}`;
        if (differs) problems.push(`${where}: the 2026-07-28 request ${differs}`);
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
        else if (
          r.isError &&
          /^\w+ needs the (send|send or draft|webhooks) permission, which this app was not granted \(it has read\)$/.test(r.content[0].text)
        )
          refusedForPermission += 1;
        else problems.push(`${where}: outside its tools/list, not refused for its permission: ${res.text.slice(0, 160)}`);
      }
    }
  }
  // The control: the victim's phone-line token does see that line's thread.
  const control = await rpc(t, callers[0].token, 'tools/call', { name: 'list_threads', arguments: {} });
  if (!control.text.includes(sms.threadId)) problems.push(`control: the victim's phone-line token does not see its SMS thread: ${control.text.slice(0, 160)}`);

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

  report.badInputs(
    'OAuth tokens',
    `${calls} calls: ${tools.length} tools × ${callers.length} OAuth tokens (one line, read) with a victim's ids; ${restRoutes.length * (callers.length + 1)} REST calls with tokens`,
  );
  report.figure(FIGURE.oauthTools, `${calls} / ${answered} / ${refusedForPermission} / ${leaked} / ${changed}`);
  report.figure(FIGURE.oauthRoutes, `${restRefused} of ${restRoutes.length * (callers.length + 1)}`);
  report.note('OAuth tokens', ...problems.slice(0, 10));
  expect(problems).toEqual([]);
}
