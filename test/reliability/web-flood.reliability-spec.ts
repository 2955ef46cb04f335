import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Client } from 'pg';
import { leaseSize } from '../../src/limits/rate-limits.service';
import { admin, createTenant, email, HttpAnswer, ingestSms, percentile, phone, runPool, send, Tenant } from './support/clients';
import { CarrierStandIn } from './support/carrier';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder, tally } from './support/results';
import { ServiceProcess, waitFor } from './support/stack';

/**
 * A script with a person's cookie floods the web app's reply form (docs/web.md, "Limits"): one
 * person's two sessions POST /conversations/:threadId/reply through two `api` processes that share
 * PostgreSQL and Redis, many at once, each with an idempotencyKey of its own (so none is a replay).
 * ActionGuard holds the person to WEB_ACTION_RATE_LIMIT across replicas and sessions: at
 * most the limit is accepted (and at least the limit less the leases a replica may leave unspent,
 * rate-limits.service.ts leaseSize), the rest is a 429 page with Retry-After; every accepted
 * reply is one outbound message, handed to the carrier once; a colleague on the same line still
 * replies while the flooder is refused.
 *
 * Then two people approve one DRAFT agent's draft at once from both replicas: one approval wins
 * (303), the others get the 409 "already decided" page, and the draft is sent once, with one
 * agent_turn.sent event.
 *
 * Sending goes through the worker to a carrier stand-in (SMS_CARRIER_URL), as in production.
 */
const LIMIT = 40;
/** Longer than the test: the window cannot roll over and refill the budget halfway. */
const WINDOW_SECONDS = 3_600;
const APIS = 2;
const FLOOD_REQUESTS = 300;
const FLOOD_CONCURRENCY = 16;
const APPROVALS = 20;
/** The slack rate-limits.service.ts documents: each replica may refuse up to leaseSize - 1 calls early a window. */
const LEASE_SLACK = APIS * (leaseSize(LIMIT) - 1);

/** The origin of PUBLIC_BASE_URL in the stack (support/stack.ts): what a browser on the service's pages sends. */
const PAGE_ORIGIN = 'http://127.0.0.1:3000';

interface Browser {
  cookie: string;
  csrf: string;
}

interface Answer extends HttpAnswer {
  api: number;
}

