import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexUnlessBuilt } from './prebuilt-index';

/**
 * Send policies' max_per_recipient_per_day counts a credential's sends of the last day to one
 * recipient: with this index a range of those sends, where messages_sent_by_key_idx made it read
 * every send of the credential's day (thousands for a busy key, on every send). Built first
 * CONCURRENTLY by an operator on a large table (prebuilt-index.ts).
 */
export class SendsByKeyRecipient1763801050000 implements MigrationInterface {
  name = 'SendsByKeyRecipient1763801050000';

  async up(q: QueryRunner): Promise<void> {
    await createIndexUnlessBuilt(q, 'messages_sent_by_key_to_idx', 'ON messages (sent_by_key_id, to_value, created_at) WHERE sent_by_key_id IS NOT NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX messages_sent_by_key_to_idx`);
  }
}
