import { Client } from 'pg';
import { createMcpTestApp, hookUrl, McpTestApp, toolOk } from '../support/mcp';
import { createSession, Session } from '../support/session';
import { fillLargeOrg, fillOtherOrgs, LARGE_ORG_LABELS, largeOrgId } from '../support/large-org';
import { RESULT_BOUNDS } from '../../src/common/result-bounds';
import { SEARCH_EXPRESSIONS } from '../../src/conversations/search/search.repository';
import { planReads, readsOf, statementsRunBy, TableRead } from '../support/plan-check';
import { signInBrowser } from '../support/web';

/**
 * Every statement a read tool runs costs the page it answers, not the org's size: on an org of
 * 20,000 threads and 100,000 messages, each statement's plan (as planned for its values, and
 * generic, as a prepared statement may settle on) reads at most READ_BOUND rows from any table
 * that grows with the mailbox (the largest page's work: search_messages ranks up to 1,000 matches). A sort of all of the caller's threads, a scan of every message
 * or contact, a subquery run once per thread of the org: each reads ten times that or more, and
 * fails here. The statements are recorded as the service runs them (test/support/plan-check.ts),
 * so a statement added to a tool later is checked without being listed.
 */
const THREADS = 20_000;
const MESSAGES_PER_THREAD = 5;
const READ_BOUND = 1_500;
/** Small orgs filled beside the large one (fillOtherOrgs). */
const OTHER_ORGS = 150;
/**
 * The one read that is larger by design: search_messages finds where its recency window starts by
 * reading that many entries of messages_org_recent_idx (SearchService.newestMatchesRanked), a
 * fixed number whatever the org's size.
 */
const WINDOW_START = { node: 'Index Only Scan using messages_org_recent_idx', rows: RESULT_BOUNDS.searchWindowMessages };
const GROWING = ['threads', 'messages', 'thread_labels', 'identities', 'contacts', 'agent_turns', 'webhook_deliveries', 'attachments'];

// The fill (20,000 threads, 150 other orgs) took over 5 minutes on an overloaded 2-core machine.
jest.setTimeout(600_000);