const header = (answer: HttpAnswer, name: string): string | undefined => {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

describe('reliability: a person floods the web forms', () => {
  let stack: Stack;
  let carrier: CarrierStandIn;
  let db: Client;
  let owner: Tenant;
  let lineId: string;
  let threadId: string;
  let passedTests = 0;
  const result = new ResultBuilder('web-flood', "A person's web actions flooding the reply and approve forms");

  beforeAll(async () => {
    carrier = new CarrierStandIn();
    const carrierUrl = await carrier.start();
    stack = await startStack({
      tag: 'webflood',
      apis: APIS,
      workers: 1,
      env: { WEB_ACTION_RATE_LIMIT: String(LIMIT), WEB_ACTION_RATE_WINDOW_SECONDS: String(WINDOW_SECONDS), SMS_CARRIER_URL: carrierUrl },
    });
    owner = await createTenant(stack.apis[0].baseUrl, { lines: ['PHONE_NUMBER'] });
    lineId = owner.lines[0].id;
    const inbound = await ingestSms(stack.apis[0].baseUrl, {
      to: owner.lines[0].address,
      from: phone('+1666'),
      body: 'Hello',
      providerMessageId: randomUUID(),
    });
    expect(inbound.status).toBe(201);
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    threadId = (await db.query('SELECT thread_id FROM messages WHERE id = $1', [inbound.messageId])).rows[0].thread_id;
  });
  afterAll(async () => {
    result.passed = passedTests === 2;
    result.record();
    await db?.end();
    await stack?.stop();
    await carrier?.stop();
  });

  /** A MEMBER of the org, on the phone line, through the admin API. */
  async function member(name: string): Promise<string> {
    const base = stack.apis[0].baseUrl;
    const user = await admin(base, 'POST', `/admin/orgs/${owner.orgId}/users`, {
      email: email(name.toLowerCase().replace(/[^a-z]/g, '')),
      displayName: name,
      role: 'MEMBER',
    });
    await admin(base, 'PUT', `/admin/lines/${lineId}/members/${user.id}`);
    return user.id as string;
  }

  /** Signs the person in through an admin-made link on `api`, as a browser would, and reads the session's CSRF token from a page. */
  async function signIn(userId: string, api: ServiceProcess): Promise<Browser> {
    const link = await admin(api.baseUrl, 'POST', `/admin/users/${userId}/sign-in-links`);
    const token = new URL(link.url as string).searchParams.get('token')!;
    const signedIn = await send('POST', `${api.baseUrl}/sign-in/link`, {
      headers: { origin: PAGE_ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(signedIn.status).toBe(303);
    const cookie = String(header(signedIn, 'set-cookie')).split(';')[0];
    const page = await send('GET', `${api.baseUrl}/settings/api-keys`, { headers: { cookie } });
    expect(page.status).toBe(200);
    return { cookie, csrf: /name="_csrf" value="([^"]+)"/.exec(page.text)![1] };
  }

  /** A form POST as the signed-in browser sends it, to the `api`-th process. */
  async function postForm(b: Browser, api: number, path: string, fields: Record<string, string> = {}): Promise<Answer> {
    const answer = await send('POST', `${stack.apis[api].baseUrl}${path}`, {
      headers: { cookie: b.cookie, origin: PAGE_ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: b.csrf, ...fields }).toString(),
    });
    return { ...answer, api };
  }

  const reply = (b: Browser, api: number, body: string) =>
    postForm(b, api, `/conversations/${threadId}/reply`, { body, idempotencyKey: `web-reply:${randomUUID()}` });

  /** The thread's outbound messages (id, body, status). */
  const outbound = async () =>
    (await db.query(`SELECT id, body, status FROM messages WHERE thread_id = $1 AND direction = 'OUTBOUND'`, [threadId])).rows as Array<{
      id: string;
      body: string;
      status: string;
    }>;

  /** Waits until no outbound message of the thread is QUEUED any more (the worker handed each over). */
  const handedOver = () =>
    waitFor(
      async () => {
        const rows = await outbound();
        return rows.every((m) => m.status !== 'QUEUED') && rows;
      },
      'every outbound message of the thread handed to the carrier',
      30_000,
      200,
    );

  it('one person floods the reply form from two sessions through two replicas: at most WEB_ACTION_RATE_LIMIT are sent, each once', async () => {
    const flooderId = await member('Flooder');
    const colleagueId = await member('Colleague');
    const sessions = [await signIn(flooderId, stack.apis[0]), await signIn(flooderId, stack.apis[1])];
    const colleague = await signIn(colleagueId, stack.apis[1]);

    const answers: Answer[] = new Array(FLOOD_REQUESTS);
    const started = Date.now();
    // Request i goes to replica i % 2 with session ⌊i / 2⌋ % 2: each session through each replica.
    await runPool(FLOOD_REQUESTS, FLOOD_CONCURRENCY, async (i) => {
      answers[i] = await reply(sessions[Math.floor(i / 2) % 2], i % APIS, `flood ${i}`);
    });
    const floodSeconds = (Date.now() - started) / 1000;

    // The flooder is refused on both replicas while the colleague, on the same line, replies through both.
    const during = await Promise.all([
      reply(sessions[0], 0, 'refused again'),
      reply(sessions[1], 1, 'refused again'),
      reply(colleague, 0, 'colleague 1'),
      reply(colleague, 1, 'colleague 2'),
    ]);

    const statuses = new Map<number, number>();
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    const accepted = answers.filter((a) => a.status === 303);
    const refused = answers.filter((a) => a.status === 429);
    const badRefusals = refused.filter((a) => {
      const retryAfter = Number(header(a, 'retry-after'));
      return !(retryAfter >= 1 && retryAfter <= WINDOW_SECONDS) || !a.text.includes('WEB_ACTION_RATE_LIMIT');
    });
    const retryAfters = refused.map((a) => Number(header(a, 'retry-after')));
    const sentRows = await handedOver();
    const floodRows = sentRows.filter((m) => m.body.startsWith('flood '));
    const colleagueRows = sentRows.filter((m) => m.body.startsWith('colleague '));
    await waitFor(() => sentRows.every((m) => carrier.perMessage().has(m.id)), 'the carrier to receive every sent reply', 10_000);
    const perMessage = carrier.perMessage();
    const handedTwice = sentRows.filter((m) => (perMessage.get(m.id) ?? 0) > 1);
    const acceptedBodies = answers.flatMap((a, i) => (a.status === 303 ? [`flood ${i}`] : []));

    result.load =
      `${fmt(FLOOD_REQUESTS)} reply POSTs from 2 sessions of one person through ${APIS} api processes, ${FLOOD_CONCURRENCY} at once ` +
      `(WEB_ACTION_RATE_LIMIT=${LIMIT} per ${fmt(WINDOW_SECONDS)} s); ${APPROVALS} concurrent approvals of one draft by 2 people`;
    result.faults = "a script with a person's cookie flooding the forms; two people deciding one draft at once";
    result.figure('reply POSTs sent / answers', `${fmt(FLOOD_REQUESTS)} in ${floodSeconds.toFixed(1)} s: ${tally(statuses)}`);
    result.figure(
      'accepted (303) / limit / lower bound (limit less lease slack)',
      `${fmt(accepted.length)} / ${LIMIT} / ${LIMIT - LEASE_SLACK} (per replica: ${accepted.filter((a) => a.api === 0).length} / ${accepted.filter((a) => a.api === 1).length})`,
    );
    result.figure(
      'refused (429), with Retry-After and the page naming WEB_ACTION_RATE_LIMIT',
      `${fmt(refused.length)}, ${fmt(refused.length - badRefusals.length)}${refused.length ? ` (Retry-After ${Math.min(...retryAfters)}–${Math.max(...retryAfters)} s)` : ''}`,
    );
    const latency = (of: Answer[]) => {
      const ms = of.map((a) => a.ms);
      return `${fmt(percentile(ms, 50))} / ${fmt(percentile(ms, 99))} ms`;
    };
    result.figure('latency p50 / p99: accepted; refused', `${latency(accepted)}; ${latency(refused)}`);
    result.figure('outbound rows of the thread (flood / colleague)', `${fmt(floodRows.length)} / ${fmt(colleagueRows.length)}`);
    result.figure('SMS the carrier received (requests / distinct messages)', `${fmt(carrier.carried.length)} / ${fmt(perMessage.size)}`);
    result.figure(
      'flooder on both replicas after the flood / colleague on both',
      `${during[0].status}, ${during[1].status} / ${during[2].status}, ${during[3].status}`,
    );
    // Replies answered 303 whose SMS never reached the carrier.
    const answeredSent = accepted.length + during.filter((a) => a.status === 303).length;
    result.lost = Math.max(0, answeredSent - sentRows.filter((m) => perMessage.has(m.id)).length);
    result.duplicates = `${fmt(handedTwice.length)} SMS handed to the carrier twice`;
    const errorLines = stack.apis.flatMap((api) => api.errorLines());
    // A check Redis does not answer within 250 ms lets the request through (rate-limits.service.ts): one warning a process.
    const failedOpen = stack.apis.filter((api) => readFileSync(api.logFile, 'utf8').includes('rate limits are not enforced')).length;
    result.figure('api processes whose limit check let requests through (Redis slower than 250 ms)', fmt(failedOpen));
    result.figure('error lines in the api logs', fmt(errorLines.length));
    if (errorLines.length) result.notes.push(`first error line: ${errorLines[0].slice(0, 400)}`);

    // No 5xx, no dropped connection: every answer is the reply sent (303) or the limit's page (429).
    expect(answers.filter((a) => a.status !== 303 && a.status !== 429).map((a) => `${a.status} ${a.error ?? a.text.slice(0, 200)}`)).toEqual([]);
    expect(accepted.length).toBeLessThanOrEqual(LIMIT);
    expect(accepted.length).toBeGreaterThanOrEqual(LIMIT - LEASE_SLACK);
    expect(badRefusals.map((a) => ({ status: a.status, retryAfter: header(a, 'retry-after'), text: a.text.slice(0, 300) })).slice(0, 3)).toEqual([]);
    expect(during.map((a) => a.status)).toEqual([429, 429, 303, 303]);
    // Every accepted reply is one outbound message of its text, none of a refused one, none twice.
    expect(floodRows.map((m) => m.body).sort()).toEqual(acceptedBodies.sort());
    expect(colleagueRows.map((m) => m.body).sort()).toEqual(['colleague 1', 'colleague 2']);
    expect(sentRows).toHaveLength(accepted.length + 2);
    expect(handedTwice).toEqual([]);
    expect(carrier.carried.filter((sms) => sentRows.some((m) => m.id === sms.messageId))).toHaveLength(sentRows.length);
    expect(errorLines).toEqual([]);
    passedTests += 1;
  });

  it('two people approve one draft 20 times at once through both replicas: one 303, the rest 409, sent once, one agent_turn.sent', async () => {
    const base = stack.apis[0].baseUrl;
    const approvers = [await member('Approver A'), await member('Approver B')];
    const browsers = [await signIn(approvers[0], stack.apis[0]), await signIn(approvers[1], stack.apis[1])];
    const agent = await admin(base, 'POST', `/admin/lines/${lineId}/agents`, { name: 'Race bot', mode: 'DRAFT' });
    const draftBody = `Draft to approve once ${randomUUID()}`;
    const drafted = await send('POST', `${base}/api/agents/${agent.id}/turns`, {
      headers: { authorization: `Bearer ${owner.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ threadId, body: draftBody }),
    });
    expect(drafted.status).toBe(201);
    const turnId = JSON.parse(drafted.text).turn.id as string;

    // Approval i: person ⌊i / 2⌋ % 2 through replica i % 2, all at once.
    const answers = await Promise.all(
      Array.from({ length: APPROVALS }, (_, i) => postForm(browsers[Math.floor(i / 2) % 2], i % APIS, `/approvals/${turnId}/approve`)),
    );
    const statuses = new Map<number, number>();
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    const won = answers.filter((a) => a.status === 303);
    const decided = answers.filter((a) => a.status === 409 && a.text.includes('This draft was already approved'));
    await handedOver();
    const sent = (await outbound()).filter((m) => m.body === draftBody);
    await waitFor(() => carrier.carried.some((sms) => sms.body === draftBody), 'the carrier to receive the approved draft', 10_000);
    const carried = carrier.carried.filter((sms) => sms.body === draftBody);
    const events = (await db.query(`SELECT count(*)::int AS n FROM outbox_events WHERE type = 'agent_turn.sent' AND data->'agentTurn'->>'id' = $1`, [turnId]))
      .rows[0].n as number;
    const turn = (await db.query('SELECT status, decided_by FROM agent_turns WHERE id = $1', [turnId])).rows[0];

    result.figure(`approvals of one draft (${APPROVALS} at once, 2 people, ${APIS} replicas)`, tally(statuses));
    result.figure('draft: outbound rows / SMS the carrier received / agent_turn.sent events', `${sent.length} / ${carried.length} / ${events}`);

    expect(Object.fromEntries(statuses)).toEqual({ 303: 1, 409: APPROVALS - 1 });
    expect(header(won[0], 'location')).toBe('/approvals?done=approved');
    expect(decided).toHaveLength(APPROVALS - 1);
    expect(sent).toHaveLength(1);
    expect(carried).toEqual([expect.objectContaining({ messageId: sent[0].id })]);
    expect(events).toBe(1);
    expect(turn.status).toBe('SENT');
    expect(approvers).toContain(turn.decided_by);
    expect(stack.apis.flatMap((api) => api.errorLines())).toEqual([]);
    passedTests += 1;
  });
});
