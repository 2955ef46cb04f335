/**
 * `npm run bench -- --partition-drop [--rows N] [--delete-rows M]`: what retention costs the
 * delivery log (issue 46), on a throwaway database of the shared PostgreSQL, without the service
 * processes (only the statements matter here).
 *
 * 1. The old way, on the layout before the day partitioning (migrations before 1763801000000):
 *    `--delete-rows` finished deliveries (default 1,000,000, with their attempts and payloads)
 *    deleted by the retention's batched DELETE (500 rows a statement, 100 ms apart, attempts by
 *    the cascade, then the payloads no delivery refers to), timed; the figure per row is
 *    extrapolated to `--rows`.
 * 2. The new way, on the day partitions: one day filled with `--rows` deliveries (default
 *    10,000,000) and their attempts and payloads, then dropped as retention drops a day
 *    (DeliveryLogPartitionsRepository.drop: DETACH PARTITION ... CONCURRENTLY, then DROP TABLE, for
 *    each of the three tables; the same SQL on a stand-in layout before the migration exists) while a stream of INSERTs into today's
 *    partition and SELECTs on the parents runs: the longest a statement of that stream waited is
 *    what the drop's locks cost the service (target ≤ 100 ms). Each DDL statement is timed too.
 *
 * Both phases run the probe stream, so the old way's cost to concurrent work shows as well.
 * Prints a Markdown section for docs/BENCHMARKS.md.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { deleteInBatches } from '../src/database/delete-in-batches';
import { runMigrations } from '../src/database/migrate';
import { DeliveryLogPartitionsRepository } from '../src/delivery/delivery-log-partitions.repository';
import { PRUNE_BATCH } from '../src/delivery/delivery-log-retention';
import { attemptsHaveDayKey, DAY_PARTITIONING_MIGRATIONS, fillDeliveryLog, FillResult } from '../test/support/delivery-log-fill';
import { cleanupAll, installSignalHandlers, onCleanup } from './lib/children';
import { createDatabase, databaseUrlFor, dropDatabase, machineInfo } from './lib/infra';
import { fmtNum, log, percentilesOf, sleep } from './lib/util';

const DAY_MS = 86_400_000;
/** The retention's pause between batches (src/delivery/delivery-log-retention.ts, PRUNE_PAUSE_MS). */
const PRUNE_PAUSE_MS = 100;
const TABLES = ['webhook_delivery_attempts', 'webhook_deliveries', 'webhook_payloads'] as const;

interface Options {
  rows: number;
  deleteRows: number;
  probeClients: number;
  keep: boolean;
}

export const PARTITION_DROP_HELP = `  --partition-drop         instead of the scenarios: issue 46's retention bench (bench/partition-drop.ts):
                           a day of --rows deliveries (default 10000000) dropped as a partition while
                           INSERTs and SELECTs run, against the batched DELETE of --delete-rows
                           (default 1000000, extrapolated); --probe-clients N (default 4)
`;

function parseOptions(argv: string[]): Options {
  const value = (flag: string) => {
    const i = argv.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
    if (i < 0) return undefined;
    return argv[i].includes('=') ? argv[i].split('=')[1] : argv[i + 1];
  };
  const num = (flag: string, fallback: number) => {
    const v = value(flag);
    const n = v === undefined ? fallback : Number(v.replace(/_/g, ''));
    if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} needs a positive integer, got ${v}`);
    return n;
  };
  return {
    rows: num('--rows', 10_000_000),
    deleteRows: num('--delete-rows', 1_000_000),
    probeClients: num('--probe-clients', 4),
    keep: argv.includes('--keep'),
  };
}

const dayName = (day: Date) => day.toISOString().slice(0, 10).replace(/-/g, '');
const startOfDay = (at: Date) => new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS);

/** An org, a user and two endpoints, straight into the tables (no service runs here). */
async function createOwner(db: Client): Promise<{ userId: string; endpointIds: string[] }> {
  const [{ id: orgId }] = (await db.query(`INSERT INTO orgs (name, tier) VALUES ('partition bench', 'PRO') RETURNING id`)).rows;
  const [{ id: userId }] = (
    await db.query(`INSERT INTO users (org_id, email, display_name, role) VALUES ($1, 'bench@example.com', 'Bench', 'OWNER') RETURNING id`, [orgId])
  ).rows;
  const endpointIds: string[] = [];
  for (const path of ['a', 'b']) {
    const [{ id }] = (
      await db.query(
        `INSERT INTO webhook_endpoints (user_id, org_id, url, events, mode, message_history_count, status, all_channels, secret_sealed)
         VALUES ($1, $2, $3, ARRAY['message.received'], 'concise', 0, 'active', true, 'not-a-real-secret') RETURNING id`,
        [userId, orgId, `https://receiver.example.com/${path}`],
      )
    ).rows;
    endpointIds.push(id);
  }
  return { userId, endpointIds };
}