describe('read tools on a large org: no statement reads more than its page', () => {
  let t: McpTestApp;
  let s: Session;
  let planner: Client;
  let endpointId: string;

  beforeAll(async () => {
    t = await createMcpTestApp();
    s = await createSession(t.admin, { role: 'MEMBER', lines: ['PHONE_NUMBER', 'PHONE_NUMBER', 'PHONE_NUMBER', 'EMAIL_ACCOUNT'] });
    endpointId = (await toolOk(t, s.apiKey, 'register_webhook', { url: hookUrl(), events: ['message.received'] })).endpoint.id;
    // Other tenants first, so the statistics the plans are made from hold many labels and lines, as a shared database does.
    await fillOtherOrgs(t.db, OTHER_ORGS, 25);
    await fillLargeOrg(t.db, {
      orgId: s.orgId,
      lines: s.lines,
      threads: THREADS,
      messagesPerThread: MESSAGES_PER_THREAD,
      userId: s.userId,
      // Its deliveries over five day partitions (the log is partitioned by day: docs/delivery-log.md), the other orgs' in the history.
      endpoint: { id: endpointId, deliveries: THREADS, inDayPartitions: true },
    });
    planner = new Client({ connectionString: t.config.databaseUrl });
    await planner.connect();
    await planner.query('SET jit = off');
  });

  afterAll(async () => {
    await planner?.end();
    // The org's rows go with it (ON DELETE CASCADE), so later files' tables are small again.
    await t.db.query(`DELETE FROM orgs WHERE id = $1 OR name = 'Other org'`, [s.orgId]);
    await t.close();
  });

  /** What the tool call's reads read, by statement, where a plan read more than READ_BOUND rows of a growing table. */
  async function overBound(name: string, args: Record<string, unknown>): Promise<{ statements: number; over: string[] }> {
    return overBoundDuring(() => toolOk(t, s.apiKey, name, args));
  }

  /** overBound's check of what `during` runs (a tool call, a page). */
  async function overBoundDuring(during: () => Promise<unknown>): Promise<{ statements: number; over: string[] }> {
    const ran = await statementsRunBy(during);
    const statements = readsOf(ran);
    const over: string[] = [];
    for (const statement of statements) {
      const { custom, generic } = await planReads(planner, statement, statement.settings);
      const describe = (plan: string, r: TableRead) => `${plan} plan: ${r.node} on ${r.table} read ${r.rows} rows in\n${statement.text.slice(0, 400)}`;
      const tooMany = (r: TableRead) => GROWING.includes(r.table) && r.rows > (r.node === WINDOW_START.node ? WINDOW_START.rows : READ_BOUND);
      for (const r of custom.filter(tooMany)) over.push(describe('custom', r));
      for (const r of generic.filter(tooMany)) over.push(describe('generic', r));
    }
    return { statements: statements.length, over };
  }

  const thread = () => largeOrgId(s.orgId, 'thread', 42);
  const next = async (name: string, args: Record<string, unknown>) => ({ ...args, cursor: (await toolOk(t, s.apiKey, name, args)).nextCursor });

  const cases: Array<[string, string, () => Promise<Record<string, unknown>>]> = [
    ['list_threads, first page', 'list_threads', async () => ({})],
    ['list_threads, a later page', 'list_threads', () => next('list_threads', {})],
    ['list_threads on one line', 'list_threads', async () => ({ lineId: s.lines[1].id })],
    ['list_threads on one line, a later page', 'list_threads', () => next('list_threads', { lineId: s.lines[1].id })],
    ['list_threads with a common label', 'list_threads', async () => ({ label: LARGE_ORG_LABELS.common })],
    ['list_threads with a rare label, a later page', 'list_threads', () => next('list_threads', { label: LARGE_ORG_LABELS.rare, limit: 5 })],
    ['list_threads with a label on one line', 'list_threads', async () => ({ label: LARGE_ORG_LABELS.some, lineId: s.lines[3].id })],
    ['get_thread', 'get_thread', async () => ({ threadId: thread() })],
    ['get_thread, a later page', 'get_thread', () => next('get_thread', { threadId: thread(), limit: 2 })],
    ['get_message', 'get_message', async () => ({ messageId: largeOrgId(s.orgId, 'message', 4 * THREADS + 42) })],
    ['list_labels', 'list_labels', async () => ({})],
    ['list_contacts', 'list_contacts', async () => ({})],
    ['list_contacts, a later page', 'list_contacts', () => next('list_contacts', {})],
    ['get_contact', 'get_contact', async () => ({ contactId: largeOrgId(s.orgId, 'contact', 40) })],
    ['list_agents', 'list_agents', async () => ({})],
    ['list_agent_turns', 'list_agent_turns', async () => ({})],
    ['list_agent_turns, a later page', 'list_agent_turns', () => next('list_agent_turns', {})],
    ['list_agent_turns awaiting approval', 'list_agent_turns', async () => ({ status: 'AWAITING_APPROVAL' })],
    ['list_agent_turns of one thread', 'list_agent_turns', async () => ({ threadId: largeOrgId(s.orgId, 'thread', 40) })],
    ['list_webhook_deliveries', 'list_webhook_deliveries', async () => ({ endpointId })],
    ['list_webhook_deliveries, a later page', 'list_webhook_deliveries', () => next('list_webhook_deliveries', { endpointId })],
    ['list_webhook_deliveries that failed (none did)', 'list_webhook_deliveries', async () => ({ endpointId, status: 'failed' })],
    [
      'list_webhook_deliveries that succeeded, a later page',
      'list_webhook_deliveries',
      () => next('list_webhook_deliveries', { endpointId, status: 'succeeded' }),
    ],
    ['list_webhooks', 'list_webhooks', async () => ({})],
    ['list_phone_numbers', 'list_phone_numbers', async () => ({})],
    ['search_messages, a rare word', 'search_messages', async () => ({ query: 'r4242' })],
    ['search_messages, a word in 10 % of the messages', 'search_messages', async () => ({ query: 'c3' })],
    ['search_messages, a word in 10 %, a later page', 'search_messages', () => next('search_messages', { query: 'c3' })],
    ['search_messages, a word in 10 % in one thread', 'search_messages', async () => ({ query: 'c3', threadId: thread() })],
  ];

  it("the large org's deliveries are in day partitions (five of them), where the delivery tools' plans read them", async () => {
    const partitions = await t.db.query(`SELECT tableoid::regclass::text AS partition FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY 1 ORDER BY 1`, [
      endpointId,
    ]);
    expect(partitions.map((p: { partition: string }) => p.partition)).toHaveLength(5);
    for (const { partition } of partitions) expect(partition).toMatch(/^webhook_deliveries_p\d{8}$/);
  });

  it.each(cases)('%s', async (_label, name, args) => {
    const { statements, over } = await overBound(name, await args());
    expect(statements).toBeGreaterThan(0);
    expect(over).toEqual([]);
  });

  it.each([
    ['the Conversations page', () => '/conversations'],
    ['the Conversations page, awaiting approval', () => '/conversations?awaiting=1'],
    ['the Conversations page, awaiting approval with a label', () => `/conversations?awaiting=1&label=${LARGE_ORG_LABELS.common}`],
    ['the Conversations page, a search', () => '/conversations?q=c3'],
    ['a thread page', () => `/conversations/${thread()}`],
  ])('%s', async (_label, path) => {
    const browser = await signInBrowser(t, s.userId);
    const { statements, over } = await overBoundDuring(() => t.http().get(path()).set('Cookie', browser.cookie).expect(200));
    expect(statements).toBeGreaterThan(0);
    expect(over).toEqual([]);
  });

  it('the Approvals page (its drafts oldest first and their threads), first and a later page', async () => {
    const browser = await signInBrowser(t, s.userId);
    const page = (path: string) => t.http().get(path).set('Cookie', browser.cookie).expect(200);
    const later = /href="(\/approvals\?cursor=[^"]+)">Newer drafts</.exec((await page('/approvals')).text)![1].replace(/&amp;/g, '&');
    for (const path of ['/approvals', later]) {
      const { statements, over } = await overBoundDuring(() => page(path));
      expect(statements).toBeGreaterThan(0);
      expect(over).toEqual([]);
    }
  });

  /**
   * search_messages answers from a recency window when it holds enough matches: the hits must be
   * what ranking the newest RESULT_BOUNDS.searchRankedMatches matches of all the mail gives.
   * c3 is in 10 % of the messages (answered from the first window), m42 in 0.1 % (the first
   * window holds a few, the search goes wider), r4242 in one (none in the first window).
   */
  it.each(['c3', 'm42', 'r4242'])('search_messages for %s finds what ranking the newest matches of all the mail finds', async (query) => {
    const { messageVector, query: tsquery } = SEARCH_EXPRESSIONS;
    const expected = await t.db.query(
      `WITH newest AS (SELECT m.id FROM messages m WHERE ${messageVector} @@ ${tsquery.replace(':query', '$2')} AND m.org_id = $1
                        ORDER BY m.created_at DESC, m.id DESC LIMIT $3)
       SELECT m.id FROM newest JOIN messages m USING (id)
        ORDER BY ts_rank(${messageVector}, ${tsquery.replace(':query', '$2')}, 1) DESC, m.id DESC LIMIT 20`,
      [s.orgId, query, RESULT_BOUNDS.searchRankedMatches],
    );
    const { hits } = await toolOk(t, s.apiKey, 'search_messages', { query });
    expect(hits.map((h: { messageId: string }) => h.messageId)).toEqual(expected.map((r: { id: string }) => r.id));
    expect(hits.length).toBeGreaterThan(0);
  });
});
