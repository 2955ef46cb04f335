import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexUnlessBuilt } from './prebuilt-index';

/**
 * An endpoint's delivery log filtered by status (list_webhook_deliveries' `status`, the web log's
 * filter) reads only its page. Asked of webhook_deliveries_endpoint_page_idx, "the failed ones"
 * walks every delivery of the endpoint, nearly all succeeded, to find a page of them (100,000 rows
 * on a busy endpoint with no failure). This index holds the deliveries that did not succeed, a
 * small share, by status and newest first; `succeeded` itself is most of the log and is read from
 * the endpoint's index. Partial: a delivery adds one entry when it is written (pending), none
 * when it succeeds, and vacuum removes the stale one, so the index stays the size of what did
 * not succeed. Prebuilt CONCURRENTLY on a large database: see createIndexUnlessBuilt.
 */
export class DeliveryLogByStatus1763800710000 implements MigrationInterface {
  name = 'DeliveryLogByStatus1763800710000';

  async up(q: QueryRunner): Promise<void> {
    await createIndexUnlessBuilt(
      q,
      'webhook_deliveries_endpoint_status_idx',
      `ON webhook_deliveries (endpoint_id, status, created_at DESC, id DESC) WHERE status <> 'succeeded'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS webhook_deliveries_endpoint_status_idx`);
  }
}