async function isPartitioned(db: Client, table: string): Promise<boolean> {
  return (await db.query(`SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass($1)`, [table])).rowCount === 1;
}

/**
 * Before the partition migration exists on this branch: the documented layout (docs/delivery-log.md
 * of issue 46), built on the empty tables: each table re-created as the parent of day partitions
 * `<table>_pYYYYMMDD` on created_at (attempts on delivery_created_at), its unique keys extended by
 * the partition key, no foreign key between the three. Only used when the migrations did not make it.
 */
async function standInLayout(db: Client): Promise<void> {
  await db.query(`ALTER TABLE webhook_delivery_attempts ADD COLUMN delivery_created_at timestamptz(3) NOT NULL`);
  for (const table of TABLES) {
    const key = table === 'webhook_delivery_attempts' ? 'delivery_created_at' : 'created_at';
    const indexes = (await db.query(`SELECT indexdef FROM pg_indexes WHERE tablename = $1 AND indexdef NOT LIKE 'CREATE UNIQUE%'`, [table])).rows.map((r) =>
      (r.indexdef as string).replace(/^CREATE INDEX \S+ ON \S+ /, `CREATE INDEX ON ${table} `),
    );
    await db.query(`ALTER TABLE ${table} RENAME TO ${table}_old`);
    await db.query(`CREATE TABLE ${table} (LIKE ${table}_old INCLUDING DEFAULTS INCLUDING CONSTRAINTS, PRIMARY KEY (id, ${key})) PARTITION BY RANGE (${key})`);
    for (const def of indexes) await db.query(def);
    // The unique keys, with the partition key added (PostgreSQL requires it).
    if (table === 'webhook_deliveries') await db.query(`CREATE UNIQUE INDEX ON webhook_deliveries (event_id, created_at)`);
    if (table === 'webhook_delivery_attempts')
      await db.query(`CREATE UNIQUE INDEX ON webhook_delivery_attempts (delivery_id, attempt_number, delivery_created_at)`);
    if (table === 'webhook_payloads') await db.query(`CREATE INDEX ON webhook_payloads (digest)`);
  }
  for (const table of TABLES) await db.query(`DROP TABLE ${table}_old CASCADE`);
  await db.query(`CREATE SEQUENCE IF NOT EXISTS webhook_payloads_bench_id_seq OWNED BY webhook_payloads.id`);
  await db.query(`ALTER TABLE webhook_payloads ALTER COLUMN id SET DEFAULT nextval('webhook_payloads_bench_id_seq')`);
}

/** The day partition of `day` in each of the three tables, by the layout's own function when there is one. */
async function ensureDay(db: Client, day: Date): Promise<void> {
  const from = startOfDay(day);
  const to = new Date(from.getTime() + DAY_MS);
  if ((await db.query(`SELECT to_regproc('delivery_log_create_partitions') AS f`)).rows[0].f) {
    const date = from.toISOString().slice(0, 10);
    await new DeliveryLogPartitionsRepository({
      query: async (sql: string, params: unknown[]) => (await db.query(sql, params)).rows,
    } as unknown as DataSource).create(date, date);
  } else {
    for (const table of TABLES) {
      await db.query(
        `CREATE TABLE IF NOT EXISTS ${table}_p${dayName(from)} PARTITION OF ${table} FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`,
      );
    }
  }
  for (const table of TABLES) {
    if (!(await db.query(`SELECT to_regclass($1) AS r`, [`${table}_p${dayName(from)}`])).rows[0].r)
      throw new Error(`${table}: no partition for ${dayName(from)} (inside the history partition?); pick a later day`);
  }
}

interface Probe {
  kind: 'insert' | 'get by id' | 'endpoint page';
  at: number;
  ms: number;
  error?: string;
}

/**
 * `clients` connections, each looping: an INSERT of a delivery created now (today's partition), a
 * SELECT of one delivery by id and creation day on the parent, the first page of an endpoint's log
 * (every partition's index). Records every statement's latency until stop() is called.
 */
