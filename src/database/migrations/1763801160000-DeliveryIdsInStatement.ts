import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A delivery's ids cost less to make (docs/PERFORMANCE.md, change 36):
 * - delivery_log_uuid7 becomes one expression. As a `BEGIN ATOMIC` body with a sub-select it ran
 *   as a query of its own at every call; now PostgreSQL inlines it into the statement that calls
 *   it. Same ids: the UTC milliseconds of `t` in the first 48 bits, version 7, the RFC 9562
 *   variant, and the rest from an MD5 of random() and the clock.
 * - The trigger webhook_deliveries_ids runs only for a row whose id does not already name its
 *   created_at, or whose event_id is not that id's. Fan-out, which makes nearly every delivery,
 *   names the id, the evt_ id and created_at in its own INSERT (DeliveriesRepository.insertFannedOut,
 *   from delivery-ids.ts's NEW_DELIVERY_IDS), so a row there no longer calls a PL/pgSQL function,
 *   nor makes a random UUID that the trigger threw away. Every other path (resends, recoveries, a
 *   process of the previous build during a rolling deploy) leaves the ids out and gets them from
 *   the trigger as before; so does any row that names them wrongly: the invariant that an id finds
 *   its partition does not rest on the statements that name them.
 *
 * Replacing a trigger of the partitioned table takes a lock every writer of the log waits behind
 * for the catalog change only. The whole log is locked first (LOCK_LOG), parent before partitions
 * as a reader locks them: DROP TRIGGER alone took the parent in a weaker mode, then each
 * partition's trigger with its partition, and last the parent in ACCESS EXCLUSIVE, so a read of
 * the parent that began in between held the parent and waited for a partition the migration held
 * (a deadlock the reliability suite met once, the reader its victim).
 */
/** SQL: the delivery log's parent, then every partition, locked as a trigger's replacement needs them. */
const LOCK_LOG = `LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE`;

export class DeliveryIdsInStatement1763801160000 implements MigrationInterface {
  name = 'DeliveryIdsInStatement1763801160000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '10s'`);
    await q.query(LOCK_LOG);
    await q.query(`
      CREATE OR REPLACE FUNCTION delivery_log_uuid7(t timestamptz) RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE
        RETURN overlay(overlay(md5(random()::text || clock_timestamp()::text)
                               PLACING lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' FROM 1 FOR 13)
                       PLACING substr('89ab', 1 + floor(random() * 4)::int, 1) FROM 17 FOR 1)::uuid`);
    await q.query(`DROP TRIGGER webhook_deliveries_ids ON webhook_deliveries`);
    await q.query(`CREATE TRIGGER webhook_deliveries_ids BEFORE INSERT ON webhook_deliveries
                     FOR EACH ROW WHEN (NEW.event_id IS DISTINCT FROM 'evt_' || replace(NEW.id::text, '-', '')
                                        OR delivery_log_created_at(NEW.id) IS DISTINCT FROM NEW.created_at)
                     EXECUTE FUNCTION webhook_deliveries_ids()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '10s'`);
    await q.query(LOCK_LOG);
    await q.query(`DROP TRIGGER webhook_deliveries_ids ON webhook_deliveries`);
    await q.query(`CREATE TRIGGER webhook_deliveries_ids BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION webhook_deliveries_ids()`);
    await q.query(`
      CREATE OR REPLACE FUNCTION delivery_log_uuid7(t timestamptz) RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE
        BEGIN ATOMIC
          SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(r, 1, 3)
                  || substr('89ab', 1 + (get_byte(decode(substr(r, 4, 2), 'hex'), 0) % 4), 1) || substr(r, 6, 15))::uuid
            FROM (SELECT md5(random()::text || clock_timestamp()::text) AS r) AS x;
        END`);
  }
}
