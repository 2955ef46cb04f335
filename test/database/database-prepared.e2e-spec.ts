import { MAX_PREPARED_PER_CONNECTION, PreparingClient, statementName } from '../../src/database/preparing-client';
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
