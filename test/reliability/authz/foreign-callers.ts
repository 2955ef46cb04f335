import { MessagingTestApp } from '../../support/messaging-hooks';
import { createSession } from '../../support/session';
import { fmt } from '../support/results';
import { callInBothEras, leaks, linesKeyOutside, refusalsRecordedOutside, tableChecksums, toolsInBothEras, Victim } from './matrix';
import { CALLERS, FIGURE, MatrixReport } from './report';

interface Call {
  actor: string;
  tool: string;
  args: Record<string, unknown>;
  outcome: 'refused' | 'empty' | 'answered';
  detail: string;
}

/**
 * Issue 6: every tool the OWNER's tools/list shows, called with the victim's ids by another OWNER
 * of the same org (not a member of the victim's lines), a same-org user who IS a member of the
 * victim's lines with a key limited (LINES) to a line of their own, a MEMBER of the same org, an
 * OWNER of another org, and the victim's own key after it was revoked. No answer holds the
 * victim's ids, secrets or contents (beyond ids the caller sent), no table changes, no write tool
 * answers. Contacts are shared by the org by design (docs/messaging.md, "Who sees what"): writes
 * on them by same-org callers are left out. The control: the victim's own key, with the same
 * read calls, does see its data (so a leak would have been caught).
 */
export async function foreignCallers(t: MessagingTestApp, v: Victim, report: MatrixReport): Promise<void> {
  const admin = t.admin;
  const victim = v.session;
  const { tools, common, orgOnly } = v;

  const sameOrgOwner = await createSession(admin, { orgId: victim.orgId, lines: ['PHONE_NUMBER'] });
  const { key: linesKey } = await linesKeyOutside(t, victim);
  const member = await createSession(admin, { orgId: victim.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
  const revoked = (await admin.post(`/admin/users/${victim.userId}/api-keys`, { name: 'to revoke', channelAccess: { mode: 'ALL' } }).expect(201)).body;
  await admin.delete(`/admin/api-keys/${revoked.id}`).expect(204);
  const keys = [sameOrgOwner.apiKey, linesKey, member.apiKey, v.otherOrg.apiKey, revoked.key];
  const actors = CALLERS.map((name, i) => ({ name, key: keys[i], sameOrg: name !== 'other-org OWNER' }));
  const memberTools = await toolsInBothEras(t, report, member.apiKey);
  const memberList = memberTools.tools.map((x: { name: string }) => x.name);
  const contactWrites = new Set(['create_contact', 'update_contact', 'merge_contacts']);

  const calls: Call[] = [];
  const problems: string[] = [];
  if (memberTools.differs) problems.push(`same-org MEMBER tools/list: the 2026-07-28 request ${memberTools.differs}`);
  let before = await tableChecksums(t);
  for (const actor of actors) {
    for (const { name, inputSchema, annotations } of tools) {
      if (actor.name !== 'revoked key') {
        // create_contact takes nobody's ids (it only creates in the caller's own org); same-org contact writes are allowed by design.
        if (name === 'create_contact') continue;
        if (actor.sameOrg && contactWrites.has(name)) continue;
      }
      for (const args of v.variants(inputSchema, name)) {
        // In both eras, back to back: the tables are compared after both.
        const { res, differs } = await callInBothEras(t, report, actor.key, name, args, !annotations.readOnlyHint);
        const request = JSON.stringify(args);
        if (differs) problems.push(`${actor.name} ${name} ${request}: the 2026-07-28 request ${differs}`);
        const markers = actor.sameOrg ? common : { ...common, ...orgOnly };
        const leaked = leaks(res.text, request, markers);
        const after = await tableChecksums(t);
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
    const args = v.variants(inputSchema, name)[0];
    const { res, differs } = await callInBothEras(t, report, victim.apiKey, name, args, false);
    if (differs) problems.push(`control: the victim's own ${name}: the 2026-07-28 request ${differs}`);
    if (leaks(res.text, JSON.stringify(args), { ...common, ...orgOnly }).length > 0) controls += 1;
    else blind.push(name);
  }

  report.badInputs('foreign callers', `${fmt(calls.length)} calls: ${tools.length} tools × 5 callers with the victim's ids`);
  report.figure(FIGURE.ownerTools, `${tools.length}: ${tools.map((x) => x.name).join(', ')}`);
  report.figure(FIGURE.memberTools, `${memberList.length} (every tool's lowest role is MEMBER)`);
  for (const actor of actors) {
    const mine = calls.filter((c) => c.actor === actor.name);
    report.figure(
      FIGURE.caller(actor.name),
      `${fmt(mine.filter((c) => c.outcome === 'refused').length)} / ${fmt(mine.filter((c) => c.outcome === 'empty').length)} / ${fmt(mine.filter((c) => c.outcome === 'answered').length)}`,
    );
  }
  const misfiled = await refusalsRecordedOutside(t, victim.orgId);
  if (misfiled) problems.push(`${misfiled} refusal(s) of other orgs' callers recorded in the victim's audit trail`);
  report.victimCaseProblems(problems);
  report.figure(FIGURE.control, `${controls} of ${controls + blind.length}${blind.length ? ` (not: ${blind.join(', ')})` : ''}`);
  report.figure(FIGURE.leftOut, "create_contact (takes no ids); update_contact and merge_contacts for same-org callers (contacts are the org's by design)");
  const answered = calls.filter((c) => c.outcome === 'answered');
  if (answered.length)
    report.note('foreign callers', `reads that answered (without victim data): ${[...new Set(answered.map((c) => `${c.actor}: ${c.tool}`))].join('; ')}`);

  expect(memberList.sort()).toEqual(tools.map((x) => x.name).sort());
  expect(problems).toEqual([]);
  expect(calls.filter((c) => c.actor === 'revoked key' && c.outcome !== 'refused').length).toBe(0);
  expect(blind.filter((name) => !['list_contacts'].includes(name))).toEqual([]);
}
