import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deliveries leave half of each page free (fillfactor 50, was 80: migration DeliveryLease), so that
 * the claim of every row on a page fits beside it as a heap-only (HOT) update. At 80 a page filled
 * by fan-out had room for the new versions of about a quarter of its rows; the old versions could
 * be pruned to make room only when nothing else held the page, and the page fan-out is filling
 * is held all the time. In a quick scenario 1 run 57 % of claims were not heap-only, each writing
 * a new entry in six indexes (docs/PERFORMANCE.md, change 34). At 50 it was 4 %, and the table took
 * 5 % more pages: the versions that end deliveries fill the room the claims leave.
 *
 * The setting applies to pages filled from now on; changing it takes a lock that does not stop
 * reads or writes. Every partition there is, and the days delivery_log_create_partitions makes.
 */
export class DeliveryClaimRoom1763801150000 implements MigrationInterface {
  name = 'DeliveryClaimRoom1763801150000';

  async up(q: QueryRunner): Promise<void> {
    await fillfactor(q, 50);
  }

  async down(q: QueryRunner): Promise<void> {
    await fillfactor(q, 80);
  }
}

async function fillfactor(q: QueryRunner, percent: number): Promise<void> {
  await q.query(`
    DO $$
    DECLARE
      partition regclass;
    BEGIN
      FOR partition IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'webhook_deliveries'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (fillfactor = ${percent})', partition);
      END LOOP;
    END $$`);
  // The function as it stands (migration DeliveryLogPartitions), with the deliveries' fillfactor changed.
  await q.query(`
    DO $$
    DECLARE
      definition text := pg_get_functiondef('delivery_log_create_partitions(date, date)'::regprocedure);
    BEGIN
      IF definition !~ 'fillfactor = \\d+' THEN
        RAISE EXCEPTION 'delivery_log_create_partitions sets no fillfactor: %', definition;
      END IF;
      EXECUTE regexp_replace(definition, 'fillfactor = \\d+', 'fillfactor = ${percent}');
    END $$`);
}
