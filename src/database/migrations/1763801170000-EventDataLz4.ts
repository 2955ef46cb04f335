import { MigrationInterface, QueryRunner } from 'typeorm';

/** The JSON columns that hold whole events: a message event's carries its thread's recent messages (10 to 30 KB). */
const COLUMNS = [
  ['outbox_events', 'data'],
  ['webhook_payloads', 'data'],
] as const;

/**
 * Event data is compressed with LZ4 instead of PostgreSQL's own pglz (docs/PERFORMANCE.md,
 * change 37). Every inbound message's outbox row is compressed once (its thread history makes it
 * about 10 KB of JSON) and read back by the relay and the event feed; pglz took about 46 µs a row
 * to compress where LZ4 takes a few, for a stored size within 2 % of pglz's.
 *
 * Only values written from now on are compressed with LZ4; a column reads both. Changing the
 * setting is a catalog change (no rewrite). webhook_payloads is partitioned: each partition there
 * is gets the setting, and the days delivery_log_create_partitions makes take it from the parent. A
 * server built without LZ4 (`default_toast_compression` does not offer it) keeps pglz.
 */
export class EventDataLz41763801170000 implements MigrationInterface {
  name = 'EventDataLz41763801170000';

  async up(q: QueryRunner): Promise<void> {
    const [{ lz4 }]: Array<{ lz4: boolean }> = await q.query(`SELECT 'lz4' = ANY (enumvals) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'`);
    if (lz4) await compression(q, 'lz4');
  }

  async down(q: QueryRunner): Promise<void> {
    await compression(q, 'default');
  }
}

/** Sets the column's compression on the table and on each of its partitions (a partitioned table's ALTER does not reach those there are). */
async function compression(q: QueryRunner, method: 'lz4' | 'default'): Promise<void> {
  await q.query(`SET LOCAL lock_timeout = '10s'`);
  for (const [table, column] of COLUMNS) {
    const partitions: Array<{ name: string }> = await q.query(`SELECT inhrelid::regclass::text AS name FROM pg_inherits WHERE inhparent = $1::regclass`, [
      table,
    ]);
    for (const name of [table, ...partitions.map((p) => p.name)]) await q.query(`ALTER TABLE ${name} ALTER COLUMN ${column} SET COMPRESSION ${method}`);
  }
}