async function startProbes(url: string, clients: number, owner: { userId: string; endpointIds: string[] }, payloadId: string) {
  const probes: Probe[] = [];
  let stopping = false;
  const loops = Array.from({ length: clients }, async (_, n) => {
    const db = new Client({ connectionString: url });
    await db.connect();
    const dayKey = await attemptsHaveDayKey(db);
    const timed = async (kind: Probe['kind'], sql: string, params: unknown[]) => {
      const at = Date.now();
      try {
        const r = await db.query(sql, params);
        probes.push({ kind, at, ms: Date.now() - at });
        return r;
      } catch (error) {
        probes.push({ kind, at, ms: Date.now() - at, error: (error as Error).message });
        return undefined;
      }
    };
    try {
      for (let i = 0; !stopping; i++) {
        const inserted = await timed(
          'insert',
          `INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, event_type, mode, event_created_at, status, created_at, payload_id)
           VALUES ('evt_' || md5(random()::text), $1, $2, 'message.received', 'concise', now(), 'succeeded', now(), $3)
           RETURNING id, created_at`,
          [owner.endpointIds[n % 2], owner.userId, payloadId],
        );
        const row = inserted?.rows[0] as { id: string; created_at: Date } | undefined;
        if (row) {
          // An attempt of it, as a delivery makes (after the partitioning: in its delivery's day).
          await timed(
            'insert',
            dayKey
              ? `INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code, delivery_created_at)
                 VALUES ($1, 1, now(), 30, 200, $2)`
              : `INSERT INTO webhook_delivery_attempts (delivery_id, attempt_number, attempted_at, duration_ms, status_code)
                 VALUES ($1, 1, now(), 30, 200)`,
            dayKey ? [row.id, row.created_at] : [row.id],
          );
        }
        if (row)
          await timed(
            'get by id',
            `SELECT id, status FROM webhook_deliveries WHERE id = $1 AND created_at >= date_trunc('day', $2::timestamptz) AND created_at < date_trunc('day', $2::timestamptz) + interval '1 day'`,
            [row.id, row.created_at],
          );
        await timed(
          'endpoint page',
          `SELECT id, event_id, status, created_at FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at DESC, id DESC LIMIT 20`,
          [owner.endpointIds[i % 2]],
        );
        await sleep(5);
      }
    } finally {
      await db.end();
    }
  });
  return {
    probes,
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

/** A lock wait of another connection of the bench database, seen by the sampler. */
interface LockWait {
  at: number;
  pid: number;
  /** The waiting statement's start (its kind is told from its text). */
  query: string;
  /** The relation waited for (its name, or its oid once dropped) and the mode asked. */
  relation: string;
  mode: string;
  /** The drop's statement running then. */
  during: string;
}

/**
 * Samples, every `everyMs` until stop(), the connections of the bench database waiting for a lock
 * (pg_stat_activity's wait_event_type 'Lock', and the ungranted pg_locks row saying on what),
 * with the drop statement `during()` names: what a stalled probe waited for.
 */
async function startLockSampler(url: string, during: () => string, everyMs = 20) {
  const db = new Client({ connectionString: url });
  await db.connect();
  const waits: LockWait[] = [];
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const at = Date.now();
      const { rows } = await db.query(
        `SELECT a.pid, left(regexp_replace(a.query, '\\s+', ' ', 'g'), 60) AS query,
                COALESCE(c.relname::text, l.relation::text, l.locktype) AS relation, l.mode
           FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted LEFT JOIN pg_class c ON c.oid = l.relation
          WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.wait_event_type = 'Lock'`,
      );
      for (const r of rows as Array<Omit<LockWait, 'at' | 'during'>>) waits.push({ ...r, at, during: during() });
      await sleep(everyMs);
    }
  })();
  return {
    waits,
    stop: async () => {
      stopping = true;
      await loop;
      await db.end();
    },
  };
}

