import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The attempt that succeeds is recorded on its delivery's row (docs/delivery-log.md, "Attempts"):
 * its duration and response body in two new columns, its time, number and status code in the
 * columns the delivery already had (last_attempt_at, attempt_count, last_status_code). Every other
 * attempt keeps its webhook_delivery_attempts row, and the reads put the two together, so the log
 * shows every attempt as before. A success was one row more in another table, with two index
 * entries, in the statement every delivery runs (docs/PERFORMANCE.md, change 32).
 *
 * Adding a column without a default is a change of the catalog only. The length check is added
 * NOT VALID: it holds for every row written from now on without reading the rows already there
 * (all null), so the migration holds its locks for milliseconds whatever the log's size. A success
 * recorded by a process of the previous build during a rolling deploy still writes its attempt
 * row, which the reads take as it is. The view webhook_delivery_attempt_log shows every attempt in
 * one relation, as the attempts table did.
 */
/**
 * The successes recorded on deliveries' rows, as attempt rows (delivery_id, delivery_created_at,
 * attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body), keyed as
 * attemptKeyOf in delivery-ids.ts keys them: '-infinity' for a delivery from before partitioning.
 */
const SUCCESSES = `SELECT id, coalesce(delivery_log_created_at(id), '-infinity'), attempt_count, last_attempt_at, success_duration_ms, last_status_code,
                          NULL::text, success_response_body
                     FROM webhook_deliveries WHERE success_duration_ms IS NOT NULL`;

export class SuccessOnDelivery1763801130000 implements MigrationInterface {
  name = 'SuccessOnDelivery1763801130000';

  async up(q: QueryRunner): Promise<void> {
    // Behind a long read of the log this would hold every claim back: give up instead (the migration fails, and the next start tries again).
    await q.query(`SET LOCAL lock_timeout = '10s'`);
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN success_duration_ms int, ADD COLUMN success_response_body text`);
    await q.query(
      `ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_success_duration_ms_check CHECK (success_duration_ms >= 0) NOT VALID,
                                      ADD CONSTRAINT webhook_deliveries_success_response_body_check CHECK (octet_length(success_response_body) <= 2048) NOT VALID`,
    );
    // Every attempt in one relation, for an operator's SQL (and the tests'). The service's reads
    // name the two tables themselves, so that each reads only its delivery's partitions.
    await q.query(`
      CREATE VIEW webhook_delivery_attempt_log AS
        SELECT delivery_id, delivery_created_at, attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body
          FROM webhook_delivery_attempts
        UNION ALL
        ${SUCCESSES}`);
  }

  async down(q: QueryRunner): Promise<void> {
    // The successes recorded on their rows become attempt rows again before the columns go.
    await q.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, delivery_created_at, attempt_number, attempted_at, duration_ms, status_code, error_kind, response_body)
       ${SUCCESSES}
       ON CONFLICT (delivery_id, attempt_number, delivery_created_at) DO NOTHING`,
    );
    await q.query(`DROP VIEW webhook_delivery_attempt_log`);
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN success_duration_ms, DROP COLUMN success_response_body`);
  }
}
