import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { Pool } from 'undici';
import { fillLargeOrg, fillOtherOrgs, LARGE_ORG_LABELS, LARGE_ORG_WORDS, LargeOrgLine, largeOrgId } from '../../test/support/large-org';
import { ServiceApi } from '../lib/api';
import { Child, startBareApp, stopChild } from '../lib/children';
import { ReadShapeResult, RunContext, Scenario8Result, SearchShapeResult, startScenarioService } from '../lib/context';
import { Monitor } from '../lib/monitor';
import { drive, rawToolCall, rawToolText } from '../lib/tool-load';
import { fmtMs, fmtNum, log, percentilesOf, resetProgress } from '../lib/util';

/** Small orgs filled first (fillOtherOrgs). */
const OTHER_ORGS = 150;
/** The large org: threads on four lines (three numbers, one mailbox), ten messages each. */
const THREADS = 100_000;
const MESSAGES_PER_THREAD = 10;
const DELIVERIES = 100_000;
/** The small org list_threads' throughput is compared with. */
const SMALL_THREADS = 1_000;
/** list_threads under load: concurrent callers. */
const CONCURRENCY = 32;

type Args = (i: number) => Record<string, unknown>;

/**
 * Scenario 8, reads on a large org: one org of 100,000 threads and 1,000,000 messages on four
 * lines, labels on a share of the threads, contacts (some merged), agent turns and a webhook
 * delivery log of 100,000, written with SQL (test/support/large-org.ts; not through ingest: that
 * is scenario 7's subject). The search indexes are dropped for the fill and built again after it,
 * timed: what the migration costs on a table of this size. Then, over HTTP with one API key of a
 * member of every line:
 * - each read tool an agent calls, one call at a time (p50, p95, p99 of the whole call);
 * - list_threads at c=32, on this org and on an org of 1,000 threads, in the same run;
 * - search_messages for each query shape.
 */
