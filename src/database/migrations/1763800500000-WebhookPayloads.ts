import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A delivery's `data` moves to webhook_payloads, one row per distinct content (keyed by the
 * SHA-256 of its JSON text), which deliveries reference: an event fanned out to K endpoints with
 * the same variant (mode, history) stores its data once, and a resend shares its original's row.
 * Existing rows are moved here; down copies the data back into each delivery.
 */
export class WebhookPayloads1763800500000 implements MigrationInterface {
  name = 'WebhookPayloads1763800500000';

  async up(q: QueryRunner): Promise<void> {
    // json, not jsonb, as before: the text is stored and sent as built, key order and all.
    await q.query(`
      CREATE TABLE webhook_payloads (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        digest bytea NOT NULL CHECK (octet_length(digest) = 32),
        data json NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX webhook_payloads_digest_key ON webhook_payloads (digest)`);
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN payload_id bigint`);
    await q.query(`
      WITH content AS (
             SELECT id, created_at, data, sha256(convert_to(data::text, 'UTF8')) AS digest FROM webhook_deliveries),
           payload AS (
             INSERT INTO webhook_payloads (digest, data, created_at)
             SELECT DISTINCT ON (digest) digest, data, created_at FROM content ORDER BY digest, created_at
             RETURNING id, digest)
      UPDATE webhook_deliveries d SET payload_id = payload.id
        FROM content JOIN payload ON payload.digest = content.digest
       WHERE d.id = content.id`);
    await q.query(`ALTER TABLE webhook_deliveries ALTER COLUMN payload_id SET NOT NULL`);
    await q.query(`ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_payload_fkey
                     FOREIGN KEY (payload_id) REFERENCES webhook_payloads (id)`);
    // The foreign key's check when a payload is deleted, and the retention's "still referenced?".
    await q.query(`CREATE INDEX webhook_deliveries_payload_idx ON webhook_deliveries (payload_id)`);
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN data`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN data json`);
    await q.query(`UPDATE webhook_deliveries d SET data = p.data FROM webhook_payloads p WHERE p.id = d.payload_id`);
    await q.query(`ALTER TABLE webhook_deliveries ALTER COLUMN data SET NOT NULL`);
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN payload_id`);
    await q.query(`DROP TABLE webhook_payloads`);
  }
}
