import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A per-org quota on stored attachment bytes. org_attachment_storage keeps each org's usage (a
 * counter updated in the transaction that stores bytes, backfilled here) and an operator's
 * override of the default quota. An attachment over the quota keeps its row without content,
 * content_status 'quota_exceeded'. Deleting attachments gives their bytes back (a trigger, so
 * that cascades count too).
 */
export class AttachmentQuota1763800530000 implements MigrationInterface {
  name = 'AttachmentQuota1763800530000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE org_attachment_storage (
        org_id uuid PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
        bytes_used bigint NOT NULL DEFAULT 0 CHECK (bytes_used >= 0),
        quota_bytes bigint CHECK (quota_bytes >= 0),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`INSERT INTO org_attachment_storage (org_id, bytes_used)
                   SELECT org_id, sum(size_bytes) FROM attachments GROUP BY org_id`);
    await q.query(`ALTER TABLE attachments ALTER COLUMN content DROP NOT NULL`);
    await q.query(`ALTER TABLE attachments ADD COLUMN content_status text NOT NULL DEFAULT 'stored'
                     CHECK (content_status IN ('stored', 'quota_exceeded'))`);
    await q.query(`ALTER TABLE attachments ADD CONSTRAINT attachments_content_check CHECK ((content IS NULL) = (content_status <> 'stored'))`);
    await q.query(`
      CREATE FUNCTION attachments_release_storage() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE org_attachment_storage s SET bytes_used = greatest(s.bytes_used - d.bytes, 0), updated_at = now()
          FROM (SELECT org_id, sum(size_bytes) AS bytes FROM released WHERE content_status = 'stored' GROUP BY org_id) d
         WHERE s.org_id = d.org_id;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER attachments_release_storage AFTER DELETE ON attachments
                     REFERENCING OLD TABLE AS released FOR EACH STATEMENT EXECUTE FUNCTION attachments_release_storage()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS attachments_release_storage ON attachments`);
    await q.query(`DROP FUNCTION IF EXISTS attachments_release_storage()`);
    // The bytes of an attachment over the quota were never stored: it comes back as an empty file.
    await q.query(`UPDATE attachments SET content = '\\x'::bytea WHERE content IS NULL`);
    await q.query(`ALTER TABLE attachments DROP CONSTRAINT IF EXISTS attachments_content_check`);
    await q.query(`ALTER TABLE attachments DROP COLUMN IF EXISTS content_status`);
    await q.query(`ALTER TABLE attachments ALTER COLUMN content SET NOT NULL`);
    await q.query(`DROP TABLE IF EXISTS org_attachment_storage`);
  }
}
