import { MessagingTestApp, partnerPhone } from '../../support/messaging-hooks';
import { createSession } from '../../support/session';
import { INGEST_TOKEN } from '../../support/test-env';
import { M } from './matrix';
import { FIGURE, MatrixReport } from './report';

/**
 * Issue 30: the REST routes that act for a key pass the same check as the tools. The agent routes
 * (create a turn, approve, reject) × the victim's own keys of each permission set: only a key with
 * `send` acts, every other is refused (403) with no table changed; and × the foreign callers with
 * the victim's ids: not found or 401, nothing of the victim in the answer, nothing changed.
 */
export async function agentRoutes(t: MessagingTestApp, report: MatrixReport): Promise<void> {
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
  const draft = async (body: string) => (await post(owner.apiKey, `/api/agents/${agents.DRAFT}/turns`, { threadId, body }).expect(201)).body.turn.id as string;
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
  // Draft-only keys (issue 45) are refused every agent route: a draft-only credential never creates, approves or rejects a turn.
  const sets = [
    ['read'],
    ['webhooks'],
    ['read', 'webhooks'],
    ['send'],
    ['read', 'send'],
    ['send', 'webhooks'],
    ['read', 'send', 'webhooks'],
    ['draft'],
    ['read', 'draft'],
    ['read', 'draft', 'webhooks'],
  ];
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

  report.badInputs(
    'agent routes',
    `${permissionCalls + foreignCalls} REST calls: 3 agent routes × keys of ${sets.length} permission sets and 4 foreign callers`,
  );
  report.figure(
    FIGURE.agentRoutes,
    `${refused} of ${sets.filter((x) => !x.includes('send')).length * 4} / ${acted} of ${sets.filter((x) => x.includes('send')).length * 4} / ${foreignAsExpected} of ${foreignCalls}`,
  );
  report.note('agent routes', ...problems.slice(0, 10));
  expect(problems).toEqual([]);
}
