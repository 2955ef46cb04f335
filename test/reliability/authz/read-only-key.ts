import { MessagingTestApp } from '../../support/messaging-hooks';
import { fmt } from '../support/results';
import { callInBothEras, leaks, tableChecksums, toolsInBothEras, Victim } from './matrix';
import { FIGURE, MatrixReport } from './report';

/**
 * Issue 16, least privilege: the victim's own key with only the `read` permission lists only read
 * tools that are not webhook tools, and calls every other tool with the victim's own ids: each call
 * is refused naming the permission it lacks, and no table changes.
 */
export async function readOnlyKey(t: MessagingTestApp, v: Victim, report: MatrixReport): Promise<void> {
  const problems: string[] = [];
  const readOnlyKey = (await t.admin.post(`/admin/users/${v.session.userId}/api-keys`, { name: 'read only', permissions: ['read'] }).expect(201)).body.key;
  const listed = await toolsInBothEras(t, report, readOnlyKey);
  if (listed.differs) problems.push(`read-only key: tools/list: the 2026-07-28 request ${listed.differs}`);
  const readOnlyList: Array<{ name: string; annotations: { readOnlyHint: boolean } }> = listed.tools;
  for (const listedTool of readOnlyList) {
    if (!listedTool.annotations.readOnlyHint || listedTool.name.includes('webhook')) problems.push(`read-only key: tools/list shows ${listedTool.name}`);
  }
  const gated = v.tools.filter((x) => !readOnlyList.some((y) => y.name === x.name));
  let readOnlyCalls = 0;
  let readOnlyRefused = 0;
  let before = await tableChecksums(t);
  for (const { name, inputSchema, annotations } of gated) {
    for (const args of v.variants(inputSchema, name)) {
      const { res, differs } = await callInBothEras(t, report, readOnlyKey, name, args, !annotations.readOnlyHint);
      const request = JSON.stringify(args);
      const after = await tableChecksums(t);
      const changed = Object.keys(after).filter((k) => after[k] !== before[k]);
      before = after;
      readOnlyCalls += 1;
      const r = res.body?.result;
      const text: string = r?.isError ? r.content[0].text : '';
      const where = `read-only key: ${name} ${request}`;
      if (differs) problems.push(`${where}: the 2026-07-28 request ${differs}`);
      if (
        res.status === 200 &&
        r?.isError &&
        [
          `${name} needs the send permission, which this API key does not have (it has read)`,
          `${name} needs the send or draft permission, which this API key does not have (it has read)`,
          `${name} needs the webhooks permission, which this API key does not have (it has read)`,
        ].includes(text)
      )
        readOnlyRefused += 1;
      else problems.push(`${where}: not refused for its permission: HTTP ${res.status} ${res.text.slice(0, 200)}`);
      if (changed.length) problems.push(`${where}: CHANGED ${changed.join(', ')}`);
      const leaked = leaks(res.text, request, v.common);
      if (leaked.length) problems.push(`${where}: LEAKED ${leaked.join(', ')}: ${res.text.slice(0, 200)}`);
    }
  }

  report.victimCaseProblems(problems);
  report.figure(FIGURE.readOnlyKey, `${readOnlyList.length} / ${gated.length} / ${fmt(readOnlyRefused)} of ${fmt(readOnlyCalls)}`);

  expect(problems).toEqual([]);
  expect(readOnlyRefused).toBe(readOnlyCalls);
  expect(gated.length).toBeGreaterThan(10);
}