/** The lock waits grouped by what waited, on what, during which drop statement: samples and the longest span one connection waited (ms). */
function lockWaitRows(waits: LockWait[], everyMs = 20): string[] {
  const kindOf = (query: string) =>
    query.startsWith('INSERT')
      ? 'insert'
      : query.includes('ORDER BY') || query.includes('endpoint_id')
        ? 'endpoint page'
        : query.startsWith('SELECT')
          ? 'get by id'
          : query;
  const groups = new Map<string, LockWait[]>();
  for (const w of waits) {
    const key = [kindOf(w.query), w.relation, w.mode, w.during].join('\u0000');
    groups.set(key, [...(groups.get(key) ?? []), w]);
  }
  return [...groups.entries()].map(([key, ws]) => {
    const [kind, relation, mode, during] = key.split('\u0000');
    let longest = 0;
    for (const pid of new Set(ws.map((w) => w.pid))) {
      const ats = ws.filter((w) => w.pid === pid).map((w) => w.at);
      longest = Math.max(longest, Math.max(...ats) - Math.min(...ats) + everyMs);
    }
    return `| ${kind} | ${relation} | ${mode} | \`${during}\` | ${ws.length} | ${fmtNum(longest)} |`;
  });
}

function summarize(probes: Probe[], from: number, to: number) {
  const inWindow = probes.filter((p) => p.at + p.ms >= from && p.at <= to);
  const byKind = new Map<string, ReturnType<typeof percentilesOf>>();
  for (const kind of ['insert', 'get by id', 'endpoint page']) byKind.set(kind, percentilesOf(inWindow.filter((p) => p.kind === kind).map((p) => p.ms)));
  const all = percentilesOf(inWindow.map((p) => p.ms));
  return { byKind, all, errors: inWindow.filter((p) => p.error).map((p) => p.error!) };
}

