import { randomUUID } from 'node:crypto';
import { MessagingTestApp, partnerPhone } from '../../support/messaging-hooks';
import { rpc } from '../../support/mcp';
import { createSession } from '../../support/session';
import { INGEST_TOKEN } from '../../support/test-env';
import { postForm, signInBrowser } from '../../support/web';
import { waitFor } from '../support/stack';
import { callInBothEras, M } from './matrix';
import { FIGURE, MatrixReport } from './report';

/**
 * Issue 30: access to a line ends, its deliveries with it. A MEMBER whose membership of a phone
 * line is removed, and an OWNER whose phone line is deleted, each with an all-channels endpoint
 * that got (and failed) one delivery of a message on that line and one on a line they keep: every
 * delivery tool and the webhook pages answer the lost line's delivery as an unknown id, list and
 * recover leave it out, and nothing of it reaches the new URL they point the endpoint at.
 */
export async function accessEnded(t: MessagingTestApp, report: MatrixReport): Promise<void> {
  const problems: string[] = [];
  const figures: string[] = [];
  const since = new Date(Date.now() - 3_600_000).toISOString();
  /** A call the case judges: made in both eras, which must answer alike (the delivery tools' reads are get_ and list_). */
  const inBothEras = async (key: string, name: string, args: Record<string, unknown>) => {
    const { res, differs } = await callInBothEras(t, report, key, name, args, !/^(get|list)_/.test(name));
    if (differs) problems.push(`${name} ${JSON.stringify(args)}: the 2026-07-28 request ${differs}`);
    return res;
  };
  /** A tool call; a `judged` one (what the case checks, not its set-up or an unknown id's answer) is made in both eras. */
  const call = async (key: string, name: string, args: Record<string, unknown>, judged = false) => {
    const res = judged ? await inBothEras(key, name, args) : await rpc(t, key, 'tools/call', { name, arguments: args });
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
    await t.db.query(`UPDATE webhook_deliveries SET status = 'failed', last_status_code = 500, last_error = 'HTTP 500' WHERE endpoint_id = $1`, [endpoint.id]);
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
      const r = await call(s.apiKey, 'list_webhook_deliveries', args, true);
      check(`list_webhook_deliveries ${JSON.stringify(args)}`, r.text, JSON.stringify(args));
      const ids = ((r.data?.deliveries ?? []) as Array<{ id: string }>).map((d) => d.id);
      if (JSON.stringify(ids) !== JSON.stringify([control.id]))
        problems.push(`${label}: list_webhook_deliveries ${JSON.stringify(args)} listed ${ids.join(', ')}`);
    }
    for (const name of ['get_webhook_delivery', 'resend_webhook_delivery']) {
      const r = await call(s.apiKey, name, { deliveryId: hidden.id }, true);
      check(name, r.text, hidden.id);
      const ghost = randomUUID();
      const g = await call(s.apiKey, name, { deliveryId: ghost });
      if (r.isError && g.isError && r.error === g.error.replaceAll(ghost, hidden.id)) asUnknown += 1;
      else problems.push(`${label}: ${name}: answered "${r.error ?? r.text.slice(0, 120)}", an unknown id gets "${g.error}"`);
    }
    const recovered = await call(s.apiKey, 'recover_webhook_deliveries', { endpointId: endpoint.id, since }, true);
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
  report.badInputs('access ended', `${figures.length} cases of access ended (a membership removed, a line deleted) × the delivery tools and webhook pages`);
  report.figure(FIGURE.accessEnded, figures.join('; '));
  report.note('access ended', ...problems.slice(0, 10));
  expect(problems).toEqual([]);
}
