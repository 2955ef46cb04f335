import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `idempotencyKey` on send_sms, send_email and reply_to_thread (docs/mcp.md, "Sending once"):
 * the org's key, the tool and a digest of the arguments it was first used with, and the message
 * that call queued. A key is live for 24 hours; the outbound sweep deletes older ones.
 */
export class SendIdempotencyKeys1763800650000 implements MigrationInterface {
  name = 'SendIdempotencyKeys1763800650000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE send_idempotency_keys (
        org_id uuid NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        key text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
        tool text NOT NULL,
        request_digest text NOT NULL,
        message_id uuid REFERENCES messages(id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT send_idempotency_keys_pkey PRIMARY KEY (org_id, key)
      )`);
    await q.query(`CREATE INDEX send_idempotency_keys_created_idx ON send_idempotency_keys (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE send_idempotency_keys`);
  }
}
