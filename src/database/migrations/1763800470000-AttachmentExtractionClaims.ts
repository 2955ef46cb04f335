import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Attachment extraction is attempted once (spec, event rule 2): a job claims a pending attachment
 * by moving it to `extracting` (with the time of the claim) before it parses anything. A claim
 * that never finishes (the process died) is closed as `failed` by the extraction sweep; it is
 * never parsed again.
 */
export class AttachmentExtractionClaims1763800470000 implements MigrationInterface {
  name = 'AttachmentExtractionClaims1763800470000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE attachments DROP CONSTRAINT attachments_extraction_status_check`);
    await q.query(`ALTER TABLE attachments ADD CONSTRAINT attachments_extraction_status_check
                     CHECK (extraction_status IN ('pending', 'extracting', 'extracted', 'failed'))`);
    await q.query(`ALTER TABLE attachments ADD COLUMN extraction_started_at timestamptz(3)`);
    // The sweeps look for work whose job was lost (pending) or whose worker died (extracting).
    await q.query(`CREATE INDEX attachments_extraction_open_idx ON attachments (created_at)
                     WHERE extraction_status IN ('pending', 'extracting')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS attachments_extraction_open_idx`);
    await q.query(`UPDATE attachments SET extraction_status = 'failed', extraction_error = 'extraction was interrupted'
                    WHERE extraction_status = 'extracting'`);
    await q.query(`ALTER TABLE attachments DROP COLUMN IF EXISTS extraction_started_at`);
    await q.query(`ALTER TABLE attachments DROP CONSTRAINT attachments_extraction_status_check`);
    await q.query(`ALTER TABLE attachments ADD CONSTRAINT attachments_extraction_status_check
                     CHECK (extraction_status IN ('pending', 'extracted', 'failed'))`);
  }
}
