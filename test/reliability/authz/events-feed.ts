import { randomBytes } from 'node:crypto';
import { getEvents } from '../../support/event-feed';
import { MessagingTestApp, partnerPhone } from '../../support/messaging-hooks';
import { rpc } from '../../support/mcp';
import { openEventStream } from '../../support/mcp-events-clients';
import { modernRpc } from '../../support/mcp-modern';
import { connectOverHttp } from '../../support/oauth';
import { createSession } from '../../support/session';
import { SseClient } from '../../support/sse';
import { INGEST_TOKEN } from '../../support/test-env';
import { PAGE_ORIGIN } from '../../support/web';
import { waitFor } from '../support/stack';
import { linesKeyOutside, M } from './matrix';
import { FIGURE, MatrixReport } from './report';

type Era = 'legacy' | 'modern';
const ERAS: Era[] = ['legacy', 'modern'];
const KIND = 'message.received';

/** A caller that may receive events (it has `webhooks`), and the line of its own whose SMS, sent after the victim's, marks "caught up". */
interface Receiver {
  name: string;
  token: string;
  /** An OAuth access token: the HTTP feed refuses it with 401 (docs/events-feed.md). */
  oauth: boolean;
  ownLine: string;
}

/** What one receiver collected on each surface, as the raw text a client saw. */
interface Collected {
  poll: Record<Era, string[]>;
  stream: Record<Era, SseClient>;
  subscription: Record<Era, string>;
  feed: string[];
}

/**
 * Issue 43: the MCP Events surfaces (events/poll, events/stream, events/subscribe on /api/mcp in
 * both eras, and GET /api/events) × callers who may not see the victim's line A: another org's
 * OWNER, a same-org user on the victim's lines with a key limited to a line of their own, a MEMBER
 * removed from line A, and the victim's own OAuth grant narrowed to its other line. Each opens every
 * surface, an SMS arrives on line A, then one on a line the caller does see: once that one has
 * reached each surface (events come in commit order), none holds line A's event, its body or its
 * ids. A key and a grant without `webhooks` are refused on every surface with -32012
 * missing_permission (the HTTP feed: 403 for the key, 401 for the grant). The control: the victim's
 * own key gets line A's event on every surface.
 */
