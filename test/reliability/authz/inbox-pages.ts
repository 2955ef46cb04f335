import { randomBytes, randomUUID } from 'node:crypto';
import { AttachmentUrls } from '../../../src/common/attachment-urls';
import { mixedEmail } from '../../fixtures/emails/make-invite-email';
import { inboundSms, MessagingTestApp, partnerPhone } from '../../support/messaging-hooks';
import { rpc } from '../../support/mcp';
import { accessChoice, connectApp, consentChoice } from '../../support/oauth';
import { createSession, Session } from '../../support/session';
import { SseClient } from '../../support/sse';
import { INGEST_TOKEN } from '../../support/test-env';
import { PageBrowser, postForm, signInBrowser } from '../../support/web';
import { waitFor } from '../support/stack';
import { callInBothEras } from './matrix';
import { FIGURE, MatrixReport } from './report';

/** A caller of the inbox pages: who they are, their browser, and a phone line of their own (for the stream's liveness). */
interface Caller {
  name: string;
  session: Session;
  browser: PageBrowser;
  ownPhone: string;
}

/** What one phase of callers found, for the row. */
interface Tally {
  calls: number;
  leaked: number;
  asUnknown: number;
  idCalls: number;
  changed: number;
  frames: number;
  /** How the victim-id calls were answered: HTTP status (and where a redirect went), by count. */
  statuses: Record<string, number>;
  /** What was done on line A while the streams were open. */
  injected?: string;
}

/**
 * Issue 34: the people's inbox (Conversations, a thread, Approvals, the live stream) keeps "a
 * person sees only the lines they may see" on every route. The victim: an OWNER's phone line and
 * email line ("line A") with an SMS thread (a label, a contact with notes, a DRAFT agent's turn
 * awaiting approval) and an email thread with a display name, a subject and an attachment. The
 * callers, each signed in to the web app: a MEMBER of the same org without line A, a user of
 * another org, a member whose memberships of line A were removed after signing in; then everyone
 * (the owner too) after line A is deleted. Each route × each caller: no marker of the victim in the
 * answer, a victim id answered exactly as a random unknown id (status, location and page, the id
 * replaced), the victim's rows unchanged, and the stream tells nothing of line A. The owner's
 * connected app (an OAuth grant of line A) is in it too: its Change access page and form, by URL.
 */
