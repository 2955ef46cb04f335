import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexUnlessBuilt } from './prebuilt-index';

/**
 * Issue 45: scheduled sends. An outbound message given `sendAt` is SCHEDULED until that time, then
 * QUEUED as any other (or FAILED when the send gate refuses it then); cancelled before, it is
 * CANCELED. `send_at` is its time; the due sweep finds SCHEDULED messages whose time has come with
 * the partial index (small: only messages waiting for their time are in it).
 */
export class ScheduledSends1763800810000 implements MigrationInterface {
  name = 'ScheduledSends1763800810000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE messages ADD COLUMN send_at timestamptz(3)`);
    await q.query(`ALTER TABLE messages DROP CONSTRAINT messages_status_check`);
    await q.query(
      `ALTER TABLE messages ADD CONSTRAINT messages_status_check
         CHECK (status IN ('RECEIVED', 'QUEUED', 'SENT', 'DELIVERED', 'FAILED', 'SCHEDULED', 'CANCELED'))`,
    );
    await createIndexUnlessBuilt(q, 'messages_scheduled_due_idx', `ON messages (send_at) WHERE status = 'SCHEDULED'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX messages_scheduled_due_idx`);
    await q.query(`UPDATE messages SET status = 'FAILED', error = 'scheduled send dropped by a migration revert' WHERE status IN ('SCHEDULED', 'CANCELED')`);
    await q.query(`ALTER TABLE messages DROP CONSTRAINT messages_status_check`);
    await q.query(`ALTER TABLE messages ADD CONSTRAINT messages_status_check CHECK (status IN ('RECEIVED', 'QUEUED', 'SENT', 'DELIVERED', 'FAILED'))`);
    await q.query(`ALTER TABLE messages DROP COLUMN send_at`);
  }
}
