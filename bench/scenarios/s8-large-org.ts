import { Client } from 'pg';
import { ServiceApi } from '../lib/api';
import { RunContext, Scenario8Result, SearchShapeResult, startScenarioService } from '../lib/context';
import { fmtMs, fmtNum, log, percentilesOf } from '../lib/util';

/** Messages the scenario fills the table with, and threads (partners) they are dealt to. */
const MESSAGES = 1_000_000;
const THREADS = 10_000;

/**
 * Scenario 8, search_messages on 1M messages: one org's line holds a million SMS (written with SQL,
 * not through ingest: that is scenario 7's subject), made of numbered words so each query shape
 * matches a known share of them. The search indexes are dropped for the fill and built again
 * after it, timed: what the migration costs on a table of this size. Then search_messages is called
 * over HTTP, one call at a time, for each shape; p50 and p99 of the whole call.
 */
export async function scenario8(ctx: RunContext): Promise<Scenario8Result> {
  const calls = ctx.options.quick ? 30 : 200;
  log(`\nScenario 8: search_messages on ${fmtNum(MESSAGES)} messages (${calls} calls per query shape)`);
  const svc = await startScenarioService(ctx, 's8', { MCP_RATE_LIMIT: '100000000' });
  const api = new ServiceApi(svc.baseUrl, ctx.secrets.adminToken, ctx.secrets.ingestToken);
  const db = new Client({ connectionString: ctx.databaseUrl });
  await db.connect();
  try {
    const org = await api.createOrg('bench s8');
    const line = await api.createPhoneLine(org.id);
    const user = await api.createUser(org.id, 's8');
    await api.addMember(line.id, user.id);
    const apiKey = await api.createApiKey(user.id);

    const fillStart = Date.now();
    const indexes: Array<{ name: string; def: string }> = (
      await db.query(`SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE indexname IN ('messages_search_idx', 'attachments_search_idx')`)
    ).rows;
    if (indexes.length !== 2) throw new Error(`expected the two search indexes, found ${indexes.map((i) => i.name).join(', ') || 'none'}`);
    for (const index of indexes) await db.query(`DROP INDEX ${index.name}`);
    await db.query(`INSERT INTO identities (org_id, kind, value) SELECT $1, 'PHONE', '+1777' || lpad(g::text, 7, '0') FROM generate_series(0, $2 - 1) g`, [
      org.id,
      THREADS,
    ]);
    await db.query(
      `INSERT INTO threads (org_id, line_id, channel, partner_identity_id, last_message_at, message_count)
       SELECT $1, $2, 'SMS', i.id, now(), $3 FROM identities i WHERE i.org_id = $1`,
      [org.id, line.id, MESSAGES / THREADS],
    );
    await db.query(
      `CREATE TEMP TABLE s8_threads AS
       SELECT (row_number() OVER (ORDER BY t.id) - 1)::int AS n, t.id, i.value FROM threads t JOIN identities i ON i.id = t.partner_identity_id WHERE t.org_id = $1`,
      [org.id],
    );
    // Words: c0..c9 (10 % of the messages each), m0..m999 (0.1 %), r0..r99999 (10 messages each),
    // and everyday words drawn from a list, so bodies vary in length and content.
    await db.query(
      `INSERT INTO messages (org_id, thread_id, line_id, channel, direction, status, body, from_value, from_kind, to_value, to_kind, created_at, sent_at)
       SELECT $1, t.id, $2, 'SMS', 'INBOUND', 'RECEIVED',
              format('%s order %s m%s c%s r%s %s %s', w[1 + g % 29], g, g % 1000, g % 10, g % 100000, w[1 + (g / 7) % 29], w[1 + (g / 13) % 29])
                || repeat(' ' || w[1 + (g / 3) % 29], g % 5),
              t.value, 'PHONE', $3, 'PHONE', now() - (g % 365) * interval '1 day', now() - (g % 365) * interval '1 day'
         FROM generate_series(0, $4 - 1) g
         JOIN s8_threads t ON t.n = g % $5
        CROSS JOIN (SELECT ARRAY['hello', 'thanks', 'delivery', 'invoice', 'tomorrow', 'meeting', 'price', 'please', 'call', 'back',
                                 'shipped', 'payment', 'receipt', 'question', 'address', 'change', 'cancel', 'confirm', 'today', 'week',
                                 'bonjour', 'merci', 'danke', 'gracias', 'livraison', 'rechnung', 'factura', 'pedido', 'paquete'] AS w) words`,
      [org.id, line.id, line.address, MESSAGES, THREADS],
    );
    const fillSeconds = (Date.now() - fillStart) / 1000;
    log(`  S8 filled ${fmtNum(MESSAGES)} messages in ${THREADS} threads in ${fillSeconds.toFixed(0)} s (search indexes dropped)`);
    const buildStart = Date.now();
    for (const index of indexes) await db.query(index.def);
    const buildSeconds = (Date.now() - buildStart) / 1000;
    await db.query('ANALYZE messages; ANALYZE threads; ANALYZE identities; ANALYZE attachments');
    const [size] = (await db.query(`SELECT pg_relation_size('messages_search_idx')::bigint AS index, pg_relation_size('messages')::bigint AS table`)).rows;
    log(
      `  S8 CREATE INDEX (both search indexes, as the migration) took ${buildSeconds.toFixed(1)} s; index ${Math.round(size.index / 1048576)} MB, table ${Math.round(size.table / 1048576)} MB`,
    );

    const [thread] = (await db.query(`SELECT id FROM s8_threads WHERE n = 42`)).rows as Array<{ id: string }>;
    const shapes: Array<{ label: string; matches: string; args: (i: number) => Record<string, unknown> }> = [
      { label: 'rare word', matches: '10', args: (i) => ({ query: `r${(i * 7919) % 100000}` }) },
      { label: 'word in 0.1 %', matches: '1,000', args: (i) => ({ query: `m${(i * 31) % 1000}` }) },
      { label: 'word in 10 %', matches: '100,000', args: (i) => ({ query: `c${i % 10}` }) },
      { label: 'two words (AND)', matches: '100', args: (i) => ({ query: `m${(i * 31) % 1000} c${((i * 31) % 1000) % 10}` }) },
      { label: 'phrase', matches: '100', args: (i) => ({ query: `"m${(i * 31) % 1000} c${((i * 31) % 1000) % 10}"` }) },
      { label: 'word in 10 %, excluding another', matches: '90,000', args: (i) => ({ query: `c${i % 10} -hello` }) },
      { label: 'word in 10 %, one thread', matches: '10', args: (i) => ({ query: `c${i % 10}`, threadId: thread.id }) },
      { label: 'word in 10 %, page 2 (cursor)', matches: '100,000', args: () => ({}) },
    ];
    const results: SearchShapeResult[] = [];
    for (const shape of shapes) {
      const latencies: number[] = [];
      let hits = 0;
      for (let i = -5; i < calls; i += 1) {
        let args = shape.args(i < 0 ? i + 1000 : i);
        if (shape.label.includes('cursor')) {
          const first = await api.tool<{ nextCursor: string }>(apiKey, 'search_messages', { query: `c${((i % 10) + 10) % 10}` });
          args = { query: `c${((i % 10) + 10) % 10}`, cursor: first.nextCursor };
        }
        const t0 = performance.now();
        const answer = await api.tool<{ hits: unknown[] }>(apiKey, 'search_messages', args);
        const ms = performance.now() - t0;
        if (i >= 0) {
          latencies.push(ms);
          hits += answer.hits.length;
        }
      }
      const latency = percentilesOf(latencies);
      results.push({ label: shape.label, matches: shape.matches, calls, hitsPerCall: hits / calls, latency });
      log(`  S8 ${shape.label.padEnd(34)} (~${shape.matches} matches): p50 ${fmtMs(latency.p50)}, p99 ${fmtMs(latency.p99)}`);
      svc.assertAlive();
    }
    return {
      messages: MESSAGES,
      threads: THREADS,
      fillSeconds,
      buildSeconds,
      indexMb: Math.round(size.index / 1048576),
      tableMb: Math.round(size.table / 1048576),
      shapes: results,
    };
  } finally {
    await db.end().catch(() => undefined);
    await api.close().catch(() => undefined);
    await svc.stop();
  }
}