export async function inboxPages(t: MessagingTestApp, report: MatrixReport): Promise<void> {
  const problems: string[] = [];
  const K = randomBytes(5).toString('hex');
  const tool = async (key: string, name: string, args: Record<string, unknown>) => {
    const res = await rpc(t, key, 'tools/call', { name, arguments: args });
    if (res.status !== 200 || !res.body.result || res.body.result.isError) throw new Error(`${name}: ${res.status} ${res.text}`);
    return res.body.result.structuredContent;
  };

  // The victim and the callers.
  const owner = await createSession(t.admin, { tier: 'POWER', lines: ['PHONE_NUMBER', 'EMAIL_ACCOUNT', 'PHONE_NUMBER'] });
  const [phone, email, kept] = owner.lines;
  const member = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
  const removed = await createSession(t.admin, { orgId: owner.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
  for (const line of [phone, email]) await t.admin.put(`/admin/lines/${line.id}/members/${removed.userId}`).expect((r) => expect(r.status).toBeLessThan(300));
  const other = await createSession(t.admin, { tier: 'POWER', lines: ['PHONE_NUMBER'] });

  // The victim's data on line A.
  const partner = partnerPhone();
  const sms = await inboundSms(t, phone.address, partner, `inbox sms ${K}`);
  const { contact } = await tool(owner.apiKey, 'create_contact', { displayName: `Inbox Contact ${K}`, identities: [{ kind: 'PHONE', value: partner }] });
  await tool(owner.apiKey, 'update_contact', { contactId: contact.id, notes: `inbox notes ${K}` });
  await tool(owner.apiKey, 'label_thread', { threadId: sms.threadId, add: [{ name: `inbox-label-${K}` }] });
  const agent = (await t.admin.post(`/admin/lines/${phone.id}/agents`, { name: `Inbox Agent ${K}`, mode: 'DRAFT' }).expect(201)).body;
  const draftTurn = async (body: string): Promise<string> =>
    (await t.http().post(`/api/agents/${agent.id}/turns`).set('Authorization', `Bearer ${owner.apiKey}`).send({ threadId: sms.threadId, body }).expect(201))
      .body.turn.id;
  const turnId = await draftTurn(`inbox draft ${K}`);
  const mail = await t
    .http()
    .post('/ingest/email/inbound')
    .set('Authorization', `Bearer ${INGEST_TOKEN}`)
    .set('Content-Type', 'message/rfc822')
    .send(
      // The fixture's email, from a partner whose display name and address carry the marker.
      mixedEmail(email.address, [{ filename: `inbox-${K}.txt`, mimeType: 'text/plain', content: Buffer.from(`inbox attachment ${K}`) }], {
        messageId: `<inbox-${K}@partner.example>`,
        subject: `Inbox subject ${K}`,
        text: `inbox email ${K}`,
      })
        .toString('utf8')
        .replace('From: Maria Lopez <maria@partner.example>', `From: "Inbox Partner ${K}" <inbox.partner.${K}@example.org>`),
    )
    .expect(201);
  const [attachment] = await waitFor(
    async () => {
      const rows = await t.db.query(`SELECT id, extraction_status FROM attachments WHERE message_id = $1`, [mail.body.messageId]);
      const [{ unrelayed }] = await t.db.query(`SELECT count(*)::int AS unrelayed FROM outbox_events WHERE relayed_at IS NULL AND org_id = $1`, [owner.orgId]);
      return rows.length === 1 && ['extracted', 'failed'].includes(rows[0].extraction_status) && unrelayed === 0 && rows;
    },
    "the victim's attachment extracted and every event relayed",
    60_000,
  );

  // What must never show: ids, addresses and every text of line A (the callers' requests name some ids: those are not leaks).
  const markers: Record<string, string> = {
    smsThread: sms.threadId,
    smsMessage: sms.messageId,
    emailThread: mail.body.threadId,
    emailMessage: mail.body.messageId,
    attachmentId: attachment.id,
    turnId,
    contactId: contact.id,
    agentId: agent.id,
    phoneLine: phone.id,
    emailLine: email.id,
    phoneAddress: phone.address,
    emailAddress: email.address,
    partnerPhone: partner,
    partnerEmail: `inbox.partner.${K}@example.org`,
    displayName: `Inbox Partner ${K}`,
    subject: `Inbox subject ${K}`,
    smsBody: `inbox sms ${K}`,
    emailBody: `inbox email ${K}`,
    attachmentName: `inbox-${K}.txt`,
    attachmentText: `inbox attachment ${K}`,
    contactName: `Inbox Contact ${K}`,
    notes: `inbox notes ${K}`,
    label: `inbox-label-${K}`,
    draft: `inbox draft ${K}`,
    agentName: `Inbox Agent ${K}`,
  };
  const leaksOf = (text: string, request: string) =>
    Object.entries(markers)
      .filter(([, v]) => text.includes(v) && !request.includes(v))
      .map(([k]) => k);

  const browsers = {
    owner: await signInBrowser(t, owner.userId),
    member: await signInBrowser(t, member.userId),
    removed: await signInBrowser(t, removed.userId),
    other: await signInBrowser(t, other.userId),
  };
  // The owner's connected app, reading line A's phone: its grant id is what the callers try on Change access.
  const ownerApp = await connectApp(t, browsers.owner, {
    clientName: `Inbox App ${K}`,
    choice: consentChoice({ lineIds: [phone.id], permissions: ['read'] }),
  });
  const [{ id: grantId }] = await t.db.query(`SELECT id FROM oauth_grants WHERE client_id = $1`, [ownerApp.clientId]);
  markers.appName = `Inbox App ${K}`;
  const get = (b: PageBrowser, path: string) => t.http().get(path).set('Cookie', b.cookie);
  const downloadOf = (html: string) => {
    const href = /href="([^"]*\/attachments\/[^"]+\/download[^"]*)"/.exec(html)?.[1].replaceAll('&amp;', '&');
    if (!href) return null;
    const url = new URL(href);
    return url.pathname + url.search;
  };

  // Control: the owner and the member-to-be-removed see it all now (so a page without the markers later means something).
  const links: Partial<Record<'owner' | 'removed', string>> = {};
  for (const who of ['owner', 'removed'] as const) {
    const b = browsers[who];
    const pages = [
      await get(b, `/conversations/${sms.threadId}`),
      await get(b, `/conversations/${mail.body.threadId}`),
      await get(b, `/conversations?q=${encodeURIComponent(`inbox ${K}`)}`),
      await get(b, '/approvals'),
    ];
    const seen = pages.map((p) => p.text).join('\n');
    const missing = ['smsBody', 'notes', 'label', 'subject', 'displayName', 'attachmentName', 'draft'].filter((k) => !seen.includes(markers[k]));
    if (pages.some((p) => p.status !== 200) || missing.length)
      problems.push(`control: ${who} before the access ended: ${pages.map((p) => p.status).join('/')}, not shown: ${missing.join(', ')}`);
    const link = downloadOf(pages[1].text);
    if (!link) problems.push(`control: ${who}: no download link on the email thread`);
    else {
      links[who] = link;
      const file = await t.http().get(link);
      if (file.status !== 200 || !String(file.text ?? file.body).includes(markers.attachmentText))
        problems.push(`control: ${who}: the download answered ${file.status}`);
    }
  }
  // The owner's reply on the SMS thread, handed to the carrier: after line A is deleted, the carrier's report of it is an event of line A.
  // Its send key: replayed later by the callers with the owner's very arguments (a key is unique in the org).
  const ownerKey = `web-reply:${randomUUID()}`;
  const replied = await postForm(t, browsers.owner, `/conversations/${sms.threadId}/reply`, { body: `inbox reply ${K}`, idempotencyKey: ownerKey });
  if (replied.status !== 303) problems.push(`control: the owner's reply answered ${replied.status}`);
  const reply: { id: string; provider_message_id: string } = await waitFor(
    async () => {
      const [row] = await t.db.query(
        `SELECT id, provider_message_id FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND' AND status = 'SENT' AND provider_message_id IS NOT NULL`,
        [sms.threadId],
      );
      const [{ unrelayed }] = await t.db.query(`SELECT count(*)::int AS unrelayed FROM outbox_events WHERE relayed_at IS NULL AND org_id = $1`, [owner.orgId]);
      return unrelayed === 0 && row;
    },
    "the owner's reply sent and its events relayed",
    30_000,
  );
  markers.replyMessage = reply.id;
  markers.reply = `inbox reply ${K}`;
  for (const line of [phone, email]) await t.admin.delete(`/admin/lines/${line.id}/members/${removed.userId}`).expect(204);

  // The victim's rows (and the two orgs' labels, contacts, idempotency keys, events): any change by a call shows here.
  const orgs = [owner.orgId, other.orgId];
  const snapshot = async (): Promise<string> => {
    const sum = (table: string, where = 'org_id = ANY ($1::uuid[])', row = 'to_jsonb(x)::text') =>
      `(SELECT md5(coalesce(string_agg(${row}, '|' ORDER BY ${row}), '')) FROM ${table} x WHERE ${where})`;
    const [r] = await t.db.query(
      `SELECT ${[
        sum('messages'),
        sum('threads'),
        sum('thread_labels', 'thread_id IN (SELECT id FROM threads WHERE org_id = ANY ($1::uuid[]))'),
        sum('labels'),
        sum('contacts'),
        sum('identities'),
        sum('agent_turns'),
        sum('attachments'),
        sum('send_idempotency_keys'),
        sum('outbox_events', 'org_id = ANY ($1::uuid[])', 'x.id::text'),
        sum('oauth_grants', 'user_id IN (SELECT id FROM users WHERE org_id = ANY ($1::uuid[]))'),
      ].join(' || ')} AS sum`,
      [orgs],
    );
    return `${r.sum} carried ${t.carried.length}`;
  };
  const urls = t.app.get(AttachmentUrls);

  /** Every route of the inbox × one caller: leaks, answers as an unknown id, changes. */
  const probe = async (phase: string, c: Caller, tally: Tally, own: { download?: string }) => {
    const where = (what: string) => `${phase}: ${c.name}: ${what}`;
    type Answer = { status: number; location?: string; text: string };
    const answer = (r: { status: number; headers: Record<string, string>; text: string }): Answer => ({
      status: r.status,
      location: r.headers.location,
      text: r.text ?? '',
    });
    const call = async (what: string, request: string, send: () => Promise<Answer>): Promise<Answer> => {
      const before = await snapshot();
      const res = await send();
      const after = await snapshot();
      tally.calls += 1;
      const found = leaksOf(`${res.location ?? ''}\n${res.text}`, request);
      if (found.length) {
        tally.leaked += 1;
        problems.push(where(`${what}: LEAKED ${found.join(', ')} (HTTP ${res.status})`));
      }
      if (before !== after) {
        tally.changed += 1;
        problems.push(where(`${what}: CHANGED rows (HTTP ${res.status})`));
      }
      return res;
    };
    const page = (path: string) => call(`GET ${path}`, path, async () => answer(await get(c.browser, path)));
    const form = (path: string, fields: Record<string, string> = {}) =>
      call(`POST ${path}`, `${path} ${JSON.stringify(fields)}`, async () => answer(await postForm(t, c.browser, path, fields)));
    /** The victim's value and an unknown one through the same route: the same answer, the value replaced. */
    const asUnknown = async (route: string, victim: string, ghost: string, send: (value: string) => Promise<Answer>) => {
      const a = await send(victim);
      const b = await send(ghost);
      tally.idCalls += 1;
      const status = `${a.status}${a.location ? ` to ${a.location.replaceAll(victim, '<v>')}` : ''}`;
      tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
      const norm = (x: Answer, v: string) => JSON.stringify({ ...x, location: x.location?.replaceAll(v, '<v>'), text: x.text.replaceAll(v, '<v>') });
      if (norm(a, victim) === norm(b, ghost)) tally.asUnknown += 1;
      else
        problems.push(
          where(
            `${route}: answered ${a.status} ${a.location ?? ''}, an unknown value ${b.status} ${b.location ?? ''}${a.status === b.status ? ' (another page)' : ''}`,
          ),
        );
    };

    // Lists: nothing of line A, whatever the filter.
    await page('/conversations');
    await page('/conversations?awaiting=1');
    await page('/approvals');
    await asUnknown('GET /conversations?q=', `inbox ${K}`, `inbox ${randomBytes(5).toString('hex')}`, (q) => page(`/conversations?q=${encodeURIComponent(q)}`));
    await asUnknown('GET /conversations?label=', markers.label, `inbox-label-${randomBytes(5).toString('hex')}`, (l) =>
      page(`/conversations?label=${encodeURIComponent(l)}`),
    );
    for (const line of [phone.id, email.id]) await asUnknown('GET /conversations?line=', line, randomUUID(), (id) => page(`/conversations?line=${id}`));
    // A thread and its actions, by URL.
    for (const threadId of [sms.threadId, mail.body.threadId]) {
      const key = `web-reply:${randomUUID()}`;
      const routes: Array<[string, (id: string) => Promise<Answer>]> = [
        ['GET /conversations/:threadId', (id) => page(`/conversations/${id}`)],
        ['POST reply', (id) => form(`/conversations/${id}/reply`, { body: `attacker reply ${K}`, idempotencyKey: key })],
        ['POST labels', (id) => form(`/conversations/${id}/labels`, { label: `attacker-${K}` })],
        ['POST labels/remove', (id) => form(`/conversations/${id}/labels/remove`, { label: markers.label })],
        ['POST contact', (id) => form(`/conversations/${id}/contact`, { displayName: `Attacker ${K}` })],
        ['POST contact/notes', (id) => form(`/conversations/${id}/contact/notes`, { notes: `attacker notes ${K}` })],
      ];
      for (const [route, send] of routes) await asUnknown(route, threadId, randomUUID(), send);
    }
    // The owner's send key replayed with the owner's arguments, by the form and by the tool: the thread unknown, never the owner's message.
    await asUnknown("POST reply with the owner's send key", sms.threadId, randomUUID(), (id) =>
      form(`/conversations/${id}/reply`, { body: `inbox reply ${K}`, idempotencyKey: ownerKey }),
    );
    await asUnknown("reply_to_thread with the owner's send key", sms.threadId, randomUUID(), (id) => {
      const args = { threadId: id, body: `inbox reply ${K}`, idempotencyKey: ownerKey };
      return call('tools/call reply_to_thread', JSON.stringify(args), async () => {
        const { res: r, differs } = await callInBothEras(t, report, c.session.apiKey, 'reply_to_thread', args, true);
        if (differs) problems.push(`${where('reply_to_thread')} ${JSON.stringify(args)}: the 2026-07-28 request ${differs}`);
        return { status: r.status, text: JSON.stringify(r.body.result ?? r.body.error ?? null) };
      });
    });
    // The draft, by URL.
    const decisions: Array<[string, (id: string) => Promise<Answer>]> = [
      ['GET /approvals/:turnId/edit', (id) => page(`/approvals/${id}/edit`)],
      ['POST approve', (id) => form(`/approvals/${id}/approve`)],
      ['POST edit', (id) => form(`/approvals/${id}/edit`, { body: `attacker edit ${K}` })],
      ['POST reject', (id) => form(`/approvals/${id}/reject`)],
    ];
    for (const [route, send] of decisions) await asUnknown(route, turnId, randomUUID(), send);
    // The owner's connected app, by URL: Change access, its form posted to give it Send on line A (the owner's own page is theirs).
    if (c.session.userId !== owner.userId) {
      const access = accessChoice({ lineIds: [phone.id], permissions: ['send'] });
      await asUnknown('GET /settings/connected-apps/:id/edit', grantId, randomUUID(), (id) => page(`/settings/connected-apps/${id}/edit`));
      await asUnknown('POST /settings/connected-apps/:id/edit', grantId, randomUUID(), (id) => form(`/settings/connected-apps/${id}/edit`, access));
    }
    // The attachment: a link minted for the caller (as the thread page would have), and one the caller really got while it could see line A.
    const minted = (id: string) => {
      const url = new URL(urls.sign(id, { userId: c.session.userId, keyId: null }, new Date()));
      return url.pathname + url.search;
    };
    await asUnknown('GET a download link minted for the caller', attachment.id, randomUUID(), async (id) => {
      const path = minted(id);
      const a = await call(`GET ${path}`, path, async () => answer(await t.http().get(path)));
      // The signature differs with the id: the page is compared without the query.
      return { ...a, text: a.text.replace(path.split('?')[1], '<query>') };
    });
    if (own.download) {
      const r = await call('GET the download link of the thread page', own.download, async () => answer(await t.http().get(own.download!)));
      if (r.status !== 404) problems.push(where(`the download link got while on line A answered ${r.status}, not 404`));
    }
  };

  /**
   * The stream: each caller's `/live/events` and `?threadId=` of the SMS thread open while a new
   * inbound SMS (and, while line A lives, a new draft) lands on line A. Bound of the wait: then an
   * inbound SMS on each caller's own line; LiveStreams tells every stream of the process batch by
   * batch in commit order, so once a caller's plain stream has that later message, the frames of
   * line A's earlier events were written (or not) to all of that caller's streams.
   */
  const stream = async (phase: string, callers: Caller[], tally: Tally, control: { browser: PageBrowser } | null) => {
    const open = async (b: PageBrowser, path: string) => {
      const s = await SseClient.open(t.baseUrl, path, b.cookie);
      if (s.status !== 200) problems.push(`${phase}: ${path} answered ${s.status}`);
      return s;
    };
    const opened = [] as Array<{ c: Caller; plain: SseClient; narrowed: SseClient; ghost: SseClient }>;
    for (const c of callers)
      opened.push({
        c,
        plain: await open(c.browser, '/live/events'),
        narrowed: await open(c.browser, `/live/events?threadId=${sms.threadId}`),
        ghost: await open(c.browser, `/live/events?threadId=${randomUUID()}`),
      });
    const watching = control && (await open(control.browser, `/live/events?threadId=${sms.threadId}`));
    const all = [...opened.flatMap((o) => [o.plain, o.narrowed, o.ghost]), ...(watching ? [watching] : [])];
    try {
      await waitFor(() => all.every((s) => s.retry !== null), `${phase}: every stream started`, 15_000);
      const hidden = await t
        .http()
        .post('/ingest/sms/inbound')
        .set('Authorization', `Bearer ${INGEST_TOKEN}`)
        .send({ to: phone.address, from: partner, body: `inbox live ${K}`, providerMessageId: `inbox-live-${phase}-${K}` });
      const hiddenIds: string[] = [];
      if (hidden.status === 201) {
        hiddenIds.push(hidden.body.messageId);
        markers[`liveMessage ${phase}`] = hidden.body.messageId;
      } else if (control) problems.push(`${phase}: the inbound SMS on line A was refused: ${hidden.status}`);
      const injected = [`inbound SMS on line A: HTTP ${hidden.status}`];
      if (!control) {
        // Line A is deleted: the carrier's report of the owner's reply still commits an event of line A (checked below), which nobody may be told.
        const [{ events: before }] = await t.db.query(`SELECT count(*)::int AS events FROM outbox_events WHERE data::text LIKE $1`, [`%${reply.id}%`]);
        const carrierReport = await t
          .http()
          .post('/ingest/sms/status')
          .set('Authorization', `Bearer ${INGEST_TOKEN}`)
          .send({ providerMessageId: reply.provider_message_id, status: 'DELIVERED' });
        const committed = await waitFor(
          async () => {
            const [q] = await t.db.query(
              `SELECT count(*)::int AS events, count(*) FILTER (WHERE relayed_at IS NULL)::int AS unrelayed FROM outbox_events WHERE data::text LIKE $1`,
              [`%${reply.id}%`],
            );
            return q.unrelayed === 0 && q;
          },
          `${phase}: the report's events relayed`,
          30_000,
        );
        injected.push(`the carrier's report of a reply on line A: HTTP ${carrierReport.status}, ${committed.events - before} event(s) committed and relayed`);
      }
      if (control) {
        const turn = await draftTurn(`inbox live draft ${K}`);
        hiddenIds.push(turn);
        markers[`liveTurn ${phase}`] = turn;
        await waitFor(
          () => watching!.find('message.received', (d) => d.messageId === hidden.body.messageId),
          `${phase}: control: the owner's stream told`,
          30_000,
        );
      }
      for (const o of opened) {
        const own = await inboundSms(t, o.c.ownPhone, partnerPhone(), `own line ${phase}`);
        await waitFor(
          () => o.plain.find('message.received', (d) => d.messageId === own.messageId),
          `${phase}: ${o.c.name}: a later event on their own line`,
          30_000,
        );
      }
      tally.injected = injected.join(', ');
      const victimIds = [sms.threadId, mail.body.threadId, phone.id, email.id, reply.id, ...hiddenIds];
      for (const o of opened)
        for (const [kind, s] of [
          ['/live/events', o.plain],
          ['?threadId=<victim thread>', o.narrowed],
          ['?threadId=<unknown>', o.ghost],
        ] as const) {
          const told = s.events.filter((e) => victimIds.some((id) => e.data.includes(id)));
          const text = s.events.map((e) => `${e.event} ${e.data}`).join('\n');
          tally.calls += 1;
          tally.frames += told.length;
          const found = leaksOf(text, '');
          if (told.length || found.length) {
            tally.leaked += 1;
            problems.push(`${phase}: ${o.c.name}: ${kind}: LEAKED ${told.length} frame(s) of line A (${found.join(', ')})`);
          }
          if (kind !== '/live/events' && s.events.length > 0) problems.push(`${phase}: ${o.c.name}: ${kind}: ${s.events.length} event(s)`);
        }
    } finally {
      for (const s of all) s.disconnect();
    }
  };

  const figures: string[] = [];
  const runPhase = async (phase: string, callers: Array<Caller & { download?: string }>, control: { browser: PageBrowser } | null) => {
    const tally: Tally = { calls: 0, leaked: 0, asUnknown: 0, idCalls: 0, changed: 0, frames: 0, statuses: {} };
    for (const c of callers) await probe(phase, c, tally, { download: c.download });
    await stream(phase, callers, tally, control);
    figures.push(
      `${phase} (${callers.map((c) => c.name).join(', ')}): ${tally.calls} calls, ${tally.leaked} leaks, ${tally.asUnknown} of ${tally.idCalls} as an unknown value (${Object.entries(
        tally.statuses,
      )
        .map(([status, n]) => `${n}× ${status}`)
        .join(', ')}), ${tally.changed} changed, ${tally.frames} stream frames of line A (${tally.injected})`,
    );
  };
  const phoneOf = (s: Session) => s.lines.find((l) => l.type === 'PHONE_NUMBER')!.address;
  const callers: Array<Caller & { download?: string }> = [
    { name: 'same-org MEMBER without line A', session: member, browser: browsers.member, ownPhone: phoneOf(member) },
    { name: 'other-org OWNER', session: other, browser: browsers.other, ownPhone: phoneOf(other) },
    { name: 'member removed from line A', session: removed, browser: browsers.removed, ownPhone: phoneOf(removed), download: links.removed },
  ];
  await runPhase('line A live', callers, { browser: browsers.owner });

  // Line A deleted: everyone, the owner too, gets nothing of it (the turn's status is the owner's control: still awaiting, untouched).
  for (const line of [phone, email]) await t.admin.delete(`/admin/lines/${line.id}`).expect(204);
  await runPhase(
    'line A deleted',
    [{ name: 'owner', session: owner, browser: browsers.owner, ownPhone: kept.address, download: links.owner }, ...callers],
    null,
  );

  const [turn] = await t.db.query(`SELECT status FROM agent_turns WHERE id = $1`, [turnId]);
  if (turn.status !== 'AWAITING_APPROVAL') problems.push(`the victim's draft is ${turn.status}`);
  report.badInputs(
    'inbox pages',
    `the inbox pages (Conversations, a thread and its 5 forms, Approvals and its 3 forms, a download, the live stream) and the owner's connected app's Change access page and form × 3 callers of a line they may not see, then 4 after it was deleted`,
  );
  report.figure(FIGURE.inboxPages, figures.join('; '));
  report.note('inbox pages', ...problems.slice(0, 10));
  expect(problems).toEqual([]);
}
