import { randomUUID } from 'node:crypto';
import { MessagingTestApp } from '../../support/messaging-hooks';
import { rpc } from '../../support/mcp';
import { INGEST_TOKEN } from '../../support/test-env';
import { fmt } from '../support/results';
import { waitFor } from '../support/stack';
import { callInBothEras, leaks, M, Scope, SCOPES, tableChecksums, Victim } from './matrix';
import { FIGURE, MatrixReport } from './report';

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

/**
 * Issue 10, section 1: the victim's own key limited (LINES) to its phone line calls every webhook
 * tool on the victim's endpoints scoped to all lines, to that line, to the other line and to both.
 * Only the endpoint scoped to its line answers; every other one (and its deliveries) answers exactly
 * as an unknown id, holds nothing back to the key and changes no table, and afterwards its events
 * still go to its own URL and none to the URLs the key tried to set.
 */
export async function linesKeyOnWebhooks(t: MessagingTestApp, v: Victim, report: MatrixReport): Promise<void> {
  const { scoped, scopedDeliveries, mail } = v;
  const problems: string[] = [];
  const scopedKey = (
    await t.admin
      .post(`/admin/users/${v.session.userId}/api-keys`, { name: 'phone line only', channelAccess: { mode: 'LINES', lines: [v.phone.address] } })
      .expect(201)
  ).body.key;
  expect(
    v.tools
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
    emailThread: mail.threadId,
    emailMessage: mail.messageId,
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
        return [{ url: attackerUrl(scope), events: ['message.received'], channelScope: v.channelScopes[scope] }];
      case 'resend_webhook_delivery':
      case 'get_webhook_delivery':
        return [{ deliveryId }];
      case 'recover_webhook_deliveries':
        return [{ endpointId: id, since: v.plain.since }];
      // Redirect it, or narrow it into the key's own line (which would take it over).
      case 'update_webhook':
        return [
          { endpointId: id, url: attackerUrl(scope), status: 'disabled' },
          { endpointId: id, url: attackerUrl(scope), channelScope: v.phoneScope },
        ];
      default:
        return [{ endpointId: id }];
    }
  };
  const scopedCalls: ScopedCall[] = [];
  let before = await tableChecksums(t);
  for (const scope of SCOPES) {
    for (const name of WEBHOOK_TOOLS) {
      if (name === 'list_webhooks' && scope !== 'its line') continue; // takes no id: once is enough
      const write = !v.tools.find((x) => x.name === name)!.annotations.readOnlyHint;
      for (const args of scopedArgs(name, scope)) {
        const { res, differs } = await callInBothEras(t, report, scopedKey, name, args, write);
        const request = JSON.stringify(args);
        const after = await tableChecksums(t);
        const changed = Object.keys(after).filter((k) => after[k] !== before[k]);
        before = after;
        const r = res.body?.result;
        const text: string = r?.isError ? r.content[0].text : '';
        const leaked = leaks(res.text, request, hiddenMarkers);
        if (leaked.length) problems.push(`${scope}: ${name} ${request}: LEAKED ${leaked.join(', ')}: ${res.text.slice(0, 200)}`);
        const where = `LINES key on its user's endpoint scoped to ${scope}: ${name} ${request}`;
        if (differs) problems.push(`${where}: the 2026-07-28 request ${differs}`);
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
    .send({ to: v.phone.address, from: v.partner, body: `after the scoped key ${M}`, providerMessageId: `authz-after-${M}` })
    .expect(201);
  await t
    .http()
    .post('/ingest/email/inbound')
    .set('Authorization', `Bearer ${INGEST_TOKEN}`)
    .set('Content-Type', 'message/rfc822')
    .send(
      `From: <victim.partner.${M}@example.org>\r\nTo: <${v.email.address}>\r\nSubject: after ${M}\r\nMessage-ID: <after-${M}@example.org>\r\n\r\nafter the scoped key\r\n`,
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

  report.badInputs('LINES key', `${fmt(scopedCalls.length)} calls: ${WEBHOOK_TOOLS.length} webhook tools × a LINES key × its user's endpoints of 4 scopes`);
  report.victimCaseProblems(problems);
  const scopeFigure = (scope: Scope) => {
    const mine = scopedCalls.filter((c) => c.scope === scope);
    return `${mine.filter((c) => c.outcome === 'not found').length} / ${mine.filter((c) => c.outcome === 'refused').length} / ${mine.filter((c) => c.outcome === 'answered').length}`;
  };
  report.figure(FIGURE.linesKey, SCOPES.map(scopeFigure).join('; '));
  const notFound = scopedCalls.filter((c) => c.outcome === 'not found');
  report.figure(FIGURE.asUnknownId, `${notFound.filter((c) => c.asUnknownId).length} of ${notFound.length}`);
  report.figure(FIGURE.eventsAfter, `${receivedAfter.join(', ')} / ${atAttacker}`);

  expect(problems).toEqual([]);
}
