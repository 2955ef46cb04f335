import { AddressInfo, connect, createServer, Socket } from 'node:net';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../src/config/app-config';
import { MAX_PREPARED_PER_CONNECTION, PreparingClient, statementName } from '../../src/database/preparing-client';
import { waitUntil } from '../support/wait';
import { PROBE_SET, PROBE_SETTINGS, ProbePool } from '../../src/database/probe-pool';
import { COMMIT_ASYNC, plannedPerCall } from '../../src/database/sql';

/** The service's pg client: parameterised statements become prepared statements of the connection. */
describe('PreparingClient', () => {
  let client: PreparingClient;
  beforeEach(async () => {
    client = new PreparingClient({ connectionString: process.env.DATABASE_URL });
    await client.connect();
  });
  afterEach(async () => {
    await client.end();
  });

  const preparedNames = async (): Promise<string[]> =>
    (await client.query('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r: { name: string }) => r.name);

  it('prepares a parameterised statement once and reuses it; a statement without parameters stays unnamed', async () => {
    const text = 'SELECT $1::int + 1 AS n';
    expect((await client.query(text, [1])).rows).toEqual([{ n: 2 }]);
    expect((await client.query(text, [41])).rows).toEqual([{ n: 42 }]);
    await client.query('SELECT 1 AS plain');
    expect(await preparedNames()).toEqual([statementName(text)]);
  });

  it('runs a statement marked plannedPerCall unnamed, planned for its values on every call', async () => {
    const marked = plannedPerCall('SELECT $1::int * 2 AS n');
    expect((await client.query(marked, [4])).rows).toEqual([{ n: 8 }]);
    for (let i = 0; i < 7; i += 1) await client.query(marked, [i]); // past the calls after which PostgreSQL may keep a generic plan
    expect((await client.query(marked, [21])).rows).toEqual([{ n: 42 }]);
    const plain = 'SELECT $1::int * 3 AS n';
    await client.query(plain, [1]);
    expect(await preparedNames()).toEqual([statementName(plain)]);
  });

  it('a marked batch lookup keeps using the primary key once its table has grown; a prepared one can keep scanning it', async () => {
    // What the delivery claim met: a generic plan made while the table was small, kept after it grew.
    const plans: string[] = [];
    client.on('notice', (notice: { message?: string }) => plans.push(notice.message ?? ''));
    await client.query(`LOAD 'auto_explain'`);
    await client.query(`SET auto_explain.log_min_duration = 0`);
    await client.query(`SET client_min_messages = log`);
    await client.query(`CREATE TEMP TABLE plan_probe (id int PRIMARY KEY, status text NOT NULL, due int NOT NULL)`);
    await client.query(`CREATE INDEX plan_probe_waiting ON plan_probe (due) WHERE status = 'waiting'`);
    await client.query(`INSERT INTO plan_probe SELECT i, 'waiting', i FROM generate_series(1, 20) AS i`);
    const lookup = `SELECT p.id FROM plan_probe p JOIN unnest($1::int[]) AS x(id) ON p.id = x.id WHERE p.status = 'waiting'`;
    const lastPlan = async (text: string): Promise<string> => {
      plans.length = 0;
      await client.query(text, [[3, 5]]);
      return plans.join('\n');
    };
    for (let i = 0; i < 10; i += 1) {
      await lastPlan(lookup);
      await lastPlan(plannedPerCall(lookup));
    }
    await client.query(`INSERT INTO plan_probe SELECT i, 'waiting', i FROM generate_series(21, 50000) AS i`);
    // The prepared statement's generic plan, made on 20 rows: every waiting row read to find two.
    expect(await lastPlan(lookup)).toMatch(/Bitmap Index Scan on plan_probe_waiting/);
    expect(await lastPlan(plannedPerCall(lookup))).toMatch(/Index Scan using plan_probe_pkey/);
  });

  it('answers errors as pg does (code and message), and the connection goes on', async () => {
    await expect(client.query('SELECT 1 / $1::int AS n', [0])).rejects.toMatchObject({ code: '22012', message: 'division by zero' });
    expect((await client.query('SELECT 1 / $1::int AS n', [1])).rows).toEqual([{ n: 1 }]);
  });

  it('after a column is added under a prepared SELECT *, the call is retried unnamed and shows the new column', async () => {
    await client.query('CREATE TEMP TABLE prepared_probe (id int)');
    await client.query('INSERT INTO prepared_probe VALUES (1)');
    const text = 'SELECT * FROM prepared_probe WHERE id = $1';
    expect((await client.query(text, [1])).rows).toEqual([{ id: 1 }]);
    await client.query(`ALTER TABLE prepared_probe ADD COLUMN note text DEFAULT 'added'`);
    expect((await client.query(text, [1])).rows).toEqual([{ id: 1, note: 'added' }]);
    expect((await client.query(text, [1])).rows).toEqual([{ id: 1, note: 'added' }]);
  });

  it(`keeps at most ${MAX_PREPARED_PER_CONNECTION} statements prepared on one connection`, async () => {
    for (let i = 0; i < MAX_PREPARED_PER_CONNECTION + 5; i += 1) {
      expect((await client.query(`SELECT $1::int AS n, ${i} AS i`, [i])).rows).toEqual([{ n: i, i }]);
    }
    expect(await preparedNames()).toHaveLength(MAX_PREPARED_PER_CONNECTION);
  });

  it('COMMIT_ASYNC turns synchronous_commit off for the statement that reads it (its implicit transaction), and for nothing after it', async () => {
    const setting = async (sql: string) => (await client.query(sql, [1])).rows[0].setting as string;
    expect(await setting(`SELECT current_setting('synchronous_commit') AS setting, $1::int AS n FROM ${COMMIT_ASYNC}`)).toBe('off');
    expect(await setting(`SELECT current_setting('synchronous_commit') AS setting, $1::int AS n`)).toBe('on');
    await client.query('BEGIN');
    expect(await setting(`SELECT current_setting('synchronous_commit') AS setting, $1::int AS n FROM ${COMMIT_ASYNC}`)).toBe('off');
    await client.query('COMMIT');
    expect(await setting(`SELECT current_setting('synchronous_commit') AS setting, $1::int AS n`)).toBe('on');
  });
});

/** The generic plans of the delivery claim's shape: a batch of keys joined to a table with a partial index of waiting rows, locked and updated. */
describe('a statement prepared under PROBE_SETTINGS', () => {
  const claim = (statuses: string) => `WITH due AS (
         SELECT d.id FROM plan_probe d JOIN unnest($1::int[]) AS x(id) ON d.id = x.id
          WHERE d.attempt_count = 0 AND d.status ${statuses}
            FOR NO KEY UPDATE OF d SKIP LOCKED)
     UPDATE plan_probe d SET attempt_count = 1 FROM due WHERE d.id = due.id RETURNING d.id`;
  /** As the service writes it: the waiting statuses a parameter. */
  const CLAIM = claim('= ANY ($2::text[])');
  const WAITING = ['pending', 'retrying'];
  /** Both reads of the table are lookups of one key each: the batch's keys, then the rows locked. */
  const PROBES = [
    /Index Scan using plan_probe_pkey on plan_probe d\w*[^\n]*\n\s+Index Cond: \(id = x\.id\)/,
    /Index Scan using plan_probe_pkey on plan_probe d[^\n]*\n\s+Index Cond: \(id = due\.id\)/,
  ];

  let client: PreparingClient;
  const plans: string[] = [];
  /** A connection set up by `settings`, with a table of `rows` rows (every hundredth waiting), analyzed unless told not, whose plans it logs. */
  async function connection(settings: string, rows: number, analyze = true): Promise<void> {
    client = new PreparingClient({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    await client.query(settings);
    client.on('notice', (notice: { message?: string }) => plans.push(notice.message ?? ''));
    await client.query(`CREATE TEMP TABLE plan_probe (id int PRIMARY KEY, status text NOT NULL, attempt_count int NOT NULL, due int NOT NULL)`);
    await client.query(`CREATE INDEX plan_probe_waiting ON plan_probe (due) WHERE status IN ('pending', 'retrying')`);
    await addRows(1, rows);
    if (analyze) await client.query('ANALYZE plan_probe');
    await client.query(`LOAD 'auto_explain'`);
    await client.query(`SET auto_explain.log_min_duration = 0`);
    await client.query(`SET client_min_messages = log`);
  }
  const addRows = (from: number, to: number) =>
    client.query(
      `INSERT INTO plan_probe SELECT i, CASE WHEN i % 100 = 0 THEN 'pending' ELSE 'succeeded' END, 0, i FROM generate_series($1::int, $2::int) AS i`,
      [from, to],
    );
  /** Runs `text` and answers its plan and the ids it claimed. */
  async function run(text: string, values: unknown[]): Promise<{ plan: string; claimed: number[] }> {
    plans.length = 0;
    const { rows } = await client.query(text, values);
    return { plan: plans.join('\n'), claimed: rows.map((r: { id: number }) => r.id).sort((a: number, b: number) => a - b) };
  }
  afterEach(async () => {
    plans.length = 0;
    await client.end();
  });

  it('probes the primary key when far more rows wait than when the table was analyzed; with the default settings the plan reads every waiting row', async () => {
    await connection(PROBE_SET, 50_000);
    // A backlog: a third of the rows wait, where the statistics say one in a hundred.
    await client.query(`UPDATE plan_probe SET status = 'pending' WHERE id % 3 = 0`);
    const probed = await run(CLAIM, [[3, 6, 40_002], WAITING]);
    expect(probed.claimed).toEqual([3, 6, 40_002]);
    for (const probe of PROBES) expect(probed.plan).toMatch(probe);
    expect(probed.plan).not.toMatch(/Seq Scan|Bitmap|Hash Join|Merge Join|Materialize|plan_probe_waiting/);
    // The statuses written out, as the claim was before, under these settings: probes all the same.
    const literal = await run(claim(`IN ('pending', 'retrying')`), [[9, 12]]);
    expect(literal.claimed).toEqual([9, 12]);
    expect(literal.plan).not.toMatch(/plan_probe_waiting|Hash Join/);
    await client.end();

    // What the settings rule out: with the default planner settings, the generic plan of the written-out statuses hashes every waiting row to find the batch's.
    await connection('SET plan_cache_mode = force_generic_plan', 50_000);
    await client.query(`UPDATE plan_probe SET status = 'pending' WHERE id % 3 = 0`);
    const scanned = await run(claim(`IN ('pending', 'retrying')`), [[3, 6]]);
    expect(scanned.claimed).toEqual([3, 6]);
    expect(scanned.plan).toMatch(/Hash Join[\s\S]*Index Scan using plan_probe_waiting/);
  });

  it('a plan made on a young table reads all of it until the table is analyzed again, as autovacuum does as it grows; then it probes', async () => {
    await connection(PROBE_SET, 3);
    for (let i = 0; i < 6; i += 1) await run(CLAIM, [[1], WAITING]);
    await addRows(4, 50_000);
    // The window: the plan made on three rows, a full read of the key's index for each batch.
    const stale = await run(CLAIM, [[700, 40_000], WAITING]);
    expect(stale.claimed).toEqual([700, 40_000]);
    expect(stale.plan).not.toMatch(PROBES[0]);
    // ANALYZE (autovacuum's, once a tenth of the table has changed) invalidates the connection's plans: the next call plans again.
    await client.query('ANALYZE plan_probe');
    const probed = await run(CLAIM, [[800, 40_100], WAITING]);
    expect(probed.claimed).toEqual([800, 40_100]);
    for (const probe of PROBES) expect(probed.plan).toMatch(probe);
  });

  it('a plan made on a table never analyzed (a day made ahead, its first rows just in) probes the primary key, and keeps doing so as it grows', async () => {
    await connection(PROBE_SET, 3, false);
    for (let i = 0; i < 6; i += 1) await run(CLAIM, [[1], WAITING]);
    await addRows(4, 50_000);
    const probed = await run(CLAIM, [[900, 40_200], WAITING]);
    expect(probed.claimed).toEqual([900, 40_200]);
    for (const probe of PROBES) expect(probed.plan).toMatch(probe);
  });
});

/** The pool the delivery worker's batch statements run on (DeliveryAttemptsRepository). */
describe('ProbePool', () => {
  let dataSource: DataSource;
  let other: Client;
  const pools: ProbePool[] = [];
  /** A pool on `databaseUrl` (the test database's by default), closed after the test. */
  const probePool = (databaseUrl = process.env.DATABASE_URL!): ProbePool => {
    const pool = new ProbePool({ databaseUrl } as AppConfig, dataSource);
    pools.push(pool);
    return pool;
  };
  const pidOf = async (pool: ProbePool, n: number): Promise<number> =>
    (await pool.query<{ pid: number; n: number }>('SELECT pg_backend_pid() AS pid, :n::int AS n', { n }))[0].pid;

  beforeEach(async () => {
    // Only its driver is used (to number :named parameters): it is not connected.
    dataSource = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL });
    other = new Client({ connectionString: process.env.DATABASE_URL });
    await other.connect();
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.onApplicationShutdown()));
    await other.end();
  });

  const SETTINGS = `SELECT current_setting('plan_cache_mode') AS plan_cache_mode, current_setting('enable_seqscan') AS enable_seqscan,
                           current_setting('enable_bitmapscan') AS enable_bitmapscan, current_setting('enable_hashjoin') AS enable_hashjoin,
                           current_setting('enable_mergejoin') AS enable_mergejoin, current_setting('synchronous_commit') AS synchronous_commit,
                           current_setting('jit') AS jit, current_setting('statement_timeout') AS statement_timeout, :n::int + 1 AS n`;

  it('runs :named statements prepared once on its connection, with the settings PROBE_SETTINGS name', async () => {
    const pool = probePool();
    for (let n = 0; n < 3; n += 1) {
      expect(await pool.query(SETTINGS, { n })).toEqual([{ ...PROBE_SETTINGS, n: n + 1 }]);
    }
    const plans = await pool.query<{ generic_plans: string; custom_plans: string }>(
      `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = :name`,
      { name: statementName(dataSource.driver.escapeQueryWithParameters(SETTINGS, { n: 0 })[0]) },
    );
    // Calls one after the other share one connection: prepared there once, its generic plan used each time.
    expect(plans).toEqual([{ generic_plans: '3', custom_plans: '0' }]);
  });

  it('keeps its settings when DATABASE_URL carries startup options of its own', async () => {
    const url = new URL(process.env.DATABASE_URL!);
    url.searchParams.set('options', '-c enable_seqscan=on -c plan_cache_mode=auto -c synchronous_commit=on');
    expect(await probePool(url.toString()).query(SETTINGS, { n: 0 })).toEqual([{ ...PROBE_SETTINGS, n: 1 }]);
  });

  it("answers PostgreSQL's error as it is, and the connection goes on; an idle connection that broke is replaced", async () => {
    const pool = probePool();
    const pid = await pidOf(pool, 1);
    await expect(pool.query('SELECT 1 / :n::int AS n', { n: 0 })).rejects.toMatchObject({ code: '22012', message: 'division by zero' });
    expect(await pidOf(pool, 2)).toBe(pid);

    // The idle connection ends under it (PostgreSQL restarted, say): the next statement runs on a new one.
    await other.query('SELECT pg_terminate_backend($1)', [pid]);
    await waitUntil(
      async () => (await other.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0].n === 0,
      `backend ${pid} to end`,
    );
    expect(await pidOf(pool, 3)).not.toBe(pid);
  });

  it('a connection whose session PostgreSQL ended mid-statement is not lent again: the next statement, asked for at once, runs on a new one', async () => {
    const pool = probePool();
    const first = await pidOf(pool, 1);
    const sleeping = pool.query('SELECT pg_sleep(30), :n::int AS n', { n: 2 });
    await waitUntil(
      async () => (await other.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep%'`, [first])).rows[0].n === 1,
      'the statement to be running',
    );
    // Asked for in the same turn as the failure, before the closed socket is noticed.
    const next = sleeping.then(
      () => Promise.reject(new Error('the statement was not ended')),
      (error: { code?: string; severity?: string }) => {
        expect(error).toMatchObject({ code: '57P01', severity: 'FATAL' });
        return pidOf(pool, 3);
      },
    );
    await other.query('SELECT pg_terminate_backend($1)', [first]);
    expect(await next).not.toBe(first);
  });

  it('a connection whose socket breaks mid-statement fails that statement only, and the next runs on a new connection', async () => {
    // A TCP relay to PostgreSQL whose sockets the test cuts: what a network fault or a proxy dropping connections does.
    const target = new URL(process.env.DATABASE_URL!);
    const sockets = new Set<Socket>();
    const relay = createServer((inbound) => {
      const outbound = connect(Number(target.port || 5432), target.hostname);
      for (const socket of [inbound, outbound]) {
        sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => sockets.delete(socket));
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    await new Promise<void>((listening) => relay.listen(0, '127.0.0.1', listening));
    try {
      const url = new URL(process.env.DATABASE_URL!);
      url.host = `127.0.0.1:${(relay.address() as AddressInfo).port}`;
      const pool = probePool(url.toString());
      const first = await pidOf(pool, 1);
      const sleeping = pool.query('SELECT pg_sleep(30), :n::int AS n', { n: 2 });
      await waitUntil(
        async () => (await other.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep%'`, [first])).rows[0].n === 1,
        'the statement to be running',
      );
      for (const socket of sockets) socket.destroy();
      await expect(sleeping).rejects.toThrow(/Connection terminated unexpectedly/);
      expect(await pidOf(pool, 3)).not.toBe(first);
      await other.query('SELECT pg_terminate_backend($1)', [first]);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => relay.close(closed));
    }
  });
});
