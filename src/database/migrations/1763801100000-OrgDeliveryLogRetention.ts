import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 46: an org may keep its delivery log for fewer days than DELIVERY_LOG_RETENTION_DAYS
 * (docs/delivery-log.md, "Retention"). NULL: the global setting. A nullable column without a
 * default: no table rewrite.
 */
export class OrgDeliveryLogRetention1763801100000 implements MigrationInterface {
  name = 'OrgDeliveryLogRetention1763801100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE orgs ADD COLUMN delivery_log_retention_days int
                     CONSTRAINT orgs_delivery_log_retention_days_check CHECK (delivery_log_retention_days BETWEEN 1 AND 3650)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE orgs DROP COLUMN delivery_log_retention_days`);
  }
}
