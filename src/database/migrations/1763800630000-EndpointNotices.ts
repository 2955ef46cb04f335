import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What an endpoint's owner has been told (docs/webhooks.md, "Telling the owner"): the email that
 * the service disabled the endpoint is due until it is sent; the one-hour failing email is sent
 * once per failing run (cleared when the run ends or the endpoint is enabled again).
 */
export class EndpointNotices1763800630000 implements MigrationInterface {
  name = 'EndpointNotices1763800630000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_endpoints ADD COLUMN disabled_notice_due boolean NOT NULL DEFAULT false`);
    await q.query(`ALTER TABLE webhook_endpoints ADD COLUMN failing_notice_sent_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_endpoints DROP COLUMN failing_notice_sent_at`);
    await q.query(`ALTER TABLE webhook_endpoints DROP COLUMN disabled_notice_due`);
  }
}
