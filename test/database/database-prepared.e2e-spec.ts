import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../src/config/app-config';
import { MAX_PREPARED_PER_CONNECTION, PreparingClient, statementName } from '../../src/database/preparing-client';
import { waitUntil } from '../support/wait';
import { PROBE_OPTIONS, PROBE_SETTINGS, ProbePool } from '../../src/database/probe-pool';
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

/** The plans of a batch lookup by key, prepared while its table is small and run once it is not. */
describe('a statement prepared under PROBE_SETTINGS', () => {
  // The delivery claim's shape: a batch of keys joined to a table with a partial index of waiting rows, the rows locked and updated.
  const CLAIM = `WITH due AS (
         SELECT d.id FROM plan_probe d JOIN unnest($1::int[]) AS x(id) ON d.id = x.id
          WHERE d.attempt_count = 0 AND d.status = ANY ($2::text[])
            FOR NO KEY UPDATE OF d SKIP LOCKED)
     UPDATE plan_probe d SET attempt_count = 1 FROM due WHERE d.id = due.id RETURNING d.id`;

  /** Runs CLAIM on a connection with `options`: six calls on three analyzed rows, then one after 50,000 more; answers the last call's plan. */
  async function planAfterGrowth(options: string): Promise<{ plan: string; claimed: number[] }> {
    const client = new PreparingClient({ connectionString: process.env.DATABASE_URL, options });
    await client.connect();
    try {
      const plans: string[] = [];
      client.on('notice', (notice: { message?: string }) => plans.push(notice.message ?? ''));
      await client.query(`CREATE TEMP TABLE plan_probe (id int PRIMARY KEY, status text NOT NULL, attempt_count int NOT NULL, due int NOT NULL)`);
      await client.query(`CREATE INDEX plan_probe_waiting ON plan_probe (due) WHERE status IN ('pending', 'retrying')`);
      await client.query(`INSERT INTO plan_probe SELECT i, 'pending', 0, i FROM generate_series(1, 3) AS i`);
      await client.query('ANALYZE plan_probe');
      await client.query(`LOAD 'auto_explain'`);
      await client.query(`SET auto_explain.log_min_duration = 0`);
      await client.query(`SET client_min_messages = log`);
      for (let i = 0; i < 6; i += 1) await client.query(CLAIM, [[1], ['pending', 'retrying']]);
      await client.query(`INSERT INTO plan_probe SELECT i, 'pending', 0, i FROM generate_series(4, 50000) AS i`);
      plans.length = 0;
      const { rows } = await client.query(CLAIM, [
        [777, 40_000],
        ['pending', 'retrying'],
      ]);
      return { plan: plans.join('\n'), claimed: rows.map((r: { id: number }) => r.id).sort((a: number, b: number) => a - b) };
    } finally {
      await client.end();
    }
  }

  it('probes the primary key for each key once the table has grown; with the default settings its generic plan scans the table', async () => {
    const probed = await planAfterGrowth(PROBE_OPTIONS);
    expect(probed.claimed).toEqual([777, 40_000]);
    expect(probed.plan).toMatch(/Index Scan using plan_probe_pkey on plan_probe d/);
    expect(probed.plan).not.toMatch(/Seq Scan|Bitmap|Hash Join|Merge Join/);

    // What the settings rule out: the same generic plan, made with the default planner settings on three rows, reads all 50,000.
    const scanned = await planAfterGrowth('-c jit=off -c plan_cache_mode=force_generic_plan');
    expect(scanned.claimed).toEqual([777, 40_000]);
    expect(scanned.plan).toMatch(/Seq Scan on plan_probe d/);
  });
});

/** The pool the delivery worker's batch statements run on (DeliveryAttemptsRepository). */
describe('ProbePool', () => {
  let dataSource: DataSource;
  let pool: ProbePool;
  let other: Client;
  beforeEach(async () => {
    // Only its driver is used (to number :named parameters): it is not connected.
    dataSource = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL });
    pool = new ProbePool({ databaseUrl: process.env.DATABASE_URL } as AppConfig, dataSource);
    other = new Client({ connectionString: process.env.DATABASE_URL });
    await other.connect();
  });
  afterEach(async () => {
    await pool.onApplicationShutdown();
    await other.end();
  });

  it('runs :named statements prepared once on its connection, with the settings PROBE_SETTINGS name', async () => {
    const text = `SELECT current_setting('plan_cache_mode') AS plan_cache_mode, current_setting('enable_seqscan') AS enable_seqscan,
                         current_setting('enable_bitmapscan') AS enable_bitmapscan, current_setting('enable_hashjoin') AS enable_hashjoin,
                         current_setting('enable_mergejoin') AS enable_mergejoin, current_setting('synchronous_commit') AS synchronous_commit,
                         current_setting('jit') AS jit, :n::int + 1 AS n`;
    for (let n = 0; n < 3; n += 1) {
      expect(await pool.query(text, { n })).toEqual([{ ...PROBE_SETTINGS, n: n + 1 }]);
    }
    const plans = await pool.query<{ generic_plans: string; custom_plans: string }>(
      `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = :name`,
      { name: statementName(dataSource.driver.escapeQueryWithParameters(text, { n: 0 })[0]) },
    );
    // Calls one after the other share one connection: prepared there once, its generic plan used each time.
    expect(plans).toEqual([{ generic_plans: '3', custom_plans: '0' }]);
  });

  it("answers PostgreSQL's error as it is, and the connection goes on; a connection that broke is replaced", async () => {
    await expect(pool.query('SELECT 1 / :n::int AS n', { n: 0 })).rejects.toMatchObject({ code: '22012', message: 'division by zero' });
    const [{ pid }] = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, :n::int AS n', { n: 1 });
    expect(await pool.query('SELECT pg_backend_pid() AS pid, :n::int AS n', { n: 2 })).toEqual([{ pid, n: 2 }]);

    // The idle connection ends under it (PostgreSQL restarted, say): the next statement runs on a new one.
    await other.query('SELECT pg_terminate_backend($1)', [pid]);
    await waitUntil(
      async () => (await other.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0].n === 0,
      `backend ${pid} to end`,
    );
    const [after] = await pool.query<{ pid: number; n: number }>('SELECT pg_backend_pid() AS pid, :n::int AS n', { n: 3 });
    expect(after.n).toBe(3);
    expect(after.pid).not.toBe(pid);
  });
});