export async function eventsFeed(t: MessagingTestApp, report: MatrixReport): Promise<void> {
  const admin = t.admin;
  const problems: string[] = [];
  const tag = `events-${M}`;
  const victim = await createSession(admin, { tier: 'POWER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER'] });
  const [lineA, lineB] = victim.lines;
  const tokenOf = async (choice: { lineIds?: string[]; permissions: string[] }) => {
    const link = await admin.post(`/admin/users/${victim.userId}/sign-in-links`).expect(201);
    return (await connectOverHttp({ url: t.baseUrl, origin: PAGE_ORIGIN }, new URL(link.body.url).searchParams.get('token')!, choice)).tokens.access_token;
  };
  const otherOrg = await createSession(admin, { tier: 'POWER', lines: ['PHONE_NUMBER'] });
  const { user: linesUser, key: linesKey } = await linesKeyOutside(t, victim);
  const member = await createSession(admin, { orgId: victim.orgId, role: 'MEMBER', lines: ['PHONE_NUMBER'] });
  await admin.put(`/admin/lines/${lineA.id}/members/${member.userId}`).expect(200);
  await admin.delete(`/admin/lines/${lineA.id}/members/${member.userId}`).expect(204);
  const receivers: Receiver[] = [
    { name: 'other-org OWNER', token: otherOrg.apiKey, oauth: false, ownLine: otherOrg.lines[0].address },
    { name: 'LINES key outside line A', token: linesKey, oauth: false, ownLine: linesUser.lines[0].address },
    { name: 'MEMBER removed from line A', token: member.apiKey, oauth: false, ownLine: member.lines[0].address },
    {
      name: 'OAuth grant narrowed to line B',
      token: await tokenOf({ lineIds: [lineB.id], permissions: ['read', 'webhooks'] }),
      oauth: true,
      ownLine: lineB.address,
    },
  ];
  const control: Receiver = { name: "the victim's own key", token: victim.apiKey, oauth: false, ownLine: lineA.address };
  const readOnlyKey = (await admin.post(`/admin/users/${victim.userId}/api-keys`, { name: 'read only', permissions: ['read'] }).expect(201)).body.key;
  const readOnlyGrant = await tokenOf({ permissions: ['read'] });

  // The receiver answers a subscription's verification challenge; everything else as before.
  const respond = t.receiver.respond;
  t.receiver.respond = (req) =>
    req.body.includes('"type":"verification"')
      ? {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ challenge: (JSON.parse(req.body) as { challenge: string }).challenge }),
        }
      : respond(req);
  const streams: SseClient[] = [];
  const subscriptions: Array<{ token: string; id: string; era: Era }> = [];
  let nextId = 1;
  const mcp = (era: Era, token: string, method: string, params: Record<string, unknown>) =>
    era === 'legacy' ? rpc(t, token, method, params) : modernRpc(t, token, method, params);
  const openStream = async (era: Era, token: string) => {
    const sse = await openEventStream(t.baseUrl, era, token, nextId++, { name: KIND, cursor: null });
    streams.push(sse);
    return sse;
  };
  const subscribeUrl = (who: string, era: Era) => `/evsub-${who.replace(/\W+/g, '-')}-${era}-${M}`;
  const subscribe = (era: Era, token: string, path: string) =>
    mcp(era, token, 'events/subscribe', {
      name: KIND,
      delivery: { mode: 'webhook', url: `${t.receiverUrl}${path}`, secret: `whsec_${randomBytes(32).toString('base64')}` },
      cursor: null,
    });

  try {
    // Refused for the permission, on every surface, in both eras.
    let refusals = 0;
    let refusalCalls = 0;
    for (const [who, token, feedStatus] of [
      ['read-only key', readOnlyKey, 403],
      ['read-only OAuth grant', readOnlyGrant, 401],
    ] as const) {
      const refused = (where: string, status: number, error: any) => {
        refusalCalls += 1;
        if (error?.code === -32012 && error.data?.reason === 'missing_permission' && error.data?.permission === 'webhooks') refusals += 1;
        else
          problems.push(`${who}: ${where}: not refused with -32012 missing_permission webhooks: HTTP ${status} ${JSON.stringify(error ?? null).slice(0, 200)}`);
      };
      for (const era of ERAS) {
        const poll = await mcp(era, token, 'events/poll', { name: KIND, cursor: null, timeoutMs: 0 });
        refused(`events/poll (${era})`, poll.status, poll.body?.error);
        const sub = await subscribe(era, token, subscribeUrl(who, era));
        refused(`events/subscribe (${era})`, sub.status, sub.body?.error);
        const sse = await openStream(era, token);
        await waitFor(() => sse.ended, `${who}: the refused events/stream (${era}) to end`, 15_000, 50);
        const type = String(sse.response.headers['content-type'] ?? '');
        if (!type.startsWith('application/json')) problems.push(`${who}: events/stream (${era}) answered ${type}, not plain JSON`);
        refused(`events/stream (${era})`, sse.status, type.startsWith('application/json') ? JSON.parse(sse.text).error : null);
      }
      const feed = await getEvents(t, `Bearer ${token}`, { type: KIND });
      refusalCalls += 1;
      if (feed.status === feedStatus) refusals += 1;
      else problems.push(`${who}: GET /api/events answered ${feed.status}, not ${feedStatus}: ${feed.text.slice(0, 200)}`);
    }

    // Every receiver (and the control) opens every surface before the SMS.
    const collected = new Map<Receiver, Collected>();
    const cursors = new Map<string, string>();
    for (const r of [...receivers, control]) {
      const c = { poll: { legacy: [], modern: [] }, subscription: {}, stream: {}, feed: [] } as unknown as Collected;
      for (const era of ERAS) {
        const poll = await mcp(era, r.token, 'events/poll', { name: KIND, cursor: null, timeoutMs: 0 });
        if (poll.status !== 200 || !poll.body.result?.cursor) throw new Error(`${r.name}: events/poll (${era}): ${poll.status} ${poll.text.slice(0, 200)}`);
        cursors.set(`${r.name} ${era}`, poll.body.result.cursor);
        const sse = await openStream(era, r.token);
        await waitFor(() => sse.text.includes('notifications/events/active') || sse.ended, `${r.name}: events/stream (${era}) to open`, 15_000, 50);
        if (sse.ended) throw new Error(`${r.name}: events/stream (${era}) did not open: ${sse.status} ${sse.text.slice(0, 200)}`);
        c.stream[era] = sse;
        const path = subscribeUrl(r.name, era);
        const sub = await subscribe(era, r.token, path);
        if (sub.status !== 200 || !sub.body.result?.id) throw new Error(`${r.name}: events/subscribe (${era}): ${sub.status} ${sub.text.slice(0, 200)}`);
        subscriptions.push({ token: r.token, id: sub.body.result.id, era });
        c.subscription[era] = path;
      }
      if (!r.oauth) {
        const first = await getEvents(t, `Bearer ${r.token}`, { type: KIND }).expect(200);
        cursors.set(`${r.name} feed`, first.body.cursor);
      } else {
        const feed = await getEvents(t, `Bearer ${r.token}`, { type: KIND });
        if (feed.status !== 401) problems.push(`${r.name}: GET /api/events answered ${feed.status}, not 401 (an OAuth token is refused on the REST routes)`);
      }
      collected.set(r, c);
    }

    // The victim's SMS on line A, then one on each receiver's own line.
    const sms = async (to: string, body: string) =>
      (
        await t
          .http()
          .post('/ingest/sms/inbound')
          .set('Authorization', `Bearer ${INGEST_TOKEN}`)
          .send({ to, from: partnerPhone(), body, providerMessageId: `${tag}-${randomBytes(4).toString('hex')}` })
          .expect(201)
      ).body;
    const secretBody = `EVENTS LINE A CONFIDENTIAL ${tag}`;
    const hidden = await sms(lineA.address, secretBody);
    const markerOf = (r: Receiver) => (r === control ? secretBody : `events marker ${r.name} ${tag}`);
    for (const r of receivers) await sms(r.ownLine, markerOf(r));

    // Each surface, until the caller's marker (the control: line A's SMS) has come.
    for (const [r, c] of collected) {
      const marker = markerOf(r);
      for (const era of ERAS) {
        let cursor = cursors.get(`${r.name} ${era}`)!;
        await waitFor(
          async () => {
            const poll = await mcp(era, r.token, 'events/poll', { name: KIND, cursor, timeoutMs: 5_000 });
            if (poll.status !== 200 || !poll.body.result) throw new Error(`${r.name}: events/poll (${era}): ${poll.status} ${poll.text.slice(0, 200)}`);
            c.poll[era].push(...poll.body.result.events.map((e: unknown) => JSON.stringify(e)));
            cursor = poll.body.result.cursor;
            return c.poll[era].some((e) => e.includes(marker));
          },
          `${r.name}: events/poll (${era}) to return its marker`,
          30_000,
          0,
        ).catch((e: Error) => problems.push(e.message));
        const sse = c.stream[era];
        await waitFor(() => sse.text.includes(marker) || sse.ended, `${r.name}: events/stream (${era}) to send its marker`, 30_000, 50).catch(() => undefined);
        if (!sse.text.includes(marker)) problems.push(`${r.name}: events/stream (${era}) never sent its marker (${sse.ended ? 'ended' : 'open'})`);
        await waitFor(
          () => t.receiver.requests.some((q) => q.url === c.subscription[era] && q.body.includes(marker)),
          `${r.name}: the events/subscribe (${era}) delivery of its marker`,
          30_000,
          50,
        ).catch((e: Error) => problems.push(e.message));
      }
      if (!r.oauth) {
        let cursor = cursors.get(`${r.name} feed`)!;
        await waitFor(
          async () => {
            const page = await getEvents(t, `Bearer ${r.token}`, { type: KIND, cursor, wait: '5' }).expect(200);
            c.feed.push(...page.body.events.map((e: unknown) => JSON.stringify(e)));
            cursor = page.body.cursor;
            return c.feed.some((e) => e.includes(marker));
          },
          `${r.name}: GET /api/events to return its marker`,
          30_000,
          0,
        ).catch((e: Error) => problems.push(e.message));
      }
    }

    // Line A's event as the victim saw it: its id joins what must never show.
    const seen = collected
      .get(control)!
      .poll.legacy.map((e) => JSON.parse(e) as { eventId: string })
      .find((e) => JSON.stringify(e).includes(secretBody));
    const markers: Record<string, string> = {
      body: secretBody,
      messageId: hidden.messageId,
      threadId: hidden.threadId,
      ...(seen ? { eventId: `"${seen.eventId}"` } : {}),
    };
    const figures: string[] = [];
    for (const [r, c] of collected) {
      const surfaces: Array<[string, string]> = [
        ...ERAS.map((era): [string, string] => [`events/poll (${era})`, c.poll[era].join('\n')]),
        ...ERAS.map((era): [string, string] => [`events/stream (${era})`, c.stream[era].text]),
        ...ERAS.map((era): [string, string] => [
          `events/subscribe (${era})`,
          t.receiver.requests
            .filter((q) => q.url === c.subscription[era])
            .map((q) => q.body)
            .join('\n'),
        ]),
        ...(r.oauth ? [] : [['GET /api/events', c.feed.join('\n')] as [string, string]]),
      ];
      const holding = surfaces.filter(([, text]) => Object.values(markers).some((m) => text.includes(m)));
      if (r === control) {
        const blind = surfaces.filter(([, text]) => !text.includes(secretBody) || !seen || !text.includes(seen.eventId)).map(([where]) => where);
        if (blind.length) problems.push(`control: the victim's own key did not get line A's event on ${blind.join(', ')}`);
        figures.push(`control ${surfaces.length - blind.length} of ${surfaces.length}`);
      } else {
        for (const [where, text] of holding)
          problems.push(
            `${r.name}: ${where}: LEAKED ${Object.entries(markers)
              .filter(([, m]) => text.includes(m))
              .map(([k]) => k)
              .join(', ')}`,
          );
        figures.push(`${r.name} ${holding.length} of ${surfaces.length}`);
      }
    }
    if (!seen) problems.push("control: the victim's events/poll never returned line A's event");

    report.badInputs(
      'events',
      `${receivers.length} callers outside line A × events/poll, events/stream, events/subscribe (both eras) and GET /api/events; 2 credentials without webhooks`,
    );
    report.figure(FIGURE.events, `${figures.join('; ')}; refused for the permission ${refusals} of ${refusalCalls}`);
    report.note('events', ...problems.slice(0, 10));
    expect(problems).toEqual([]);
    expect(refusals).toBe(refusalCalls);
  } finally {
    for (const sse of streams) sse.disconnect();
    for (const s of subscriptions) await mcp(s.era, s.token, 'events/unsubscribe', { id: s.id });
    t.receiver.respond = respond;
  }
}