async function main(argv = process.argv.slice(2)): Promise<number> {
  const options = parseOptions(argv);
  installSignalHandlers();
  const machine = await machineInfo(process.cwd());
  const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const database = `mss_bench_pd_${stamp}_${randomBytes(2).toString('hex')}`;
  const url = databaseUrlFor(database);
  log(`partition drop bench: ${fmtNum(options.rows)} rows dropped, ${fmtNum(options.deleteRows)} deleted; database ${database}; load ${machine.loadAtStart}`);
  await createDatabase(database);
  onCleanup('drop database', async () => (options.keep ? log(`kept database ${database}`) : dropDatabase(database)));
  const db = new Client({ connectionString: url });
  await db.connect();
  onCleanup('disconnect', () => db.end());

  // 1. The old way: the batched DELETE on the layout before the partitioning.
  await runMigrations(url, { before: DAY_PARTITIONING_MIGRATIONS });
  const owner = await createOwner(db);
  const now = new Date();
  const oldDay = startOfDay(new Date(now.getTime() - 40 * DAY_MS));
  let fill: FillResult = await fillDeliveryLog(db, {
    rows: options.deleteRows,
    from: oldDay,
    to: new Date(oldDay.getTime() + DAY_MS),
    tag: 'old',
    ...owner,
  });
  log(
    `  old layout: filled ${fmtNum(fill.deliveries)} deliveries, ${fmtNum(fill.attempts)} attempts, ${fmtNum(fill.payloads)} payloads in ${JSON.stringify(fill.ms)} ms`,
  );
  await db.query('ANALYZE');
  const [{ id: payloadId }] = (await db.query(`SELECT max(id) AS id FROM webhook_payloads`)).rows;
  let probes = await startProbes(url, options.probeClients, owner, payloadId);
  await sleep(3000);
  const deleteStarted = Date.now();
  const cutoff = new Date(oldDay.getTime() + DAY_MS);
  const batch = { batchSize: PRUNE_BATCH, pauseMs: PRUNE_PAUSE_MS };
  // deleteInBatches reads TypeORM's answer to a DELETE: [rows returned, rows affected].
  const typeormLike = { query: async (sql: string, params: unknown[]) => [[], (await db.query(sql, params)).rowCount ?? 0] };
  // The retention's statements before issue 46 (src/delivery/delivery-log-retention.ts at 8435e93).
  const deliveries = await deleteInBatches(
    typeormLike,
    `DELETE FROM webhook_deliveries WHERE id = ANY (ARRAY(
       SELECT id FROM webhook_deliveries WHERE status IN ('succeeded', 'failed', 'cancelled') AND created_at < $1
        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [cutoff],
    batch,
  );
  const payloads = await deleteInBatches(
    typeormLike,
    `DELETE FROM webhook_payloads WHERE id = ANY (ARRAY(
       SELECT p.id FROM webhook_payloads p
        WHERE p.created_at < $1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.payload_id = p.id)
        ORDER BY p.created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [cutoff],
    batch,
  );
  const deleteEnded = Date.now();
  await sleep(1000);
  await probes.stop();
  const deleteWall = deleteEnded - deleteStarted;
  const batches = deliveries.batches + payloads.batches;
  const deleteWork = deleteWall - (batches - 2) * PRUNE_PAUSE_MS;
  const oldWay = {
    wallMs: deleteWall,
    workMs: deleteWork,
    batches,
    deliveries: deliveries.rows,
    payloads: payloads.rows,
    attempts: fill.attempts,
    probes: summarize(probes.probes, deleteStarted, deleteEnded),
    baseline: summarize(probes.probes, deleteStarted - 3000, deleteStarted),
  };
  log(
    `  batched DELETE: ${fmtNum(deliveries.rows)} deliveries + ${fmtNum(payloads.rows)} payloads in ${(deleteWall / 1000).toFixed(1)} s (${batches} batches)`,
  );

  // 2. The new way: the rest of the migrations (the day partitioning), a day filled, then dropped.
  await db.query(`DELETE FROM webhook_deliveries`);
  await db.query(`DELETE FROM webhook_delivery_attempts`);
  await db.query(`DELETE FROM webhook_payloads`);
  const applied = await runMigrations(url);
  let layout = `the service's migrations (${applied.join(', ') || 'none pending'})`;
  if (!(await isPartitioned(db, 'webhook_deliveries'))) {
    await standInLayout(db);
    layout = 'a stand-in for the documented layout (the partitioning migration is not on this branch yet)';
  }
  log(`  day partitions: ${layout}`);
  const today = startOfDay(now);
  // Today is inside the history partition right after the migration (it runs to the day after tomorrow).
  if (layout.startsWith('a stand-in')) await ensureDay(db, today);
  const day = new Date(today.getTime() + 3 * DAY_MS);
  await ensureDay(db, day);
  fill = await fillDeliveryLog(db, { rows: options.rows, from: day, to: new Date(day.getTime() + DAY_MS), tag: 'day', ...owner });
  log(
    `  filled ${dayName(day)}: ${fmtNum(fill.deliveries)} deliveries, ${fmtNum(fill.attempts)} attempts, ${fmtNum(fill.payloads)} payloads in ${JSON.stringify(fill.ms)} ms`,
  );
  await db.query('ANALYZE');
  const sizes = (
    await db.query(`SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes FROM pg_class c WHERE c.relname = ANY ($1)`, [
      TABLES.map((t) => `${t}_p${dayName(day)}`),
    ])
  ).rows[0].bytes as string;
  probes = await startProbes(url, options.probeClients, owner, (await db.query(`SELECT max(id) AS id FROM webhook_payloads`)).rows[0].id);
  await sleep(3000);
  const dropStarted = Date.now();
  const statements: Array<{ sql: string; ms: number }> = [];
  let running = '(between statements)';
  const sampler = await startLockSampler(url, () => running);
  const timed = async (sql: string, params: unknown[] = []) => {
    const started = process.hrtime.bigint();
    running = sql.replace(/\s+/g, ' ').slice(0, 90);
    const r = await db.query(sql, params).finally(() => (running = '(between statements)'));
    statements.push({ sql: sql.replace(/\s+/g, ' '), ms: Number(process.hrtime.bigint() - started) / 1e6 });
    return r.rows;
  };
  if (layout.startsWith('a stand-in')) {
    for (const table of TABLES) {
      const partition = `${table}_p${dayName(day)}`;
      await timed(`ALTER TABLE ${table} DETACH PARTITION ${partition} CONCURRENTLY`);
      await timed(`DROP TABLE ${partition}`);
    }
  } else {
    // What retention runs: the service's own drop of a day, each of its statements timed.
    await new DeliveryLogPartitionsRepository({ query: timed } as unknown as DataSource).drop(dayName(day));
  }
  const dropEnded = Date.now();
  await sleep(2000);
  await probes.stop();
  await sampler.stop();
  const newWay = {
    lockWaits: sampler.waits.filter((w) => w.at >= dropStarted && w.at <= dropEnded),
    statements,
    bytes: Number(sizes),
    probes: summarize(probes.probes, dropStarted, dropEnded),
    baseline: summarize(probes.probes, dropStarted - 3000, dropStarted),
    wallMs: dropEnded - dropStarted,
  };
  const reportText = report(options, machine.loadAtStart, layout, oldWay, newWay);
  process.stdout.write(`\n${reportText}\n`);
  const maxDuringDrop = newWay.probes.all.max;
  return maxDuringDrop <= 100 ? 0 : 2;
}

type Summary = ReturnType<typeof summarize>;

const fmtDuration = (ms: number) => (ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${fmtNum(ms / 60_000)} min`);

function report(
  options: Options,
  load: string,
  layout: string,
  oldWay: { wallMs: number; workMs: number; batches: number; deliveries: number; payloads: number; attempts: number; probes: Summary; baseline: Summary },
  newWay: { statements: Array<{ sql: string; ms: number }>; bytes: number; probes: Summary; baseline: Summary; wallMs: number; lockWaits: LockWait[] },
): string {
  const perRow = oldWay.wallMs / oldWay.deliveries;
  const extrapolated = perRow * options.rows;
  const row = (name: string, s: Summary) =>
    ['insert', 'get by id', 'endpoint page']
      .map((k) => {
        const p = s.byKind.get(k)!;
        return `| ${name} | ${k} | ${fmtNum(p.count)} | ${p.p50.toFixed(1)} | ${p.p99.toFixed(1)} | **${p.max.toFixed(1)}** |`;
      })
      .join('\n');
  return [
    `Load at start: ${load}. Command: \`npm run bench -- --partition-drop --rows ${options.rows} --delete-rows ${options.deleteRows}\`; partitions: ${layout}.`,
    '',
    `**Dropping a day of ${fmtNum(options.rows)} deliveries** (${(newWay.bytes / 1e9).toFixed(2)} GB with attempts, payloads and indexes): ${(newWay.wallMs / 1000).toFixed(2)} s in all.`,
    '',
    '| statement (DeliveryLogPartitionsRepository.drop, as retention runs it) | wall time |',
    '|---|---|',
    ...newWay.statements.map((s) => `| \`${s.sql}\` | ${s.ms.toFixed(1)} ms |`),
    '',
    `Concurrent statements (${options.probeClients} connections) before and during the drop, ms (target: max ≤ 100 ms during):`,
    '',
    '| window | statement | count | p50 | p99 | max |',
    '|---|---|---|---|---|---|',
    row('3 s before', newWay.baseline),
    row('during the drop', newWay.probes),
    '',
    `Errors during the drop: ${newWay.probes.errors.length ? [...new Set(newWay.probes.errors)].join('; ') : 'none'}.`,
    '',
    'Lock waits of other connections during the drop (pg_stat_activity and pg_locks sampled every 20 ms): ' +
      (newWay.lockWaits.length ? 'what waited, on what, while which statement of the drop ran.' : 'none seen.'),
    ...(newWay.lockWaits.length
      ? [
          '',
          '| waiting statement | relation | mode asked | drop statement running | samples | longest wait of one connection (ms) |',
          '|---|---|---|---|---|---|',
          ...lockWaitRows(newWay.lockWaits),
        ]
      : []),
    '',
    `**The batched DELETE (retention before issue 46)** of ${fmtNum(oldWay.deliveries)} deliveries (their ${fmtNum(oldWay.attempts)} attempts by the cascade) and ` +
      `${fmtNum(oldWay.payloads)} payloads: ${(oldWay.wallMs / 1000).toFixed(1)} s in ${fmtNum(oldWay.batches)} statements of ≤ ${PRUNE_BATCH} rows, ` +
      `${(oldWay.workMs / 1000).toFixed(1)} s of it in the statements (the rest the ${PRUNE_PAUSE_MS} ms pauses). ` +
      `Extrapolated linearly to ${fmtNum(options.rows)} rows: about ${fmtDuration(extrapolated)} ` +
      `(${fmtDuration((oldWay.workMs / oldWay.deliveries) * options.rows)} of statements), against ${(newWay.wallMs / 1000).toFixed(2)} s for the drop. ` +
      'The extrapolation is a floor: the deleted rows leave dead tuples and index entries for VACUUM, which the drop does not.',
    '',
    '| window | statement | count | p50 | p99 | max |',
    '|---|---|---|---|---|---|',
    row('3 s before', oldWay.baseline),
    row('during the DELETE', oldWay.probes),
  ].join('\n');
}

if (require.main === module) {
  main()
    .then(async (code) => {
      await cleanupAll();
      process.exit(code);
    })
    .catch(async (error: unknown) => {
      log(`partition drop bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      await cleanupAll();
      process.exit(1);
    });
}

export { main as partitionDropBench };
