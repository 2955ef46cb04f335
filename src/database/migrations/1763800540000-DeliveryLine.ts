import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The line of the event a delivery carries (null for org-wide events such as contact.merged), so a
 * key limited to some lines sees only deliveries of those lines, even on an endpoint whose scope
 * was wider when older deliveries were made (src/webhooks/endpoint-visibility.ts). Rows made before
 * take the line of their outbox event while it is still kept; the rest stay null, which no
 * line-limited key sees (fails closed). No foreign key: lines are never hard-deleted while
 * referenced, and the insert on the delivery hot path stays one index lighter.
 */
export class DeliveryLine1763800540000 implements MigrationInterface {
  name = 'DeliveryLine1763800540000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN line_id uuid`);
    await q.query(`UPDATE webhook_deliveries d SET line_id = o.line_id FROM outbox_events o WHERE o.id = d.source_event_id AND o.line_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN line_id`);
  }
}
