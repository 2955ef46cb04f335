import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Indexes the delivery log retention needs (src/delivery/delivery-log-retention.ts): finished
 * deliveries by age (partial: a delivery enters it once, when it finishes, so the hot path's
 * claims and retries never touch it), the resends of a delivery (deleting one sets their
 * resent_from_id to null, which would otherwise scan the table per deleted row), and payloads by age.
 */
export class DeliveryLogRetention1763800510000 implements MigrationInterface {
  name = 'DeliveryLogRetention1763800510000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (created_at)
                     WHERE status IN ('succeeded', 'failed', 'cancelled')`);
    await q.query(`CREATE INDEX webhook_deliveries_resent_from_idx ON webhook_deliveries (resent_from_id) WHERE resent_from_id IS NOT NULL`);
    await q.query(`CREATE INDEX webhook_payloads_created_idx ON webhook_payloads (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS webhook_payloads_created_idx`);
    await q.query(`DROP INDEX IF EXISTS webhook_deliveries_resent_from_idx`);
    await q.query(`DROP INDEX IF EXISTS webhook_deliveries_finished_idx`);
  }
}
