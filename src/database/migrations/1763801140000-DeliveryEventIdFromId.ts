import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The unique index on a delivery's envelope id (`event_id`, created_at) goes. Since migration
 * DeliveryLogPartitions every delivery's event_id is 'evt_' + its id's hex, set by the trigger
 * webhook_deliveries_ids on every insert, so the primary key (id, created_at) already makes it
 * unique (the id names its created_at); the history's ids, from before, were unique when they
 * were written, and no delivery is written there since. No statement looks a delivery up by its
 * event_id. The index cost every delivery two entries (its insert, and the update that ends it, which
 * cannot be heap-only: its status is in partial indexes' conditions), about a ninth of the B-tree
 * entries a delivery writes (docs/PERFORMANCE.md, change 33).
 *
 * Dropping a partitioned index drops every partition's: the lock is held for the catalog change
 * only. `down` builds it again over the whole log (a while on a large one).
 */
export class DeliveryEventIdFromId1763801140000 implements MigrationInterface {
  name = 'DeliveryEventIdFromId1763801140000';

  async up(q: QueryRunner): Promise<void> {
    // Behind a long read of the log this would hold every claim back: give up instead (the migration fails, and the next start tries again).
    await q.query(`SET LOCAL lock_timeout = '10s'`);
    await q.query(`DROP INDEX webhook_deliveries_event_id_key`);
  }

  async down(q: QueryRunner): Promise<void> {
    // The history's under the name migration DeliveryLogPartitions gave it (its own down drops it by
    // that name); the parent's then takes it as its partition's, and builds the days'.
    await q.query(`CREATE UNIQUE INDEX webhook_deliveries_history_event_id_key ON webhook_deliveries_history (event_id, created_at)`);
    await q.query(`CREATE UNIQUE INDEX webhook_deliveries_event_id_key ON webhook_deliveries (event_id, created_at)`);
  }
}