export async function scenario8(ctx: RunContext): Promise<Scenario8Result> {
  const calls = ctx.options.quick ? 50 : 300;
  const loadMs = ctx.options.quick ? 5_000 : 15_000;
  const messages = THREADS * MESSAGES_PER_THREAD;
  log(`\nScenario 8: reads on an org of ${fmtNum(THREADS)} threads and ${fmtNum(messages)} messages (${calls} calls per shape)`);
  const svc = await startScenarioService(ctx, 's8', { MCP_RATE_LIMIT: '100000000', MCP_KEY_CONCURRENCY: String(CONCURRENCY) });
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const db = new Client({ connectionString: ctx.databaseUrl });
  await db.connect();
  let bare: Child | undefined;
  try {
    const large = await seedOrg(api, 's8', 3, true);
    const endpoint = await api.registerWebhook(large.apiKey, ctx.receiver.url(0, '/ok/s8'));

    const fillStart = Date.now();
    const indexes: Array<{ name: string; def: string }> = (
      await db.query(`SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE indexname IN ('messages_search_idx', 'attachments_search_idx')`)
    ).rows;
    if (indexes.length !== 2) throw new Error(`expected the two search indexes, found ${indexes.map((i) => i.name).join(', ') || 'none'}`);
    for (const index of indexes) await db.query(`DROP INDEX ${index.name}`);
    // Other tenants, each with its line, labels and webhook endpoint, as a shared database holds:
    // the statistics plans are made from then see many lines, labels and endpoints, not this org's few.
    await fillOtherOrgs(db, OTHER_ORGS, 25);
    await fillLargeOrg(db, {
      orgId: large.orgId,
      lines: large.lines,
      threads: THREADS,
      messagesPerThread: MESSAGES_PER_THREAD,
      userId: large.userId,
      endpoint: { id: endpoint.id, deliveries: DELIVERIES },
    });
    const fillSeconds = (Date.now() - fillStart) / 1000;
    log(`  S8 filled ${fmtNum(messages)} messages in ${fmtNum(THREADS)} threads in ${fillSeconds.toFixed(0)} s (search indexes dropped)`);
    const buildStart = Date.now();
    for (const index of indexes) await db.query(index.def);
    const buildSeconds = (Date.now() - buildStart) / 1000;
    // What autovacuum would have done by now on a table that grew this much.
    await db.query('VACUUM ANALYZE messages, threads, thread_labels, identities, contacts, agent_turns, webhook_deliveries, attachments');
    const [size] = (await db.query(`SELECT pg_relation_size('messages_search_idx')::bigint AS index, pg_relation_size('messages')::bigint AS table`)).rows;
    log(
      `  S8 CREATE INDEX (both search indexes, as the migration) took ${buildSeconds.toFixed(1)} s; index ${Math.round(size.index / 1048576)} MB, table ${Math.round(size.table / 1048576)} MB`,
    );
    const small = await seedOrg(api, 's8-small', 1, false);
    await fillLargeOrg(db, { orgId: small.orgId, lines: small.lines, threads: SMALL_THREADS, messagesPerThread: MESSAGES_PER_THREAD, userId: small.userId });

    // Cursors for the later pages, taken before the clock starts.
    const cursorOf = async (name: string, args: Record<string, unknown>) => (await api.tool<{ nextCursor: string }>(large.apiKey, name, args)).nextCursor;
    const threadCursor = await cursorOf('list_threads', { limit: 100 });
    const labelCursor = await cursorOf('list_threads', { label: LARGE_ORG_LABELS.common, limit: 100 });
    const contactCursor = await cursorOf('list_contacts', { limit: 100 });
    const turnCursor = await cursorOf('list_agent_turns', {});
    const deliveryCursor = await cursorOf('list_webhook_deliveries', { endpointId: endpoint.id });
    const thread = (i: number) => largeOrgId(large.orgId, 'thread', (i * 7919) % THREADS);
    const readShapes: Array<{ label: string; tool: string; kind: ReadShapeResult['kind']; args: Args }> = [
      { label: 'list_threads, first page', tool: 'list_threads', kind: 'list_threads', args: () => ({}) },
      { label: 'list_threads, a later page (cursor)', tool: 'list_threads', kind: 'list_threads', args: () => ({ cursor: threadCursor }) },
      { label: 'list_threads, one line', tool: 'list_threads', kind: 'list_threads', args: (i) => ({ lineId: large.lines[i % 4].id }) },
      { label: 'list_threads, a label on 20 % of the threads', tool: 'list_threads', kind: 'list_threads', args: () => ({ label: LARGE_ORG_LABELS.common }) },
      {
        label: 'list_threads, that label, a later page',
        tool: 'list_threads',
        kind: 'list_threads',
        args: () => ({ label: LARGE_ORG_LABELS.common, cursor: labelCursor }),
      },
      { label: 'list_threads, a label on 0.1 %', tool: 'list_threads', kind: 'list_threads', args: () => ({ label: LARGE_ORG_LABELS.rare }) },
      { label: 'get_thread (ten messages)', tool: 'get_thread', kind: 'read', args: (i) => ({ threadId: thread(i) }) },
      { label: 'get_message', tool: 'get_message', kind: 'read', args: (i) => ({ messageId: largeOrgId(large.orgId, 'message', (i * 104729) % messages) }) },
      { label: 'list_contacts', tool: 'list_contacts', kind: 'read', args: () => ({}) },
      { label: 'list_contacts, a later page', tool: 'list_contacts', kind: 'read', args: () => ({ cursor: contactCursor }) },
      { label: 'list_agent_turns', tool: 'list_agent_turns', kind: 'read', args: () => ({}) },
      { label: 'list_agent_turns, a later page', tool: 'list_agent_turns', kind: 'read', args: () => ({ cursor: turnCursor }) },
      { label: 'list_agent_turns awaiting approval', tool: 'list_agent_turns', kind: 'read', args: () => ({ status: 'AWAITING_APPROVAL' }) },
      { label: 'list_webhook_deliveries', tool: 'list_webhook_deliveries', kind: 'read', args: () => ({ endpointId: endpoint.id }) },
      {
        label: 'list_webhook_deliveries, a later page',
        tool: 'list_webhook_deliveries',
        kind: 'read',
        args: () => ({ endpointId: endpoint.id, cursor: deliveryCursor }),
      },
      {
        label: 'list_webhook_deliveries that failed',
        tool: 'list_webhook_deliveries',
        kind: 'read',
        args: () => ({ endpointId: endpoint.id, status: 'failed' }),
      },
    ];
    const reads: ReadShapeResult[] = [];
    for (const shape of readShapes) {
      const latency = await oneAtATime(calls, (i) => api.tool(large.apiKey, shape.tool, shape.args(i)));
      reads.push({ label: shape.label, kind: shape.kind, calls, latency });
      log(`  S8 ${shape.label.padEnd(44)} p50 ${fmtMs(latency.p50)}, p99 ${fmtMs(latency.p99)}`);
      svc.assertAlive();
    }

    const throughput: Scenario8Result['throughput'] = [];
    const monitor = (extra: Record<string, number> = {}) => new Monitor(ctx.database, { api: svc.api.pid, worker: svc.worker.pid, ...extra });
    for (const org of [small, large]) {
      resetProgress();
      const pool = new Pool(svc.baseUrl, { connections: CONCURRENCY, keepAliveTimeout: 30_000 });
      let id = 1;
      const call = () => rawToolCall(pool, org.apiKey, id++, 'list_threads', {});
      const threads = org === large ? THREADS : SMALL_THREADS;
      const r = await drive(
        `S8 list_threads c=${CONCURRENCY}, ${fmtNum(threads)} threads`,
        CONCURRENCY,
        Array(CONCURRENCY).fill(call),
        2_000,
        loadMs,
        monitor(),
      );
      await pool.close();
      throughput.push({ threads, concurrency: CONCURRENCY, reqPerSec: r.reqPerSec, latency: r.latency, errors: r.errors, cpu: r.cpu });
      log(
        `  S8 list_threads at c=${CONCURRENCY}, ${fmtNum(threads)} threads: ${fmtNum(r.reqPerSec)} req/s, p99 ${fmtMs(r.latency.p99)}${r.errors ? `, ${r.errors} errors (${r.lastError})` : ''}`,
      );
    }

    // The limit: list_threads' own statement and answer on the large org, from a bare Nest route
    // (no authentication, protocol, validation or logging: bench/bare-app.ts), in this run.
    const started = await startBareApp(ctx.root, ctx.databaseUrl);
    bare = started.child;
    const barePath = `/threads?userId=${large.userId}`;
    const answerPool = new Pool(svc.baseUrl, { connections: 1 });
    const toolAnswer = await rawToolText(answerPool, large.apiKey, 1, 'list_threads', {});
    await answerPool.close();
    const bareAnswer = await (await fetch(`${started.url}${barePath}`)).text();
    const toolIds = (JSON.parse(toolAnswer).result.structuredContent.threads as Array<{ thread: { id: string } }>).map((t) => t.thread.id);
    const bareIds = (JSON.parse(bareAnswer).structuredContent.threads as Array<{ thread: { id: string } }>).map((t) => t.thread.id);
    if (toolIds.join() !== bareIds.join())
      throw new Error(`the bare route lists other threads than list_threads (${bareIds.length} against ${toolIds.length})`);
    let bareLimit: Scenario8Result['bare'];
    {
      resetProgress();
      const pool = new Pool(started.url, { connections: CONCURRENCY, keepAliveTimeout: 30_000 });
      const call = async () => {
        const res = await pool.request({ method: 'GET', path: barePath });
        const text = await res.body.text();
        if (res.statusCode !== 200) throw new Error(`bare ${res.statusCode}`);
        JSON.parse(text);
      };
      const r = await drive(
        `S8 bare route c=${CONCURRENCY}, ${fmtNum(THREADS)} threads`,
        CONCURRENCY,
        Array(CONCURRENCY).fill(call),
        2_000,
        loadMs,
        monitor({ 'bare app': bare.pid }),
      );
      await pool.close();
      bareLimit = {
        concurrency: CONCURRENCY,
        reqPerSec: r.reqPerSec,
        latency: r.latency,
        errors: r.errors,
        cpu: r.cpu,
        bytes: Buffer.byteLength(bareAnswer),
        toolBytes: Buffer.byteLength(toolAnswer),
      };
      log(
        `  S8 bare route (same statement and answer) at c=${CONCURRENCY}: ${fmtNum(r.reqPerSec)} req/s, p99 ${fmtMs(r.latency.p99)}; answers ${fmtNum(bareLimit.bytes)} B (tool ${fmtNum(bareLimit.toolBytes)} B)`,
      );
    }
    await stopChild(bare, 3000);
    bare = undefined;

    const searchThread = largeOrgId(large.orgId, 'thread', 42);
    const searchShapes: Array<{ label: string; matches: string; args: Args }> = [
      { label: 'rare word', matches: '10', args: (i) => ({ query: LARGE_ORG_WORDS.rare((i * 7919) % 100000) }) },
      { label: 'word in 0.1 %', matches: '1,000', args: (i) => ({ query: LARGE_ORG_WORDS.perMille((i * 31) % 1000) }) },
      { label: 'word in 10 %', matches: '100,000', args: (i) => ({ query: LARGE_ORG_WORDS.tenPercent(i) }) },
      { label: 'two words (AND)', matches: '100', args: (i) => ({ query: `m${(i * 31) % 1000} c${((i * 31) % 1000) % 10}` }) },
      { label: 'phrase', matches: '100', args: (i) => ({ query: `"m${(i * 31) % 1000} c${((i * 31) % 1000) % 10}"` }) },
      { label: 'word in 10 %, excluding another', matches: '90,000', args: (i) => ({ query: `c${i % 10} -hello` }) },
      // Thread 42's messages are numbered 42 + k·100,000: every one of them has c2.
      { label: 'word in 10 %, one thread', matches: '10', args: () => ({ query: 'c2', threadId: searchThread }) },
    ];
    const shapes: SearchShapeResult[] = [];
    for (const shape of searchShapes) {
      let hits = 0;
      const latency = await oneAtATime(calls, async (i) => {
        hits += (await api.tool<{ hits: unknown[] }>(large.apiKey, 'search_messages', shape.args(i))).hits.length;
      });
      shapes.push({ label: shape.label, matches: shape.matches, calls, hitsPerCall: hits / (calls + WARM_UP), latency });
      log(`  S8 ${shape.label.padEnd(34)} (~${shape.matches} matches): p50 ${fmtMs(latency.p50)}, p95 ${fmtMs(latency.p95)}, p99 ${fmtMs(latency.p99)}`);
      svc.assertAlive();
    }
    // Page 2 of a common word: the cursors are taken by first calls before the clock starts.
    {
      for (let q = 0; q < 10; q += 1) await searchCursor(api, large.apiKey, q);
      const latency = await oneAtATime(calls, async (i) => {
        await api.tool(large.apiKey, 'search_messages', { query: LARGE_ORG_WORDS.tenPercent(i), cursor: await searchCursor(api, large.apiKey, i) });
      });
      shapes.push({ label: 'word in 10 %, page 2 (cursor)', matches: '100,000', calls, hitsPerCall: 20, latency });
      log(`  S8 ${'word in 10 %, page 2 (cursor)'.padEnd(34)} (~100,000 matches): p50 ${fmtMs(latency.p50)}, p99 ${fmtMs(latency.p99)}`);
    }
    return {
      messages,
      threads: THREADS,
      lines: large.lines.length,
      deliveries: DELIVERIES,
      fillSeconds,
      buildSeconds,
      indexMb: Math.round(size.index / 1048576),
      tableMb: Math.round(size.table / 1048576),
      reads,
      throughput,
      bare: bareLimit,
      shapes,
    };
  } finally {
    if (bare) await stopChild(bare, 3000);
    // The other orgs' endpoints hold placeholder secrets no service key opens: a later scenario's
    // service would refuse to start (its start-up check of the stored secrets). Their rows go with them.
    await db.query(`DELETE FROM orgs WHERE name = 'Other org'`).catch(() => undefined);
    await db.end().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}

/** Calls made before the clock starts, for each shape. */
const WARM_UP = 5;

/** `calls` calls one after another (after WARM_UP uncounted ones); the percentiles of their durations. */
async function oneAtATime(calls: number, call: (i: number) => Promise<unknown>) {
  const latencies: number[] = [];
  for (let i = -WARM_UP; i < calls; i += 1) {
    const n = i < 0 ? i + 1000 : i;
    if (i < 0) {
      await call(n);
      continue;
    }
    const t0 = performance.now();
    await call(n);
    latencies.push(performance.now() - t0);
  }
  return percentilesOf(latencies);
}

/** The cursor of search i's first page (untimed: it is page 2 that is measured). */
const searchCursors = new Map<string, string>();
async function searchCursor(api: ServiceApi, apiKey: string, i: number): Promise<string> {
  const query = LARGE_ORG_WORDS.tenPercent(i);
  let cursor = searchCursors.get(query);
  if (cursor === undefined) {
    cursor = (await api.tool<{ nextCursor: string }>(apiKey, 'search_messages', { query })).nextCursor;
    searchCursors.set(query, cursor);
  }
  return cursor;
}

/** An org with `phoneLines` numbers (and a mailbox when `mailbox`), an OWNER member of every line, and their API key. */
async function seedOrg(api: ServiceApi, label: string, phoneLines: number, mailbox: boolean) {
  const orgId = (await api.createOrg(`bench ${label}`)).id;
  const user = await api.createUser(orgId, label);
  const lines: LargeOrgLine[] = [];
  for (let i = 0; i < phoneLines; i += 1) lines.push({ ...(await api.createPhoneLine(orgId)), type: 'PHONE_NUMBER' });
  if (mailbox) lines.push({ ...(await api.createEmailLine(orgId, `${label}.${randomBytes(4).toString('hex')}@bench.example`)), type: 'EMAIL_ACCOUNT' });
  for (const line of lines) await api.addMember(line.id, user.id);
  return { orgId, userId: user.id, lines, apiKey: await api.createApiKey(user.id) };
}
