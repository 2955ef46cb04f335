import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexUnlessBuilt } from './prebuilt-index';

/**
 * Issue 45: who an outbound message was sent for. `sent_by_user_id` is the person (the key's or
 * grant's person, or the person acting on a page) and `sent_by_key_id` the API key or OAuth grant
 * whose call sent it (no foreign key: it names a row of either table, and the log of what a
 * credential sent outlives the credential). Send policies count a credential's recent sends with
 * the partial index (built first
 * CONCURRENTLY by an operator on a large table: prebuilt-index.ts). Older messages have neither.
 */
export class SendOrigins1763800760000 implements MigrationInterface {
  name = 'SendOrigins1763800760000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE messages ADD COLUMN sent_by_user_id uuid, ADD COLUMN sent_by_key_id uuid`);
    await createIndexUnlessBuilt(q, 'messages_sent_by_key_idx', 'ON messages (sent_by_key_id, created_at) WHERE sent_by_key_id IS NOT NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX messages_sent_by_key_idx`);
    await q.query(`ALTER TABLE messages DROP COLUMN sent_by_key_id, DROP COLUMN sent_by_user_id`);
  }
}
