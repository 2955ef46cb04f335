import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * recover_webhook_deliveries (src/delivery/deliveries.service.ts): `recovered_at` marks a failed
 * delivery that a recovery has resent, set in the statement that makes its copy, so a second
 * recovery over an overlapping window (or two at once) resends it no more. The partial index
 * holds only the failed deliveries not yet recovered, by endpoint and event time: what a recovery
 * looks for. A delivery enters it when it fails and leaves it when it is recovered, so the hot
 * path's claims and successes never touch it.
 */
export class DeliveryRecovery1763800570000 implements MigrationInterface {
  name = 'DeliveryRecovery1763800570000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN recovered_at timestamptz`);
    await q.query(`CREATE INDEX webhook_deliveries_recover_idx ON webhook_deliveries (endpoint_id, event_created_at, id)
                     WHERE status = 'failed' AND recovered_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS webhook_deliveries_recover_idx`);
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN recovered_at`);
  }
}
