import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The ids of webhook_payloads come from a sequence of the partitioned parent, no longer from the
 * history partition's. Before migration DeliveryLogPartitions the table's `id` was an identity
 * column; its sequence, `webhook_payloads_id_seq`, stayed the history's (an identity sequence
 * belongs to its column) while the parent and every day took `nextval` of it as their default.
 * So the history could never be dropped: `DROP TABLE webhook_payloads_history` failed on the
 * parent's default, and retention, having detached it, left it detached with every payload from
 * before the migration, past every retention.
 *
 * The old sequence is renamed `webhook_payloads_history_id_seq` (the history's own, dropped with
 * it); a new `webhook_payloads_id_seq`, owned by the parent's column, takes up where it stopped,
 * and the parent and each day partition take their default from it (a partitioned table's
 * ALTER reaches the history's identity column, which refuses a default, so each table is
 * altered on its own). Days made later copy the parent's default. One short transaction under
 * ACCESS EXCLUSIVE on webhook_payloads, catalog work only: no payload is written in between, so
 * no id is given twice.
 */
export class PayloadIdSequence1763801180000 implements MigrationInterface {
  name = 'PayloadIdSequence1763801180000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '10s'`);
    await q.query(`LOCK TABLE webhook_payloads IN ACCESS EXCLUSIVE MODE`);
    await q.query(`ALTER SEQUENCE webhook_payloads_id_seq RENAME TO webhook_payloads_history_id_seq`);
    await q.query(`CREATE SEQUENCE webhook_payloads_id_seq AS bigint OWNED BY webhook_payloads.id`);
    await q.query(`SELECT setval('webhook_payloads_id_seq', last_value, is_called) FROM webhook_payloads_history_id_seq`);
    await defaultFrom(q, 'webhook_payloads_id_seq');
  }

  /** Back to the history's sequence, which must still exist (for tests: after the history is dropped there is none to go back to). */
  async down(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '10s'`);
    await q.query(`LOCK TABLE webhook_payloads IN ACCESS EXCLUSIVE MODE`);
    await q.query(`SELECT setval('webhook_payloads_history_id_seq', last_value, is_called) FROM webhook_payloads_id_seq`);
    await defaultFrom(q, 'webhook_payloads_history_id_seq');
    await q.query(`DROP SEQUENCE webhook_payloads_id_seq`);
    await q.query(`ALTER SEQUENCE webhook_payloads_history_id_seq RENAME TO webhook_payloads_id_seq`);
  }
}

/** webhook_payloads' `id` default, on the parent and on each partition but the history (whose identity column keeps its own). */
async function defaultFrom(q: QueryRunner, sequence: string): Promise<void> {
  const partitions: Array<{ name: string }> = await q.query(
    `SELECT inhrelid::regclass::text AS name FROM pg_inherits WHERE inhparent = 'webhook_payloads'::regclass AND inhrelid::regclass::text <> 'webhook_payloads_history'`,
  );
  await q.query(`ALTER TABLE ONLY webhook_payloads ALTER COLUMN id SET DEFAULT nextval('${sequence}')`);
  for (const { name } of partitions) await q.query(`ALTER TABLE ${name} ALTER COLUMN id SET DEFAULT nextval('${sequence}')`);
}
