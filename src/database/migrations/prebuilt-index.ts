import { QueryRunner } from 'typeorm';

/**
 * `CREATE INDEX IF NOT EXISTS name …`, after dropping an invalid index of that name. On a large
 * table CREATE INDEX blocks writes while it builds; an operator builds the index first with CREATE
 * INDEX CONCURRENTLY, the same name and definition, and the migration then builds nothing. An
 * invalid index left by an interrupted CREATE INDEX CONCURRENTLY is dropped and built again. A
 * migration cannot build concurrently itself: that cannot run inside a transaction, and it waits
 * for every older snapshot, including the other replicas waiting for the migration lock.
 * `definition` is what follows the name: `ON table (columns)`; `unique` makes it CREATE UNIQUE INDEX.
 */
export async function createIndexUnlessBuilt(q: QueryRunner, name: string, definition: string, options: { unique?: boolean } = {}): Promise<void> {
  const rows: Array<{ valid: boolean }> = await q.query(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE c.relname = $1 AND c.relnamespace = 'public'::regnamespace`,
    [name],
  );
  if (rows.length > 0 && !rows[0].valid) await q.query(`DROP INDEX ${name}`);
  await q.query(`CREATE ${options.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${name} ${definition}`);
}
