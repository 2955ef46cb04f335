import { MAX_PREPARED_PER_CONNECTION, PreparingClient, statementName } from '../src/database/preparing-client';

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
});
