import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A claimed attempt's lease gets a column of its own, outside every index, and the table leaves
 * room on each page: a claim then changes no indexed column and fits beside its row, so
 * PostgreSQL makes it a heap-only (HOT) update and writes none of the table's nine indexes
 * (docs/PERFORMANCE.md, "Claims as HOT updates"). Until now a claim moved `next_attempt_at` to
 * the lease, which is indexed, so every claim wrote a new entry in every index.
 */
export class DeliveryLease1763800620000 implements MigrationInterface {
  name = 'DeliveryLease1763800620000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN lease_until timestamptz`);
    await q.query(`ALTER TABLE webhook_deliveries SET (fillfactor = 80)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries RESET (fillfactor)`);
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN lease_until`);
  }
}
