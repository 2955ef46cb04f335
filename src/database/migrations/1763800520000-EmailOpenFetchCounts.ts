import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * email_opens stops growing by one row per pixel GET: a counted open keeps one row whose
 * fetch_count and last_fetched_at take the refetches of the same view, and fetches that are not
 * opens are counted on one row per (message, reason). Existing uncounted rows are folded into one
 * row per message with reason 'unrecorded' (their reason was not stored); down keeps the rows
 * as they are then, without the counts.
 */
export class EmailOpenFetchCounts1763800520000 implements MigrationInterface {
  name = 'EmailOpenFetchCounts1763800520000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE email_opens ADD COLUMN fetch_count integer NOT NULL DEFAULT 1 CHECK (fetch_count >= 1)`);
    await q.query(`ALTER TABLE email_opens ADD COLUMN last_fetched_at timestamptz(3)`);
    await q.query(`ALTER TABLE email_opens ADD COLUMN reason text
                     CHECK (reason IN ('not-sent', 'scanner-window', 'ignored-user-agent', 'same-view', 'unrecorded'))`);
    await q.query(`
      WITH folded AS (
             DELETE FROM email_opens WHERE NOT counted
             RETURNING message_id, opened_at, user_agent),
           per_message AS (
             SELECT message_id, min(opened_at) AS first_at, max(opened_at) AS last_at, count(*)::int AS fetches,
                    (array_agg(user_agent ORDER BY opened_at))[1] AS user_agent
               FROM folded GROUP BY message_id)
      INSERT INTO email_opens (message_id, opened_at, last_fetched_at, user_agent, counted, reason, fetch_count)
      SELECT message_id, first_at, last_at, user_agent, false, 'unrecorded', fetches FROM per_message`);
    await q.query(`UPDATE email_opens SET last_fetched_at = opened_at WHERE last_fetched_at IS NULL`);
    await q.query(`ALTER TABLE email_opens ALTER COLUMN last_fetched_at SET NOT NULL`);
    await q.query(`ALTER TABLE email_opens ADD CONSTRAINT email_opens_counted_reason_check CHECK ((reason IS NULL) = counted)`);
    await q.query(`CREATE UNIQUE INDEX email_opens_uncounted_key ON email_opens (message_id, reason) WHERE NOT counted`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS email_opens_uncounted_key`);
    await q.query(`ALTER TABLE email_opens DROP CONSTRAINT IF EXISTS email_opens_counted_reason_check`);
    for (const column of ['reason', 'last_fetched_at', 'fetch_count']) await q.query(`ALTER TABLE email_opens DROP COLUMN IF EXISTS ${column}`);
  }
}
